package store_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// An unreachable database is told from a failed query: the API answers the
// first 503 "retry shortly" and the second 500. The whole outage (a
// restarted cluster under load) is TestPostgresRestartUnderLoad in
// backend/cmd/lectern.
func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Nothing listens on a port just closed: the pool cannot connect.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	down, err := pgxpool.New(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", port))
	require.NoError(t, err)
	defer down.Close()
	_, err = store.New(down).CountReaders(ctx)
	require.Error(t, err)
	require.True(t, store.IsUnavailable(err), "%v", err)

	// A live database answering a query with an error is not an outage.
	up := pgtest.New(t)
	_, err = up.Exec(ctx, "SELECT * FROM no_such_table")
	require.Error(t, err)
	require.False(t, store.IsUnavailable(err), "%v", err)

	// A connection the server ends (an administrator's shutdown) is.
	conn, err := up.Acquire(ctx)
	require.NoError(t, err)
	var pid int
	require.NoError(t, conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	_, err = up.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	require.True(t, store.IsUnavailable(err), "%v", err)
	// pgx closed that connection: what comes after on it, a transaction's
	// BEGIN above all, says only "conn closed", and that is an outage too.
	_, err = conn.Begin(ctx)
	require.Error(t, err)
	require.True(t, store.IsUnavailable(fmt.Errorf("begin: %w", err)), "%v", err)
	_, err = conn.Exec(ctx, "COMMIT")
	require.Error(t, err)
	require.True(t, store.IsUnavailable(fmt.Errorf("commit: %w", err)), "%v", err)
	conn.Release()

	require.False(t, store.IsUnavailable(nil))
	require.False(t, store.IsUnavailable(context.Canceled))
}

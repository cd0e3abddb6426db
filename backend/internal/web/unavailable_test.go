package web_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// With the database unreachable the web library says so with a 503 and
// Retry-After, as the API does, instead of a 500 that reads like a bug.
func TestDatabaseOutageIsA503Page(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	down, err := pgxpool.New(context.Background(), fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=3", port))
	require.NoError(t, err)
	t.Cleanup(down.Close)

	cfg := config.Config{PublicBaseURL: "http://lectern.lan", DataDir: t.TempDir()}
	srv, err := server.New(context.Background(), server.Deps{Config: cfg, Store: store.New(down), Version: "test"})
	require.NoError(t, err)

	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "5", rec.Header().Get("Retry-After"))
	body, _ := io.ReadAll(rec.Body)
	require.True(t, strings.Contains(string(body), "database cannot be reached"), "%s", body)
}

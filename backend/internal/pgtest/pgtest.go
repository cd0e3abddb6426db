// Package pgtest gives each test a fresh, migrated database on a real Postgres.
//
// The server comes from TEST_DATABASE_URL when it is set; otherwise the
// harness starts a throwaway cluster with initdb/pg_ctl (from PATH or
// /usr/lib/postgresql/*/bin) for the test binary and removes it at the end.
// When neither is possible the tests fail with a message saying how to get
// Postgres: a store test that silently skips proves nothing.
//
// Packages that use it call Main from their TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

var (
	mu       sync.Mutex
	serverDB string // URL of a maintenance database on the server
	template string // name of the migrated template database
	setupErr error
	cluster  *store.LocalCluster
)

// Main runs the tests and then drops the template and stops a cluster the
// harness started.
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if template != "" && serverDB != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if conn, err := pgx.Connect(ctx, serverDB); err == nil {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{template}.Sanitize()+" WITH (FORCE)")
			_ = conn.Close(ctx)
		}
		cancel()
	}
	if cluster != nil {
		if err := cluster.Remove(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: removing throwaway cluster:", err)
		}
	}
	return code
}

// New returns a pool on a fresh database with every migration applied. The
// database is dropped when the test ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := NewURL(t)
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewURL creates a fresh migrated database and returns its URL, for tests
// that start processes of their own. The database is dropped at the end.
func NewURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	mu.Lock()
	defer mu.Unlock()
	if err := setup(ctx); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name := "lectern_test_" + randomSuffix()
	// CREATE DATABASE ... TEMPLATE copies files: far faster than migrating
	// each database, and serialised because Postgres refuses to copy a
	// template that another CREATE is using.
	if err := exec(ctx, serverDB, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := exec(ctx, serverDB, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return withDatabase(serverDB, name)
}

// NewEmptyURL creates a fresh database with no migrations applied, for tests
// of migrating itself.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mu.Lock()
	defer mu.Unlock()
	if err := setup(ctx); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name := "lectern_empty_" + randomSuffix()
	if err := exec(ctx, serverDB, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = exec(ctx, serverDB, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return withDatabase(serverDB, name)
}

// setup finds or starts the server and builds the template once per binary.
func setup(ctx context.Context) error {
	if setupErr != nil {
		return setupErr
	}
	if template != "" {
		return nil
	}
	setupErr = func() error {
		serverDB = os.Getenv("TEST_DATABASE_URL")
		if serverDB == "" {
			dir, err := os.MkdirTemp("", "lectern-pgtest-")
			if err != nil {
				return fmt.Errorf("temp dir for a throwaway cluster: %w", err)
			}
			c, err := store.StartLocalCluster(ctx, dir, true)
			if err != nil {
				_ = os.RemoveAll(dir)
				return fmt.Errorf("TEST_DATABASE_URL is unset and no throwaway cluster could be started: %w\n"+
					"Install Postgres (Debian: apt-get install postgresql) so initdb and pg_ctl are on PATH "+
					"or under /usr/lib/postgresql/*/bin, or set TEST_DATABASE_URL to a server where this user may create databases", err)
			}
			cluster = c
			serverDB = c.URL("postgres")
		}
		name := "lectern_tmpl_" + randomSuffix()
		if err := exec(ctx, serverDB, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("create template database on %s: %w", redact(serverDB), err)
		}
		if err := store.MigrateUp(ctx, withDatabase(serverDB, name)); err != nil {
			return fmt.Errorf("migrate template database: %w", err)
		}
		template = name
		return nil
	}()
	return setupErr
}

func exec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// withDatabase swaps the database name in a postgres URL.
func withDatabase(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	u.Path = "/" + name
	return u.String()
}

func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "the test server"
	}
	return u.Redacted()
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(hex.EncodeToString(b[:]))
}

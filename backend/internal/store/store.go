// Package store is Lectern's one store of state: every query against Postgres
// lives here, a file per entity. Bytes (Covers, archived pages) live on a
// filesystem volume; rows hold their addresses
// (docs/adr/0001-postgres-is-the-one-store.md).
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lectern-reader/lectern/backend/internal/errs"
)

// ErrNotFound is returned when a row asked for does not exist.
var ErrNotFound = errs.New(errs.NotFound, "not found")

// ErrConflict is returned when a write collides with a unique row.
var ErrConflict = errs.New(errs.Conflict, "already exists")

// DB is what queries run on: the pool, or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store runs Lectern's queries.
type Store struct {
	Pool *pgxpool.Pool
	db   DB
	tx   pgx.Tx
}

// New wraps a pool.
func New(pool *pgxpool.Pool) *Store { return &Store{Pool: pool, db: pool} }

// Open connects to databaseURL.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if cfg.MaxConns < 10 {
		cfg.MaxConns = 10
	}
	cfg.MaxConnIdleTime = 5 * time.Minute
	// Lectern's queries are short and many; Postgres' JIT compiles any
	// statement its planner costs above jit_above_cost, which at 100,000
	// Series is a plan's candidate read: seconds of compiling for a query
	// that runs in well under one. A DATABASE_URL that sets jit keeps its own.
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	return New(pool), nil
}

// Close closes the pool.
func (s *Store) Close() { s.Pool.Close() }

// Tx is the transaction a Store from InTx runs in, for callers that must
// write other rows (River jobs) atomically with the store's.
func (s *Store) Tx() pgx.Tx { return s.tx }

// InTx runs fn with a Store bound to one transaction, committed when fn
// returns nil.
func (s *Store) InTx(ctx context.Context, fn func(tx *Store) error) error {
	if s.tx != nil {
		return fn(s)
	}
	tx, err := s.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit
	if err := fn(&Store{Pool: s.Pool, db: tx, tx: tx}); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.Pool.Ping(ctx) }

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

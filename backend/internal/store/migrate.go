package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers pgx5://
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"

	"github.com/lectern-reader/lectern/migrations"
)

// migrateLockKey is the advisory lock replicas take around migrating, so
// several starting against one empty database apply each file once.
const migrateLockKey = 0x6c65637465726e // "lectern"

// MigrateUp applies every migration not yet applied.
func MigrateUp(ctx context.Context, databaseURL string) error {
	return withMigrator(ctx, databaseURL, func(m *migrate.Migrate) error {
		if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return fmt.Errorf("migrate up: %w", err)
		}
		return nil
	})
}

// MigrateDown reverts the last steps migrations; steps <= 0 reverts all.
func MigrateDown(ctx context.Context, databaseURL string, steps int) error {
	return withMigrator(ctx, databaseURL, func(m *migrate.Migrate) error {
		var err error
		if steps <= 0 {
			err = m.Down()
		} else {
			err = m.Steps(-steps)
		}
		if err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return fmt.Errorf("migrate down: %w", err)
		}
		return nil
	})
}

// MigrateTo migrates up (never down) to version exactly: a restore loads a
// backup's rows into the schema they were taken from, then migrates on.
func MigrateTo(ctx context.Context, databaseURL string, version uint) error {
	return withMigrator(ctx, databaseURL, func(m *migrate.Migrate) error {
		if err := m.Migrate(version); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return fmt.Errorf("migrate to %d: %w", version, err)
		}
		return nil
	})
}

// MigrationVersion reports the applied version and whether the last
// migration failed half-way (dirty).
func MigrationVersion(ctx context.Context, databaseURL string) (version uint, dirty bool, err error) {
	err = withMigrator(ctx, databaseURL, func(m *migrate.Migrate) error {
		version, dirty, err = m.Version()
		if errors.Is(err, migrate.ErrNilVersion) {
			version, dirty, err = 0, false, nil
		}
		return err
	})
	return version, dirty, err
}

// LatestMigration is the highest version embedded in this binary.
func LatestMigration() (uint, error) {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return 0, err
	}
	defer src.Close()
	v, err := src.First()
	if err != nil {
		return 0, err
	}
	for {
		next, err := src.Next(v)
		if err != nil {
			return v, nil
		}
		v = next
	}
}

func withMigrator(ctx context.Context, databaseURL string, fn func(*migrate.Migrate) error) error {
	lock, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("connect for migrations: %w", err)
	}
	defer lock.Close(context.Background())
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	defer lock.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", migrateLockKey) //nolint:errcheck // the lock also ends with the connection

	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return fmt.Errorf("read embedded migrations: %w", err)
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		return fmt.Errorf("database URL: %w", err)
	}
	u.Scheme = "pgx5"
	m, err := migrate.NewWithSourceInstance("iofs", src, u.String())
	if err != nil {
		return fmt.Errorf("open migrator: %w", err)
	}
	defer m.Close()
	return fn(m)
}

// AppliedMigration reads the applied version from golang-migrate's table
// over the pool, cheap enough for a readiness probe. A dirty version counts
// as not applied.
func (s *Store) AppliedMigration(ctx context.Context) (uint, error) {
	var v int64
	var dirty bool
	err := s.db.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&v, &dirty)
	if err != nil {
		return 0, fmt.Errorf("read migration version: %w", err)
	}
	if dirty {
		return 0, fmt.Errorf("migration %d is dirty", v)
	}
	return uint(v), nil
}

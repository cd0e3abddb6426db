package backup

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// ErrNotEmpty: restore goes only into a database whose public schema holds
// nothing, so it never mixes a backup's rows with others.
var ErrNotEmpty = errors.New("the database is not empty")

// Restore loads the backup in dir into the empty database at databaseURL and
// puts the objects it holds back into stores (a volume's backup restores
// onto a bucket as well). It migrates the database to the backup's schema
// version, loads every table in foreign-key order and sets the sequences in
// one transaction, then migrates up to this binary's newest version.
func Restore(ctx context.Context, databaseURL string, stores *blob.Stores, dir string) (*Report, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	newest, err := store.LatestMigration()
	if err != nil {
		return nil, err
	}
	if m.Schema > newest {
		return nil, fmt.Errorf("restore: the backup is at schema version %d, newer than this Lectern's %d: restore with the release that took it", m.Schema, newest)
	}
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("restore: connect: %w", err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public'`).Scan(&n); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if n > 0 {
		return nil, fmt.Errorf("restore: %w: its public schema holds %d relations; restore into a new database (createdb), or drop its schema first", ErrNotEmpty, n)
	}
	if err := store.MigrateTo(ctx, databaseURL, m.Schema); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	rep := &Report{Manifest: m}
	if err := load(ctx, pool, m, dir, rep); err != nil {
		return nil, err
	}
	if err := store.MigrateUp(ctx, databaseURL); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	for _, o := range m.Objects {
		k, ok := kindNamed(o.Kind)
		if !ok {
			return nil, fmt.Errorf("restore: the backup holds objects of an unknown kind %q", o.Kind)
		}
		to := k.Store(stores)
		for _, a := range o.Addresses {
			if slices.Contains(o.Missing, a) {
				rep.Missing++
				continue
			}
			if o.Dir != "" {
				err := copyObject(ctx, &blob.FS{Dir: filepath.Join(dir, o.Dir)}, to, a)
				if err != nil {
					return nil, fmt.Errorf("restore: %s %s: %w", o.Kind, a, err)
				}
				rep.Copied++
				continue
			}
			has, err := to.Has(ctx, a, -1)
			if err != nil {
				return nil, fmt.Errorf("restore: check %s %s: %w", o.Kind, a, err)
			}
			if !has {
				rep.Missing++
				continue
			}
			rep.Checked++
		}
	}
	return rep, nil
}

func kindNamed(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// load empties what the migrations wrote (River's own rows, seeded
// settings), then copies every table in, parents before children, and sets
// the sequences, all in one transaction.
func load(ctx context.Context, pool *pgxpool.Pool, m *Manifest, dir string, rep *Report) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // after Commit, a no-op
	// Every table of the backup must be one the migrations made: a table
	// made by hand beside them has no definition to restore, and is named
	// rather than silently left out.
	var unknown []string
	for _, t := range m.Tables {
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{"public", t.Name}.Sanitize()).Scan(&ok); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if !ok {
			unknown = append(unknown, t.Name)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("restore: the backup holds tables no migration up to version %d makes (%s): they were made outside Lectern's migrations; create them in the database after migrating, then load their files by hand", m.Schema, strings.Join(unknown, ", "))
	}
	names := make([]string, 0, len(m.Tables))
	byName := map[string]Table{}
	for _, t := range m.Tables {
		names = append(names, pgx.Identifier{t.Name}.Sanitize())
		byName[t.Name] = t
	}
	if len(names) > 0 {
		if _, err := tx.Exec(ctx, "TRUNCATE "+strings.Join(names, ", ")); err != nil {
			return fmt.Errorf("restore: empty the migrated tables: %w", err)
		}
	}
	// The rows are loaded as they were, not as new writes: the tables' own
	// triggers (a Reader's list row made on insert, version bumps) would
	// add or change rows the backup already holds. DISABLE TRIGGER USER
	// needs only ownership, and keeps the foreign-key checks.
	for _, n := range names {
		if _, err := tx.Exec(ctx, "ALTER TABLE "+n+" DISABLE TRIGGER USER"); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	order, err := fkOrder(ctx, tx, m.Tables)
	if err != nil {
		return err
	}
	for _, name := range order {
		t := byName[name]
		n, err := importTable(ctx, tx, t, filepath.Join(dir, filepath.FromSlash(t.File)))
		if err != nil {
			return err
		}
		if n != t.Rows {
			return fmt.Errorf("restore: %s: %d rows loaded, the manifest says %d", t.Name, n, t.Rows)
		}
		rep.Rows += n
	}
	for _, n := range names {
		if _, err := tx.Exec(ctx, "ALTER TABLE "+n+" ENABLE TRIGGER USER"); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	for _, s := range m.Sequences {
		if _, err := tx.Exec(ctx, `SELECT setval($1::regclass, $2, $3)`, pgx.Identifier{s.Name}.Sanitize(), s.Value, s.IsCalled); err != nil {
			return fmt.Errorf("restore: sequence %s: %w", s.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

func importTable(ctx context.Context, tx pgx.Tx, t Table, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("restore: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("restore: %s: %w", path, err)
	}
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, zr, "COPY "+pgx.Identifier{t.Name}.Sanitize()+" ("+columnList(t.Columns)+") FROM STDIN")
	if err != nil {
		return 0, fmt.Errorf("restore: load %s: %w", t.Name, err)
	}
	return tag.RowsAffected(), nil
}

// fkOrder sorts the tables so every table comes after the tables its foreign
// keys reference (a table referencing itself is loaded in one COPY, whose
// checks run at its end). The catalog, not a list, says what references
// what, so tables added later sort themselves.
func fkOrder(ctx context.Context, tx pgx.Tx, tables []Table) ([]string, error) {
	rows, err := tx.Query(ctx, `
		SELECT c.relname, p.relname
		FROM pg_constraint k
		JOIN pg_class c ON c.oid = k.conrelid
		JOIN pg_class p ON p.oid = k.confrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE k.contype = 'f' AND n.nspname = 'public' AND c.oid <> p.oid`)
	if err != nil {
		return nil, fmt.Errorf("restore: read foreign keys: %w", err)
	}
	deps := map[string][]string{}
	for rows.Next() {
		var child, parent string
		if err := rows.Scan(&child, &parent); err != nil {
			rows.Close()
			return nil, err
		}
		deps[child] = append(deps[child], parent)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	in := map[string]bool{}
	for _, t := range tables {
		in[t.Name] = true
	}
	var out []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string) error
	visit = func(name string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("restore: the foreign keys of %s form a cycle", name)
		case 2:
			return nil
		}
		state[name] = 1
		for _, p := range deps[name] {
			if in[p] {
				if err := visit(p); err != nil {
					return err
				}
			}
		}
		state[name] = 2
		out = append(out, name)
		return nil
	}
	for _, t := range tables {
		if err := visit(t.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

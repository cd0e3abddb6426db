// Package backup takes and restores a consistent backup of a deployment:
// every table of the database (read from the catalog, so tables added by
// later migrations are included without a list to keep), exported with COPY
// inside one read-only snapshot, plus the stored objects the rows name, and
// a manifest written last. Not pg_dump: docs/adr/0031-backup-without-pg-dump.md.
//
// A backup directory:
//
//	manifest.json            written last: its presence means the backup is whole
//	tables/<table>.copy.gz   COPY text format, gzipped, one file per table
//	objects/covers/ab/cd/…   a volume's Covers (a bucket's are listed, not copied)
//	objects/pages/ab/cd/…    a volume's archived pages
package backup

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
)

// Format is the manifest's format version; restore refuses others.
const Format = 1

// ManifestName is the file whose presence makes a backup whole.
const ManifestName = "manifest.json"

// Manifest describes one backup.
type Manifest struct {
	Format  int       `json:"format"`
	Created time.Time `json:"created"`
	// Schema is the migration version the rows were taken at.
	Schema    uint       `json:"schema_version"`
	Tables    []Table    `json:"tables"`
	Sequences []Sequence `json:"sequences"`
	Objects   []Objects  `json:"objects"`
}

// Table is one exported table.
type Table struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Rows    int64    `json:"rows"`
	File    string   `json:"file"`
}

// Sequence is one sequence's state.
type Sequence struct {
	Name     string `json:"name"`
	Value    int64  `json:"value"`
	IsCalled bool   `json:"is_called"`
}

// Objects are the stored objects of one kind the rows name.
type Objects struct {
	Kind string `json:"kind"`
	// Store is where they were (a file:// or s3:// URL).
	Store string `json:"store"`
	// Dir is where the backup holds their bytes ("" when they were in a
	// bucket: listed and checked, not copied).
	Dir       string   `json:"dir,omitempty"`
	Addresses []string `json:"addresses"`
	// Missing are the addresses a row named with no object in the store
	// when the backup was taken (as `lectern verify` would say).
	Missing []string `json:"missing,omitempty"`
}

// Report is what a create or restore did, for the command's output.
type Report struct {
	Manifest *Manifest
	Rows     int64
	Copied   int // objects copied into (create) or out of (restore) the backup
	Checked  int // objects checked in a bucket
	Missing  int
}

// Create writes a backup of the database and the stores into dir, which must
// not exist or be empty. A failure leaves no manifest, so the directory is
// never taken for a whole backup.
func Create(ctx context.Context, pool *pgxpool.Pool, stores *blob.Stores, dir string) (*Report, error) {
	if err := emptyDir(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "tables"), 0o755); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("backup: connect: %w", err)
	}
	defer conn.Release()
	// One snapshot for every table: the rows agree with each other as they
	// did at one instant, while the server keeps writing.
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("backup: begin snapshot: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // read-only

	m := &Manifest{Format: Format, Created: time.Now().UTC()}
	var dirty bool
	if err := tx.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&m.Schema, &dirty); err != nil {
		return nil, fmt.Errorf("backup: read the schema version: %w", err)
	}
	if dirty {
		return nil, fmt.Errorf("backup: migration %d is dirty; run lectern migrate first", m.Schema)
	}
	tables, err := listTables(ctx, tx)
	if err != nil {
		return nil, err
	}
	rep := &Report{Manifest: m}
	for _, t := range tables {
		t.File = "tables/" + t.Name + ".copy.gz"
		n, err := exportTable(ctx, tx, t, filepath.Join(dir, t.File))
		if err != nil {
			return nil, err
		}
		t.Rows = n
		rep.Rows += n
		m.Tables = append(m.Tables, t)
	}
	if m.Sequences, err = readSequences(ctx, tx); err != nil {
		return nil, err
	}
	for _, k := range Kinds {
		ok, err := tablesExist(ctx, tx, k.Tables)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		addrs, err := QueryAddresses(ctx, tx, k.Query)
		if err != nil {
			return nil, fmt.Errorf("backup: read %s addresses: %w", k.Name, err)
		}
		st := k.Store(stores)
		o := Objects{Kind: k.Name, Store: st.URL(), Addresses: addrs}
		if _, onVolume := st.(*blob.FS); onVolume {
			// A volume is copied: it is as mortal as the machine.
			o.Dir = "objects/" + kindDir(k.Name)
			dst := &blob.FS{Dir: filepath.Join(dir, o.Dir)}
			if err := os.MkdirAll(filepath.Dir(dst.Dir), 0o755); err != nil {
				return nil, fmt.Errorf("backup: %w", err)
			}
			for _, a := range addrs {
				err := copyObject(ctx, st, dst, a)
				if errors.Is(err, blob.ErrNotFound) || errors.Is(err, blob.ErrBadAddress) {
					o.Missing = append(o.Missing, a)
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("backup: copy %s %s: %w", k.Name, a, err)
				}
				rep.Copied++
			}
		} else {
			// A bucket keeps its own copies (versioning, replication are
			// the Owner's); the backup lists and checks what it needs.
			for _, a := range addrs {
				has, err := st.Has(ctx, a, -1)
				if err != nil && !errors.Is(err, blob.ErrBadAddress) {
					return nil, fmt.Errorf("backup: check %s %s: %w", k.Name, a, err)
				}
				if !has {
					o.Missing = append(o.Missing, a)
					continue
				}
				rep.Checked++
			}
		}
		rep.Missing += len(o.Missing)
		m.Objects = append(m.Objects, o)
	}
	if err := writeManifest(dir, m); err != nil {
		return nil, err
	}
	return rep, nil
}

func kindDir(kind string) string {
	if kind == "Cover" {
		return "covers"
	}
	return "pages"
}

// listTables reads every ordinary and partitioned table of the public schema
// from the catalog (golang-migrate's own table aside), with its columns in
// order, generated columns left out (Postgres computes them again).
func listTables(ctx context.Context, q pgx.Tx) ([]Table, error) {
	rows, err := q.Query(ctx, `
		SELECT c.relname, array_agg(a.attname::text ORDER BY a.attnum)
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		  AND c.relname <> 'schema_migrations'
		GROUP BY c.relname
		ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("backup: list tables: %w", err)
	}
	defer rows.Close()
	var out []Table
	for rows.Next() {
		var t Table
		if err := rows.Scan(&t.Name, &t.Columns); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func exportTable(ctx context.Context, tx pgx.Tx, t Table, path string) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tag, err := tx.Conn().PgConn().CopyTo(ctx, zw, "COPY (SELECT "+columnList(t.Columns)+" FROM "+pgx.Identifier{t.Name}.Sanitize()+") TO STDOUT")
	if err != nil {
		return 0, fmt.Errorf("backup: export %s: %w", t.Name, err)
	}
	if err := zw.Close(); err != nil {
		return 0, fmt.Errorf("backup: export %s: %w", t.Name, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("backup: export %s: %w", t.Name, err)
	}
	return tag.RowsAffected(), f.Close()
}

func columnList(cols []string) string {
	s := ""
	for i, c := range cols {
		if i > 0 {
			s += ", "
		}
		s += pgx.Identifier{c}.Sanitize()
	}
	return s
}

func readSequences(ctx context.Context, tx pgx.Tx) ([]Sequence, error) {
	rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'S' ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("backup: list sequences: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]Sequence, 0, len(names))
	for _, n := range names {
		s := Sequence{Name: n}
		if err := tx.QueryRow(ctx, "SELECT last_value, is_called FROM "+pgx.Identifier{n}.Sanitize()).Scan(&s.Value, &s.IsCalled); err != nil {
			return nil, fmt.Errorf("backup: read sequence %s: %w", n, err)
		}
		out = append(out, s)
	}
	return out, nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func tablesExist(ctx context.Context, q querier, tables []string) (bool, error) {
	for _, t := range tables {
		var ok bool
		if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t).Scan(&ok); err != nil {
			return false, fmt.Errorf("look up table %s: %w", t, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// QueryAddresses runs one of Kinds' queries and returns the addresses it
// names, sorted: backup, restore and `lectern verify` read them one way.
func QueryAddresses(ctx context.Context, q querier, query string) ([]string, error) {
	rows, err := q.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	sort.Strings(out)
	return out, rows.Err()
}

// copyObject copies one object between stores; the destination's Put checks
// the bytes are an image and (in a bucket) verifies what it stored, and the
// address it returns must be the one asked for, or the source is corrupt.
func copyObject(ctx context.Context, from, to blob.Store, address string) error {
	if has, err := to.Has(ctx, address, -1); err != nil {
		return err
	} else if has {
		return nil
	}
	o, err := from.Open(ctx, address)
	if err != nil {
		return err
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		return err
	}
	got, err := to.Put(ctx, b, imagetype.Sniff(b))
	if err != nil {
		return err
	}
	if got != address {
		return fmt.Errorf("%s does not hash to its address (%s): %w", from.Where(address), got, blob.ErrNotVerified)
	}
	return nil
}

func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".manifest.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("backup: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ManifestName)); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReadManifest reads a backup's manifest; a directory without one is not a
// (whole) backup.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s holds no %s: not a whole backup", dir, ManifestName)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestName), err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("%s: format %d; this Lectern reads format %d", filepath.Join(dir, ManifestName), m.Format, Format)
	}
	return &m, nil
}

func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("backup: %s is not empty; a backup goes into a new directory", dir)
	}
	return nil
}

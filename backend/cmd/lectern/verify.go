package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lectern-reader/lectern/backend/internal/backup"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/config"
)

// storedKinds are the kinds of stored objects the database names: one list,
// backup's, which its manifest and restore read too.
var storedKinds = backup.Kinds

func init() {
	commands["verify"] = command{summary: "check that every stored address has its file, and list files no row names", run: cmdVerify}
}

const verifyAbout = `Checks the data volume against the database: every content address a row
names (Covers, archived pages) must have its file under COVER_DIR or
ARCHIVE_DIR/pages, or its object in the bucket of BLOB_URL, and every file
there should be named by a row. Run it after a restore, or any time; it only
reads.

  missing   a row names an address whose file is absent: that Cover or page is
            lost (restore the file from the backup of the data volume, or let
            the Owner refetch the Cover)
  corrupt   with --hash, a file whose bytes no longer hash to its name
  orphan    a file no row names: a replaced Cover, a deleted archive, or files
            newer than the database dump after a restore. Harmless; they
            take space only.
  stray     a file that is not a content address (an interrupted write leaves
            .put-* files): harmless

Exit status: 0 when everything matches, 1 when files are missing or corrupt
(or the check could not run), 3 when the only findings are orphans or strays.
Reads DATABASE_URL and BLOB_URL with S3_*, or DATA_DIR (or COVER_DIR and
ARCHIVE_DIR).`

func cmdVerify(ctx context.Context, env *cmdEnv, args []string) int {
	fs := newFlags("verify", env, verifyAbout)
	hash := fs.Bool("hash", false, "also read every named file and check that its bytes hash to its address (slow)")
	if code, done := parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	cfg, err := config.Load(config.Lookup(env.getenv), "verify")
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	if cfg.DatabaseURL == "" {
		fmt.Fprintln(env.stderr, "lectern: DATABASE_URL is required: the Postgres URL of this deployment")
		return 1
	}
	if cfg.BlobURL == "" && (cfg.CoverDir == "" || cfg.ArchiveDir == "") {
		fmt.Fprintln(env.stderr, "lectern: DATA_DIR (or both COVER_DIR and ARCHIVE_DIR) is required, or BLOB_URL: where the stored files are")
		return 1
	}
	stores, err := blob.Open(cfg.Blobs())
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern: connect to Postgres:", err)
		return 1
	}
	defer pool.Close()
	rep, err := verifyStore(ctx, pool, stores, storedKinds, *hash)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern: verify:", err)
		return 1
	}
	rep.print(env.stdout)
	switch {
	case len(rep.missing)+len(rep.corrupt) > 0:
		return 1
	case len(rep.orphans)+len(rep.strays) > 0:
		return 3
	}
	return 0
}

type finding struct{ kind, address, path string }

type kindCount struct {
	name, dir      string
	named, present int
	skipped        bool
}

type verifyReport struct {
	kinds                             []kindCount
	missing, corrupt, orphans, strays []finding
}

// verifyStore compares the addresses the database names with the objects
// stored. Kinds sharing a store are judged together: an object is an orphan
// only when no kind stored there names it.
func verifyStore(ctx context.Context, pool *pgxpool.Pool, stores *blob.Stores, kinds []backup.Kind, hash bool) (*verifyReport, error) {
	rep := &verifyReport{}
	named := map[string]map[string]string{} // store URL -> address -> kind name
	var listed []blob.Store
	for _, k := range kinds {
		st := k.Store(stores)
		kc := kindCount{name: k.Name, dir: where(st)}
		ok, err := tablesExist(ctx, pool, k.Tables)
		if err != nil {
			return nil, err
		}
		if !ok {
			kc.skipped = true
			rep.kinds = append(rep.kinds, kc)
			continue
		}
		if named[st.URL()] == nil {
			named[st.URL()] = map[string]string{}
			listed = append(listed, st)
		}
		addrs, err := backup.QueryAddresses(ctx, pool, k.Query)
		if err != nil {
			return nil, fmt.Errorf("read %s addresses: %w", k.Name, err)
		}
		for _, a := range addrs {
			kc.named++
			if !blob.ValidAddress(a) {
				// Never joined to a path unchecked; a malformed value in a
				// row is as lost as a missing file.
				rep.missing = append(rep.missing, finding{k.Name, a, "(not a content address)"})
				continue
			}
			named[st.URL()][a] = k.Name
			// The one check of a stored object, the archive's sweep's too.
			present, err := st.Has(ctx, a, -1)
			if err != nil {
				return nil, err
			}
			if !present {
				rep.missing = append(rep.missing, finding{k.Name, a, st.Where(a)})
				continue
			}
			kc.present++
			if hash {
				good, err := hashMatches(ctx, st, a)
				if err != nil {
					return nil, err
				}
				if !good {
					rep.corrupt = append(rep.corrupt, finding{k.Name, a, st.Where(a)})
				}
			}
		}
		rep.kinds = append(rep.kinds, kc)
	}
	// One kind's directory may lie inside another's (COVER_DIR and
	// ARCHIVE_DIR the same): each is walked on its own, never as part of
	// the other.
	var roots []string
	for _, k := range kinds {
		if fsys, ok := k.Store(stores).(*blob.FS); ok {
			roots = append(roots, filepath.Clean(fsys.Dir))
		}
	}
	for _, st := range listed {
		var err error
		if fsys, ok := st.(*blob.FS); ok {
			err = walkStore(filepath.Clean(fsys.Dir), roots, named[st.URL()], rep)
		} else {
			err = st.List(ctx, func(a string, _ int64) error {
				if _, ok := named[st.URL()][a]; !ok {
					rep.orphans = append(rep.orphans, finding{"", a, st.Where(a)})
				}
				return nil
			})
		}
		if err != nil {
			return nil, err
		}
	}
	for _, list := range [][]finding{rep.missing, rep.corrupt, rep.orphans, rep.strays} {
		sort.Slice(list, func(i, j int) bool { return list[i].path < list[j].path })
	}
	return rep, nil
}

// where names a store in the report: a volume's directory, a bucket's URL.
func where(st blob.Store) string {
	if fsys, ok := st.(*blob.FS); ok {
		return filepath.Clean(fsys.Dir)
	}
	return st.URL()
}

// walkStore lists the files under dir that no row names, leaving out the
// other kinds' directories (roots) below it.
func walkStore(dir string, roots []string, named map[string]string, rep *verifyReport) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == dir {
				return fs.SkipAll // no file stored yet
			}
			return err
		}
		if d.IsDir() {
			if path != dir && slices.Contains(roots, path) {
				return fs.SkipDir
			}
			return nil
		}
		name := d.Name()
		if at, err := (&blob.FS{Dir: dir}).Path(name); err != nil || at != path || !d.Type().IsRegular() {
			rep.strays = append(rep.strays, finding{"", "", path})
			return nil
		}
		if _, ok := named[name]; !ok {
			rep.orphans = append(rep.orphans, finding{"", name, path})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("walk %s: %w", dir, err)
	}
	return nil
}

func hashMatches(ctx context.Context, st blob.Store, address string) (bool, error) {
	o, err := st.Open(ctx, address)
	if err != nil {
		return false, fmt.Errorf("hash %s: %w", st.Where(address), err)
	}
	defer o.Close()
	h := sha256.New()
	if _, err := io.Copy(h, o); err != nil {
		return false, fmt.Errorf("hash %s: %w", st.Where(address), err)
	}
	return hex.EncodeToString(h.Sum(nil)) == address, nil
}

func tablesExist(ctx context.Context, pool *pgxpool.Pool, tables []string) (bool, error) {
	for _, t := range tables {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t).Scan(&ok); err != nil {
			return false, fmt.Errorf("look up table %s: %w", t, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

func (r *verifyReport) print(w io.Writer) {
	for _, f := range r.missing {
		fmt.Fprintf(w, "missing %s %s: named by the database, no file at %s\n", f.kind, f.address, f.path)
	}
	for _, f := range r.corrupt {
		fmt.Fprintf(w, "corrupt %s %s: %s does not hash to its name\n", f.kind, f.address, f.path)
	}
	for _, f := range r.orphans {
		fmt.Fprintf(w, "orphan %s: no row names it\n", f.path)
	}
	for _, f := range r.strays {
		fmt.Fprintf(w, "stray %s: not a content-addressed file\n", f.path)
	}
	for _, k := range r.kinds {
		if k.skipped {
			fmt.Fprintf(w, "%ss: not checked, this database has no table for them\n", k.name)
			continue
		}
		fmt.Fprintf(w, "%ss in %s: %d named, %d present\n", k.name, k.dir, k.named, k.present)
	}
	problems := []string{}
	for _, p := range []struct {
		n    int
		what string
	}{{len(r.missing), "missing"}, {len(r.corrupt), "corrupt"}, {len(r.orphans), "orphans"}, {len(r.strays), "strays"}} {
		if p.n > 0 {
			problems = append(problems, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if len(problems) == 0 {
		fmt.Fprintln(w, "verify: every named file is present and every file is named")
		return
	}
	fmt.Fprintln(w, "verify:", strings.Join(problems, ", "))
}

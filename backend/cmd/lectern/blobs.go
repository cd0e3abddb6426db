package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lectern-reader/lectern/backend/internal/backup"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/config"
)

func init() {
	commands["blobs"] = command{summary: "copy every stored Cover and page to another store (blobs copy --to URL)", run: cmdBlobs}
	commands["backup"] = command{summary: "take a backup into a directory, or restore one into an empty database (backup create|restore DIR)", run: cmdBackup}
}

const blobsAbout = `lectern blobs copy --to URL [--from URL] [--jobs N]

Copies every stored object (Covers and archived pages) from the store in use
(BLOB_URL, or DATA_DIR's volume; or --from) to the store at URL (file:///dir
or s3://bucket/prefix, reached with the same S3_* variables), checking each
object's hash before and the stored copy after. It may run while the server
runs; run it again to copy what arrived meanwhile (objects already there are
skipped), then set BLOB_URL to URL and restart. With DATABASE_URL set, it
then checks that every address a row names is at the destination.`

func cmdBlobs(ctx context.Context, env *cmdEnv, args []string) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprintln(env.stdout, blobsAbout)
		return 0
	}
	if len(args) == 0 || args[0] != "copy" {
		fmt.Fprintln(env.stderr, blobsAbout)
		return 2
	}
	fs := newFlags("blobs copy", env, blobsAbout)
	to := fs.String("to", "", "the destination store: file:///dir or s3://bucket/prefix")
	from := fs.String("from", "", "the source store (default: BLOB_URL, or DATA_DIR's volume)")
	jobs := fs.Int("jobs", 8, "objects copied at once")
	if code, done := parse(fs, args[1:]); done {
		return code
	}
	if *to == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	cfg, err := config.Load(config.Lookup(env.getenv), "blobs")
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	src := cfg.Blobs()
	if *from != "" {
		src.URL = *from
	}
	dst := cfg.Blobs()
	dst.URL, dst.CoverCacheBytes = *to, 0
	srcStores, err := blob.Open(src)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	dstStores, err := blob.Open(dst)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern: --to:", err)
		return 1
	}
	if err := dstStores.Check(ctx); err != nil {
		fmt.Fprintln(env.stderr, "lectern: --to:", err)
		return 1
	}
	for _, pair := range []struct {
		what     string
		from, to blob.Store
	}{{"Covers", srcStores.Covers, dstStores.Covers}, {"archived pages", srcStores.Pages, dstStores.Pages}} {
		start := time.Now()
		rep, err := blob.Copy(ctx, pair.from, pair.to, *jobs)
		if err != nil {
			fmt.Fprintf(env.stderr, "lectern: copy %s: %v\n", pair.what, err)
			return 1
		}
		took := time.Since(start)
		fmt.Fprintf(env.stdout, "%s: %d in %s, %d copied (%.1f MB), %d already there, %s (%.0f objects/s)\n",
			pair.what, rep.Listed, pair.from.URL(), rep.Copied, float64(rep.Bytes)/1e6, rep.Present, took.Round(time.Millisecond),
			float64(rep.Copied)/took.Seconds())
	}
	if cfg.DatabaseURL == "" {
		fmt.Fprintln(env.stdout, "blobs copy: done (set DATABASE_URL to also check every address the database names)")
		return 0
	}
	pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern: connect to Postgres:", err)
		return 1
	}
	defer pool.Close()
	rep, err := verifyStore(ctx, pool, dstStores, backup.Kinds, false)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern: check the destination:", err)
		return 1
	}
	for _, f := range rep.missing {
		fmt.Fprintf(env.stdout, "missing %s %s at %s\n", f.kind, f.address, f.path)
	}
	if len(rep.missing) > 0 {
		fmt.Fprintf(env.stdout, "blobs copy: %d addresses the database names are not at %s yet; run it again\n", len(rep.missing), *to)
		return 1
	}
	fmt.Fprintf(env.stdout, "blobs copy: every address the database names is at %s; set BLOB_URL=%s\n", *to, *to)
	return 0
}

const backupAbout = `lectern backup create DIR | lectern backup restore DIR

create writes a consistent backup into DIR (new or empty): every table of the
database exported in one snapshot, the Covers and pages of a volume copied (a
bucket's listed and checked, not copied), and manifest.json last. It may run
while the server runs.

restore loads DIR into the empty database of DATABASE_URL (one whose public
schema holds nothing: createdb a new one), migrating it to the backup's
schema, then up to this release's; the objects DIR holds are put into the
store of BLOB_URL (or DATA_DIR's volume). Then start the server; run
'lectern verify' to see every named object present.`

func cmdBackup(ctx context.Context, env *cmdEnv, args []string) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprintln(env.stdout, backupAbout)
		return 0
	}
	if len(args) == 0 || (args[0] != "create" && args[0] != "restore") {
		fmt.Fprintln(env.stderr, backupAbout)
		return 2
	}
	fs := newFlags("backup "+args[0], env, backupAbout)
	if code, done := parse(fs, args[1:]); done {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	dir := fs.Arg(0)
	cfg, err := config.Load(config.Lookup(env.getenv), "backup")
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	if cfg.DatabaseURL == "" {
		fmt.Fprintln(env.stderr, "lectern: DATABASE_URL is required: the Postgres URL of this deployment")
		return 1
	}
	stores, err := blob.Open(cfg.Blobs())
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern:", err)
		return 1
	}
	start := time.Now()
	var rep *backup.Report
	if args[0] == "create" {
		pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
		if err != nil {
			fmt.Fprintln(env.stderr, "lectern: connect to Postgres:", err)
			return 1
		}
		defer pool.Close()
		rep, err = backup.Create(ctx, pool, stores, dir)
		if err != nil {
			fmt.Fprintln(env.stderr, "lectern:", err)
			return 1
		}
	} else {
		rep, err = backup.Restore(ctx, cfg.DatabaseURL, stores, dir)
		if err != nil {
			fmt.Fprintln(env.stderr, "lectern:", err)
			if errors.Is(err, backup.ErrNotEmpty) {
				return 3
			}
			return 1
		}
	}
	fmt.Fprintf(env.stdout, "backup %s %s: schema %d, %d tables, %d rows, %d objects copied, %d checked in a bucket, %d missing, in %s\n",
		args[0], dir, rep.Manifest.Schema, len(rep.Manifest.Tables), rep.Rows, rep.Copied, rep.Checked, rep.Missing, time.Since(start).Round(time.Millisecond))
	if rep.Missing > 0 {
		fmt.Fprintln(env.stdout, "some objects the rows name were missing when the backup was taken: 'lectern verify' lists them")
		return 3
	}
	return 0
}

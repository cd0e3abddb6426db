package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lectern-reader/lectern/backend/internal/backup"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// benchBackup times `lectern backup create` and `restore` on the mixed
// scenario's data set (its Readers, Bookmarks, Series and Covers on a
// volume): the backup of a running deployment, then its restore into an
// empty database and a new volume.
func benchBackup(ctx context.Context, e *env) error {
	db, err := e.database(ctx)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "lectern-bench-backup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	dataDir := filepath.Join(work, "data")
	st, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Printf("seeding %d Readers × %d Bookmarks over %d Series, %d Covers...\n", mixedReaders, mixedPerReader, mixedSeries, mixedCovers)
	covers, err := seedCovers(filepath.Join(dataDir, "covers"))
	if err != nil {
		return err
	}
	if _, err := seedMixed(ctx, st, covers); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		return err
	}
	defer pool.Close()
	stores, err := blob.Open(blob.Settings{CoverDir: filepath.Join(dataDir, "covers"), ArchiveDir: filepath.Join(dataDir, "archive")})
	if err != nil {
		return err
	}
	dir := filepath.Join(work, "backup")
	start := time.Now()
	rep, err := backup.Create(ctx, pool, stores, dir)
	if err != nil {
		return err
	}
	created := time.Since(start)
	tables, err := sizeOf(filepath.Join(dir, "tables"))
	if err != nil {
		return err
	}
	fmt.Printf("backup create: %s — %d tables, %d rows (%.1f MB gzipped), %d Covers copied\n",
		created.Round(time.Millisecond), len(rep.Manifest.Tables), rep.Rows, float64(tables)/1e6, rep.Copied)

	empty, err := e.emptyDatabase(ctx)
	if err != nil {
		return err
	}
	restoreDir := filepath.Join(work, "restored")
	target, err := blob.Open(blob.Settings{CoverDir: filepath.Join(restoreDir, "covers"), ArchiveDir: filepath.Join(restoreDir, "archive")})
	if err != nil {
		return err
	}
	start = time.Now()
	rrep, err := backup.Restore(ctx, empty, target, dir)
	if err != nil {
		return err
	}
	fmt.Printf("backup restore: %s — into an empty database (migrations included), %d rows, %d Covers put back\n",
		time.Since(start).Round(time.Millisecond), rrep.Rows, rrep.Copied)
	return nil
}

func sizeOf(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}

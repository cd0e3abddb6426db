package backup_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/backup"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func TestDailyBackupTakesOneADayAndKeepsTheNewest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stores, err := blob.Open(blob.Settings{CoverDir: t.TempDir(), ArchiveDir: t.TempDir()})
	require.NoError(t, err)
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	d := &backup.Daily{Pool: pgtest.New(t), Stores: stores, Dir: dir, Keep: 2, Now: func() time.Time { return now }}

	// Someone else's file, and a backup cut short yesterday.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), nil, 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "lectern-20261130T030000Z", "tables"), 0o755))

	taken, err := d.RunIfDue(ctx)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "lectern-20261201T030000Z"), taken)
	require.Equal(t, []string{"README", "lectern-20261201T030000Z"}, names(t, dir), "the unfinished one is cleared")

	now = now.Add(5 * time.Hour)
	taken, err = d.RunIfDue(ctx)
	require.NoError(t, err)
	require.Empty(t, taken, "not due within the day")

	for i := range 3 {
		now = now.Add(24 * time.Hour)
		taken, err = d.RunIfDue(ctx)
		require.NoError(t, err, i)
		require.NotEmpty(t, taken)
	}
	require.Equal(t, []string{"README", "lectern-20261203T080000Z", "lectern-20261204T080000Z"}, names(t, dir), "the newest two")
	_, err = backup.ReadManifest(filepath.Join(dir, "lectern-20261204T080000Z"))
	require.NoError(t, err)
}

// With BACKUP_URL set, the server's leader takes the backup at start.
func TestServerTakesTheDailyBackup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := apptest.New(t, apptest.Options{Workers: 1, Config: func(c *config.Config) {
		c.BackupURL, c.BackupKeep = "file://"+dir, 3
	}})
	apptest.Eventually(t, "a daily backup", func() bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if _, err := backup.ReadManifest(filepath.Join(dir, e.Name())); err == nil {
				return true
			}
		}
		return false
	})
	_ = a
}

package backup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
)

// Daily takes the scheduled backup (BACKUP_URL, BACKUP_KEEP): into Dir, a
// dated directory per backup, one a day, the newest Keep kept.
type Daily struct {
	Pool   *pgxpool.Pool
	Stores *blob.Stores
	Dir    string
	Keep   int
	Logger *slog.Logger
	Now    func() time.Time
}

// dailyPrefix names the directories Daily owns; nothing else in Dir is
// touched.
const dailyPrefix = "lectern-"

const dailyLayout = "20060102T150405Z"

// RunIfDue takes a backup when the newest whole one is a day old or there
// is none, then keeps the newest Keep and clears unfinished ones (a backup
// cut short leaves no manifest). It returns the new backup's directory, or
// "" when none was due.
func (d *Daily) RunIfDue(ctx context.Context) (string, error) {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return "", fmt.Errorf("daily backup: %w", err)
	}
	whole, unfinished, err := d.list()
	if err != nil {
		return "", err
	}
	// One job at a time runs this (River's uniqueness), so a directory
	// without a manifest is a backup that failed or was cut short.
	for _, u := range unfinished {
		if err := os.RemoveAll(filepath.Join(d.Dir, u)); err != nil {
			return "", fmt.Errorf("daily backup: clear %s: %w", u, err)
		}
	}
	t := now().UTC()
	taken := ""
	if len(whole) == 0 || t.Sub(whole[len(whole)-1].at) >= 24*time.Hour-time.Minute {
		name := dailyPrefix + t.Format(dailyLayout)
		path := filepath.Join(d.Dir, name)
		start := time.Now()
		rep, err := Create(ctx, d.Pool, d.Stores, path)
		if err != nil {
			_ = os.RemoveAll(path)
			return "", fmt.Errorf("daily backup: %w", err)
		}
		d.log().InfoContext(ctx, "daily backup taken", "dir", path, "rows", rep.Rows, "objects_copied", rep.Copied,
			"objects_checked", rep.Checked, "objects_missing", rep.Missing, "took", time.Since(start).Round(time.Millisecond))
		whole = append(whole, dated{name, t})
		taken = path
	}
	keep := max(d.Keep, 1)
	for len(whole) > keep {
		if err := os.RemoveAll(filepath.Join(d.Dir, whole[0].name)); err != nil {
			return taken, fmt.Errorf("daily backup: remove %s: %w", whole[0].name, err)
		}
		whole = whole[1:]
	}
	return taken, nil
}

type dated struct {
	name string
	at   time.Time
}

// list returns the whole backups, oldest first, and the unfinished ones.
func (d *Daily) list() ([]dated, []string, error) {
	entries, err := os.ReadDir(d.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("daily backup: %w", err)
	}
	var whole []dated
	var unfinished []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), dailyPrefix) {
			continue
		}
		at, err := time.Parse(dailyLayout, strings.TrimPrefix(e.Name(), dailyPrefix))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d.Dir, e.Name(), ManifestName)); errors.Is(err, os.ErrNotExist) {
			unfinished = append(unfinished, e.Name())
			continue
		}
		whole = append(whole, dated{e.Name(), at})
	}
	sort.Slice(whole, func(i, j int) bool { return whole[i].at.Before(whole[j].at) })
	return whole, unfinished, nil
}

func (d *Daily) log() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.Default()
}

// Args is the backup_daily job.
type Args struct{}

// Kind is River's job kind.
func (Args) Kind() string { return riverjob.BackupDaily }

// InsertOpts: one at a time.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: riverjob.InFlight}}
}

// Periodic looks hourly (and at start) whether the daily backup is due, on
// the elected leader only, so replicas take one backup between them.
func Periodic() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
		func() (river.JobArgs, *river.InsertOpts) { return Args{}, nil },
		&river.PeriodicJobOpts{ID: riverjob.BackupDaily, RunOnStart: true})
}

// Worker runs Daily.
type Worker struct {
	river.WorkerDefaults[Args]
	D *Daily
}

// Work takes the backup if due.
func (w *Worker) Work(ctx context.Context, _ *river.Job[Args]) error {
	_, err := w.D.RunIfDue(ctx)
	return err
}

// Timeout: a backup of a large archive on a volume copies every page.
func (w *Worker) Timeout(*river.Job[Args]) time.Duration { return 6 * time.Hour }

// DirOf reads BACKUP_URL: only file:///dir (a local or mounted directory).
func DirOf(backupURL string) (string, error) {
	rest, ok := strings.CutPrefix(backupURL, "file://")
	if !ok || !filepath.IsAbs(rest) {
		return "", fmt.Errorf("BACKUP_URL %q: want file:///dir (an absolute directory, local or mounted)", backupURL)
	}
	return filepath.Clean(rest), nil
}

package archive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The sweep: keep archiving keeps its promise even when a follow was lost,
// a chapter ran out of attempts, or its files vanished from the volume. It
// is a River periodic job, so it runs on the elected leader only; it looks
// hourly (and at every start) whether it is due, by when it last ran to its
// end, so a day missed while the deployment was down is swept at the next
// start and a restart does not sweep again.

// DefaultSweepEvery is how often the sweep runs (ARCHIVE_SWEEP).
const DefaultSweepEvery = 24 * time.Hour

// sweepRun names the sweep in periodic_runs.
const sweepRun = "archive_sweep"

// Sweep limits: what one sweep re-queues of each kind, so a volume lost
// whole is queued again over a few days rather than in one transaction.
const sweepBatch = 2000

// RetryExhaustedAfter is how long a chapter that ran out of attempts rests
// before the sweep queues it again.
const RetryExhaustedAfter = 24 * time.Hour

// followGrace is how long the sweep leaves a new Latest Chapter to its own
// follow job before calling it missed.
const followGrace = time.Hour

// strandedGrace is how long a queued chapter may be without a job in
// flight before the sweep calls it stranded and gives it one. A chapter's
// row and its job commit together, so this only leaves room for a job
// inserted after its row (by hand, or by a tool).
const strandedGrace = 10 * time.Minute

// SweepArgs is the archive_sweep job.
type SweepArgs struct{}

// Kind is River's job kind.
func (SweepArgs) Kind() string { return riverjob.ArchiveSweep }

// InsertOpts: one sweep at a time.
func (SweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, Priority: PriorityRequest, UniqueOpts: river.UniqueOpts{ByState: riverjob.InFlight}}
}

// PeriodicSweep is the sweep's River periodic job: it looks at start and
// hourly (or every, when shorter) whether the sweep is due.
func PeriodicSweep(every time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(min(every, time.Hour)),
		func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil },
		&river.PeriodicJobOpts{ID: sweepRun, RunOnStart: true})
}

type sweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	s *Service
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	_, _, err := w.s.SweepIfDue(ctx)
	return err
}

func (w *sweepWorker) Timeout(*river.Job[SweepArgs]) time.Duration { return 30 * time.Minute }

// SweepResult counts what one sweep queued again.
type SweepResult struct {
	// Missed: Latest Chapters found after a Reader began to keep archiving
	// that no follow queued. Exhausted: chapters that ran out of attempts a
	// day or more ago. Lost: archived chapters with a page file gone.
	// Stranded: queued chapters, of any Series, that no job in flight
	// archives (River discarded it, say, after a replica died).
	Missed, Exhausted, Lost, Stranded int
}

func (s *Service) sweepEvery() time.Duration {
	if s.SweepEvery > 0 {
		return s.SweepEvery
	}
	return DefaultSweepEvery
}

// SweepIfDue sweeps when the last sweep that ran to its end began at least
// SweepEvery ago (or none did), and records this one when it ends.
func (s *Service) SweepIfDue(ctx context.Context) (SweepResult, bool, error) {
	start := s.now()
	last, err := s.Store.LastRun(ctx, sweepRun)
	if err != nil {
		return SweepResult{}, false, err
	}
	// A minute's slack: the hourly check must not miss a daily sweep by
	// the seconds the last one took to start.
	if last != nil && start.Sub(*last) < s.sweepEvery()-time.Minute {
		return SweepResult{}, false, nil
	}
	res, err := s.Sweep(ctx)
	if err != nil {
		return res, true, err
	}
	return res, true, s.Store.SetLastRun(ctx, sweepRun, start)
}

// Sweep queues again the chapters of followed Series that should be
// archived and are not: Latest Chapters no follow queued, chapters whose
// attempts ran out a day or more ago, and archived chapters a page file of
// which is gone from the volume (the check `lectern verify` makes,
// blob.Store.Has). It runs Follow for the first two, so the Readers' caps
// hold; a lost chapter stays charged as it was. It also gives a job again to
// any queued chapter left without one (StrandedArchiveChapters), so a
// chapter queued is archived or fails, never waits forever.
func (s *Service) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	now := s.now()
	log := s.log().With("job", riverjob.ArchiveSweep)

	missed, err := s.Store.MissedFollowedChapters(ctx, now.Add(-followGrace), sweepBatch)
	if err != nil {
		return res, err
	}
	byKey := map[string][]latest.Chapter{}
	var keys []string
	for _, m := range missed {
		if _, ok := byKey[m.SeriesKey]; !ok {
			keys = append(keys, m.SeriesKey)
		}
		byKey[m.SeriesKey] = append(byKey[m.SeriesKey], latest.Chapter{Label: m.Label, Number: m.Number, URL: m.URL, Locked: m.Locked})
	}
	for _, key := range keys {
		if err := s.Follow(ctx, key, byKey[key]); err != nil {
			return res, fmt.Errorf("sweep: %w", err)
		}
		res.Missed += len(byKey[key])
	}

	exhausted, err := s.Store.ExhaustedArchiveChapters(ctx, now.Add(-RetryExhaustedAfter), sweepBatch)
	if err != nil {
		return res, err
	}
	for _, c := range exhausted {
		ch := latest.Chapter{Label: c.Label, Number: c.Number, URL: c.URL}
		if err := s.Follow(ctx, c.SeriesKey, []latest.Chapter{ch}); err != nil {
			return res, fmt.Errorf("sweep: %w", err)
		}
		res.Exhausted++
	}

	lost, err := s.lostChapters(ctx)
	if err != nil {
		return res, err
	}
	for _, id := range lost {
		err := s.Store.InTx(ctx, func(tx *store.Store) error {
			ch, err := tx.RequeueArchivedChapter(ctx, id, "queued again: a stored page file is missing")
			if err != nil {
				return err
			}
			return s.queueChapter(ctx, tx, ch)
		})
		if errors.Is(err, store.ErrArchiveNotQueued) || errors.Is(err, store.ErrNotFound) {
			continue // changed since it was read
		}
		if err != nil {
			return res, fmt.Errorf("sweep: %w", err)
		}
		res.Lost++
	}

	before := now.Add(-strandedGrace)
	stranded, err := s.Store.StrandedArchiveChapters(ctx, before, sweepBatch)
	if err != nil {
		return res, err
	}
	for _, c := range stranded {
		err := s.Store.InTx(ctx, func(tx *store.Store) error {
			ch, err := tx.RequeueStrandedChapter(ctx, c.ID, before, "queued again: its job ended without archiving it")
			if err != nil {
				return err
			}
			return s.queueChapter(ctx, tx, ch)
		})
		if errors.Is(err, store.ErrArchiveNotQueued) || errors.Is(err, store.ErrNotFound) {
			continue // changed since it was read
		}
		if err != nil {
			return res, fmt.Errorf("sweep: %w", err)
		}
		log.WarnContext(ctx, "stranded chapter queued again", "series", c.SeriesKey, "chapter", c.URL, "queued_at", c.QueuedAt)
		res.Stranded++
	}
	log.InfoContext(ctx, "archive swept", "missed", res.Missed, "exhausted", res.Exhausted, "lost", res.Lost, "stranded", res.Stranded)
	return res, nil
}

// lostChapters are the archived chapters of followed Series a page file of
// which is missing or has another size, at most sweepBatch.
func (s *Service) lostChapters(ctx context.Context) ([]int64, error) {
	var lost []int64
	seen := map[int64]bool{}
	errFull := errors.New("enough")
	err := s.Store.FollowedArchivedPages(ctx, func(p store.StoredPage) error {
		if seen[p.ChapterID] {
			return nil
		}
		ok, err := s.Pages.Has(ctx, p.Address, int64(p.Size))
		switch {
		case err != nil && !errors.Is(err, blob.ErrBadAddress):
			return err
		case err == nil && ok:
			return nil
		}
		// A malformed address is as lost as a missing file.
		seen[p.ChapterID] = true
		lost = append(lost, p.ChapterID)
		if len(lost) >= sweepBatch {
			return errFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, err
	}
	return lost, nil
}

package tracker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// SyncArgs is the tracker_sync job: bring one tracker entry and its
// Bookmark's Progress together. Round is the entry's sync generation the
// job sends: unique until the job starts and claims it, so records made
// while it waits ride along, and a record made while it runs queues the
// next round.
type SyncArgs struct {
	Entry int64 `json:"entry" river:"unique"`
	Round int64 `json:"round" river:"unique"`
}

// Kind is River's job kind.
func (SyncArgs) Kind() string { return riverjob.TrackerSync }

// InsertOpts: one job per entry and round in flight. Retries are the
// job's own (it queues the next round at the back-off or Retry-After), so
// River's are only for the database failing under it.
func (SyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, Priority: 3, UniqueOpts: riverjob.UniqueInFlight()}
}

// SyncWorker runs tracker_sync jobs.
type SyncWorker struct {
	river.WorkerDefaults[SyncArgs]
	S *Service
}

// Timeout implements river.Worker: a pace wait and two requests.
func (w *SyncWorker) Timeout(*river.Job[SyncArgs]) time.Duration { return 2 * time.Minute }

// Work implements river.Worker.
func (w *SyncWorker) Work(ctx context.Context, job *river.Job[SyncArgs]) error {
	return w.S.Sync(ctx, job.Args)
}

// Plan is what a sync decides from the Bookmark and the tracker's entry:
// the rule lives here and nowhere else.
type Plan struct {
	// Raise is the tracker's count when it is beyond Lectern's Progress:
	// the Bookmark's Progress rises to it. 0 means no change.
	Raise int
	// Write is whether the tracker entry is written, with Progress and
	// Status.
	Write    bool
	Progress int
	Status   string
}

// Decide compares a Bookmark's Progress (its chapter number, nil when it
// has none; completed, the Reader's mark) with the tracker's entry (found
// false when it is not on the Reader's list). The tracker gets the whole
// part of the chapter number when that is higher than its count, never
// lower (the fraction stays in Lectern); a higher count on the tracker
// raises Lectern's. The status becomes reading when Progress is written,
// completed only with the Reader's mark, and a completed or rereading entry
// keeps its status.
func Decide(number *float64, completed bool, cur Entry, found bool) Plan {
	mine := -1
	if number != nil && *number >= 0 {
		mine = int(math.Floor(*number))
	}
	var p Plan
	if found && cur.Progress > 0 && (number == nil || float64(cur.Progress) > *number) {
		p.Raise = cur.Progress
	}
	p.Progress = max(mine, cur.Progress, 0)
	switch {
	case !found:
		p.Write = mine >= 1 || completed
	default:
		p.Write = mine > cur.Progress
	}
	p.Status = cur.Status
	switch {
	case completed:
		p.Status = StatusCompleted
		if found && cur.Status != StatusCompleted {
			p.Write = true
		}
	case !p.Write:
	case !found, cur.Status != StatusCompleted && cur.Status != StatusRepeating:
		p.Status = StatusReading
	}
	return p
}

// upToDate reports a sync with nothing to send: the entry was synced at or
// beyond the Progress's whole chapters, with the completed status when the
// Reader marked it. A count raised on the tracker meanwhile is learnt at the
// next sync that sends something, and at every link.
func upToDate(w store.SyncWork) bool {
	e := w.Entry
	if e.SyncedProgress == nil || w.ChapterNumber == nil {
		return false
	}
	if w.Completed && e.SyncedStatus != StatusCompleted {
		return false
	}
	return math.Floor(*w.ChapterNumber) <= float64(*e.SyncedProgress)
}

// Sync runs one sync job: wait for the tracker's pace (snoozing when it is
// far off), claim the round, read the entry on the tracker, and write
// whichever side is behind.
func (s *Service) Sync(ctx context.Context, args SyncArgs) error {
	entry, err := s.Store.TrackerOfEntry(ctx, args.Entry)
	if errors.Is(err, store.ErrNotFound) {
		return nil // unmapped since
	}
	if err != nil {
		return err
	}
	if snooze, err := s.paced(ctx, entry); err != nil || snooze > 0 {
		if err != nil {
			return err
		}
		return river.JobSnooze(snooze)
	}
	work, ok, err := s.Store.ClaimSync(ctx, args.Entry, args.Round)
	if err != nil || !ok {
		return err
	}
	log := s.log().With("series", work.Entry.SeriesKey, "site", siteOf(work.Entry.SeriesKey), "tracker", work.Entry.Tracker,
		"reader", work.Entry.ReaderID)
	if !work.Account.Linked() || s.Box == nil {
		return nil // the backfill of the next link sends it
	}
	c, err := s.Client(work.Entry.Tracker)
	if err != nil {
		return nil
	}
	if upToDate(work) {
		// Nothing this record could change: the tracker already has at
		// least this count and the status. The same chapter recorded again
		// (a reload, another device) costs no request.
		return nil
	}
	err = s.exchange(ctx, log, c, work)
	if err == nil {
		return s.Store.TrackerOutcome(ctx, work.Entry.ReaderID, work.Entry.Tracker, "")
	}
	return s.failed(ctx, log, work, err)
}

func siteOf(key string) string {
	for i := range key {
		if key[i] == ':' {
			return key[:i]
		}
	}
	return ""
}

// paced takes the tracker's next request slot, sleeping when it is near;
// when it is further than MaxPaceWait, or a Retry-After holds the tracker,
// it returns how long to snooze instead.
func (s *Service) paced(ctx context.Context, tracker string) (time.Duration, error) {
	until, err := s.Store.TrackerBlockedUntil(ctx, tracker)
	if err != nil {
		return 0, err
	}
	if until != nil && until.After(s.now()) {
		return until.Sub(s.now()), nil
	}
	every := s.pace(tracker)
	if every <= 0 {
		return 0, nil
	}
	wait, reserved, err := s.Store.ReserveTrackerSlot(ctx, tracker, every, MaxPaceWait)
	if err != nil {
		return 0, err
	}
	if !reserved {
		return wait, nil
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return 0, nil
}

// exchange reads the tracker's entry and writes whichever side is behind.
// A refused token is refreshed once when the tracker can.
func (s *Service) exchange(ctx context.Context, log *slog.Logger, c Client, work store.SyncWork) error {
	e := work.Entry
	tok, err := s.token(work.Account)
	if err != nil {
		return err
	}
	user := User{ID: work.Account.UserID, Name: work.Account.UserName}
	if oc, ok := c.(OAuthClient); ok && tok.Expires != nil && s.now().After(tok.Expires.Add(-time.Minute)) {
		if tok, err = s.refresh(ctx, oc, work.Account, tok); err != nil {
			return err
		}
	}
	cur, found, err := c.Get(ctx, tok, user, e.EntryID)
	if KindOf(err) == Refused {
		if oc, ok := c.(OAuthClient); ok && tok.Refresh != "" {
			if tok, err = s.refresh(ctx, oc, work.Account, tok); err != nil {
				return err
			}
			cur, found, err = c.Get(ctx, tok, user, e.EntryID)
		}
	}
	if err != nil {
		return err
	}
	plan := Decide(work.ChapterNumber, work.Completed, cur, found)
	if plan.Raise > 0 {
		if err := s.raise(ctx, e, plan.Raise); err != nil {
			return err
		}
		log.InfoContext(ctx, "tracker is further: Progress raised", "progress", plan.Raise)
	}
	if plan.Write {
		if snooze, err := s.paced(ctx, e.Tracker); err != nil {
			return err
		} else if snooze > 0 {
			return &Error{Tracker: e.Tracker, Kind: Limited, RetryAfter: snooze, Msg: "waiting for the pace"}
		}
		if err := c.Save(ctx, tok, e.EntryID, found, plan.Progress, plan.Status); err != nil {
			return err
		}
		log.InfoContext(ctx, "tracker updated", "progress", plan.Progress, "status", plan.Status, "was", cur.Progress)
	}
	return s.Store.SyncDone(ctx, e.ID, plan.Progress, plan.Status)
}

// raise writes the tracker's higher count to the Bookmark, and queues the
// Reader's other trackers for it: every tracker and Lectern end at the
// highest Progress any of them had.
func (s *Service) raise(ctx context.Context, e store.TrackerEntry, n int) error {
	return s.Store.InTx(ctx, func(tx *store.Store) error {
		raised, err := tx.RaiseProgress(ctx, e.ReaderID, e.SeriesKey, float64(n), "Chapter "+strconv.Itoa(n))
		if err != nil || !raised {
			return err
		}
		return s.queue(ctx, tx, e.ReaderID, []string{e.SeriesKey}, "", e.Tracker)
	})
}

// refresh trades a refresh token for new tokens and keeps them.
func (s *Service) refresh(ctx context.Context, oc OAuthClient, a store.TrackerAccount, tok Token) (Token, error) {
	fresh, err := oc.Refresh(ctx, tok)
	if errors.Is(err, ErrNoRefresh) {
		return tok, &Error{Tracker: a.Tracker, Kind: Refused, Msg: "the token expired"}
	}
	if err != nil {
		return tok, err
	}
	if fresh.Refresh == "" {
		fresh.Refresh = tok.Refresh
	}
	err = s.Store.SetTrackerTokens(ctx, a.ReaderID, a.Tracker, s.seal(a.ReaderID, a.Tracker, "access", fresh.Access),
		s.seal(a.ReaderID, a.Tracker, "refresh", fresh.Refresh), fresh.Expires)
	return fresh, err
}

// failed decides what a failed sync does next, by the kind of failure: a
// refused token unlinks the account with the reason; a rate limit holds
// the tracker for every Reader until Retry-After and queues the next round
// then; an outage queues it after a back-off; a permanent refusal is
// recorded and not retried. The entry stays waiting in all but the last,
// so nothing recorded is lost. A database failure is River's to retry.
func (s *Service) failed(ctx context.Context, log *slog.Logger, work store.SyncWork, err error) error {
	e := work.Entry
	dbctx := context.WithoutCancel(ctx)
	var te *Error
	if !errors.As(err, &te) {
		if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			// The database or the secret box: River retries the whole job,
			// and the entry waits for it.
			if _, _, rerr := s.Store.SyncFailed(dbctx, e.ID, "internal error", true); rerr != nil {
				return errors.Join(err, rerr)
			}
			return err
		}
		te = &Error{Tracker: e.Tracker, Kind: Transient, Msg: "the sync was interrupted"}
	}
	msg := te.Error()
	switch te.Kind {
	case Refused:
		s.unlinkRefused(dbctx, e.ReaderID, e.Tracker, te)
		_, _, rerr := s.Store.SyncFailed(dbctx, e.ID, msg, true)
		return rerr
	case Permanent:
		log.WarnContext(ctx, "tracker refused the entry", "err", msg)
		if _, _, rerr := s.Store.SyncFailed(dbctx, e.ID, msg, false); rerr != nil {
			return rerr
		}
		return s.Store.TrackerOutcome(dbctx, e.ReaderID, e.Tracker, msg)
	case Limited:
		wait := te.RetryAfter
		if wait <= 0 {
			wait = DefaultRetryAfter
		}
		at := s.now().Add(wait)
		if te.Status == http.StatusTooManyRequests {
			// The tracker's limit is every Reader's: hold them all.
			msg = fmt.Sprintf("%s: retrying after %s", msg, wait.Round(time.Second))
			if err := s.Store.BlockTracker(dbctx, e.Tracker, at); err != nil {
				return err
			}
		}
		log.WarnContext(ctx, "tracker rate limit; retrying later", "retry_at", at)
		return s.requeue(dbctx, e, msg, func(int) time.Time { return at })
	}
	log.WarnContext(ctx, "tracker sync failed; retrying later", "err", msg)
	return s.requeue(dbctx, e, msg, func(failures int) time.Time { return s.now().Add(s.backoff(failures)) })
}

// requeue records a failure, keeps the entry waiting and queues its next
// round at the time when gives for the failures in a row, in one
// transaction: a waiting entry always has its job on the way.
func (s *Service) requeue(ctx context.Context, e store.TrackerEntry, msg string, when func(failures int) time.Time) error {
	return s.Store.InTx(ctx, func(tx *store.Store) error {
		t, failures, err := tx.SyncFailed(ctx, e.ID, msg, true)
		if err != nil {
			return err
		}
		if err := tx.TrackerOutcome(ctx, e.ReaderID, e.Tracker, msg); err != nil {
			return err
		}
		_, err = s.River.InsertTx(ctx, tx.Tx(), SyncArgs{Entry: e.ID, Round: t.Round}, &river.InsertOpts{ScheduledAt: when(failures)})
		if err != nil {
			return fmt.Errorf("queue tracker sync retry: %w", err)
		}
		return nil
	})
}

package poll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// DefaultHintGap is the least time between a Series' last poll and one a
// Reader hint brings forward: a Reader reading ahead of the Site (another
// source, an early-access chapter) must not make us poll on every PUT.
const DefaultHintGap = 5 * time.Minute

// Queue brings polls forward: Reader hints (it implements bookmark.Hinter)
// and the Owner's requests; and it holds the Owner's run-time control of
// the Sites (control.go).
type Queue struct {
	Client   *river.Client[pgx.Tx]
	Store    *store.Store
	Registry *latest.Registry
	// HintGap is the least time since the last poll for a hint to act; 0
	// means DefaultHintGap.
	HintGap time.Duration
	// HintsPlanned: under the adaptive policy a hint is only recorded, and
	// the plan (minutes away) moves the Series' poll forward within its
	// Site's budget, so a crowd of Readers cannot flood a Site.
	HintsPlanned bool
	// Policy is the replica's fetch policy: the Owner's changes through the
	// queue (control.go) apply to it at once. nil in tests without one.
	Policy *fetch.Policy
	Logger *slog.Logger
}

func (q *Queue) log() *slog.Logger {
	if q.Logger != nil {
		return q.Logger
	}
	return slog.Default()
}

// Hint is told that a Reader recorded Progress beyond the Series' stored
// Latest Chapter. The client's chapter never becomes a fact: the hint only
// makes the next poll come sooner. Under the adaptive policy (HintsPlanned)
// it is recorded for the plan; otherwise the next poll comes now (a queued
// poll is made available, or one is queued at PriorityHint), unless the
// Series was polled within HintGap.
func (q *Queue) Hint(ctx context.Context, key string) error {
	last, err := q.Store.RecordHint(ctx, key)
	if err != nil || q.HintsPlanned {
		return err
	}
	gap := q.HintGap
	if gap <= 0 {
		gap = DefaultHintGap
	}
	if last != nil && time.Since(*last) < gap {
		return nil
	}
	return q.pollNow(ctx, key, "reader hint", PriorityHint)
}

// PollNow polls a Series now (the Owner's request). store.ErrNotFound for an
// unknown Series. An Owner's request is an explicit one-off and runs at
// once, outside the Site's budget (the pacing gate still spaces it); the
// Series shows "owner request" as its next poll until it has run.
func (q *Queue) PollNow(ctx context.Context, key string) error {
	if err := q.Store.SetNextPoll(ctx, key, time.Now(), schedule.ReasonOwner); err != nil {
		return err
	}
	return q.pollNow(ctx, key, schedule.ReasonOwner, PriorityOwner)
}

// RefetchCover re-acquires a Series' Cover from a fresh series-page fetch
// now. The Cover changes only when new bytes are stored; a failed refetch
// keeps the old one.
func (q *Queue) RefetchCover(ctx context.Context, key string) error {
	if err := q.Store.RequestCoverRefetch(ctx, key); err != nil {
		return err
	}
	if err := q.Store.SetNextPoll(ctx, key, time.Now(), schedule.ReasonOwner); err != nil {
		return err
	}
	return q.pollNow(ctx, key, "owner cover refetch", PriorityOwner)
}

// ErrNoSuchJob is a background job id that does not exist (any more).
var ErrNoSuchJob = errs.New(errs.NotFound, "no such job")

// ErrJobDuplicate is a retry refused because the same work (the same
// Series' poll, the same chapter) is already queued or running: River keeps
// one such job in flight.
var ErrJobDuplicate = errs.New(errs.Conflict, "the same work is already queued or running")

// RetryJob makes a background job available now (the Owner's request from
// the queue console): a failed or cancelled job runs again, a waiting one
// runs at once; a running job is left alone.
func (q *Queue) RetryJob(ctx context.Context, id int64) error {
	if _, err := q.Client.JobRetry(ctx, id); err != nil {
		if errors.Is(err, rivertype.ErrNotFound) {
			return fmt.Errorf("retry job %d: %w", id, ErrNoSuchJob)
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return fmt.Errorf("retry job %d: %w", id, ErrJobDuplicate)
		}
		return fmt.Errorf("retry job %d: %w", id, err)
	}
	q.log().InfoContext(ctx, "job retried by the Owner", "job", id)
	return nil
}

// CancelJob cancels a background job that has not finished (the Owner's
// request): a queued one never runs, a running one is told to stop.
func (q *Queue) CancelJob(ctx context.Context, id int64) error {
	if _, err := q.Client.JobCancel(ctx, id); err != nil {
		if errors.Is(err, rivertype.ErrNotFound) {
			return fmt.Errorf("cancel job %d: %w", id, ErrNoSuchJob)
		}
		return fmt.Errorf("cancel job %d: %w", id, err)
	}
	q.log().InfoContext(ctx, "job cancelled by the Owner", "job", id)
	return nil
}

// ErrNoSuchSite is a site string the registry does not know.
var ErrNoSuchSite = errs.New(errs.NotFound, "unknown site")

// pollNow queues a poll at priority, or makes the Series' queued poll that
// waits for later available now.
func (q *Queue) pollNow(ctx context.Context, key, reason string, priority int) error {
	res, err := q.Client.Insert(ctx, PollArgs{Key: key, Reason: reason}, &river.InsertOpts{Priority: priority, UniqueOpts: riverjob.UniqueInFlight()})
	if err != nil {
		return fmt.Errorf("queue poll of %s: %w", key, err)
	}
	if riverjob.Waiting(res) {
		if _, err := q.Client.JobRetry(ctx, res.Job.ID); err != nil {
			return fmt.Errorf("bring poll of %s forward: %w", key, err)
		}
	}
	return nil
}

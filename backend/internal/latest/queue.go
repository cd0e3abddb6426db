package latest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

// DefaultHintGap is the least time between a Series' last poll and one a
// Reader hint brings forward: a Reader reading ahead of the Site (another
// source, an early-access chapter) must not make us poll on every PUT.
const DefaultHintGap = 5 * time.Minute

// Queue brings polls forward: Reader hints (it implements library.Hinter)
// and the Owner's requests.
type Queue struct {
	Client *river.Client[pgx.Tx]
	Store  *store.Store
	// HintGap is the least time since the last poll for a hint to act; 0
	// means DefaultHintGap.
	HintGap time.Duration
	Logger  *slog.Logger
}

func (q *Queue) log() *slog.Logger {
	if q.Logger != nil {
		return q.Logger
	}
	return slog.Default()
}

// Hint is told that a Reader recorded Progress beyond the Series' stored
// Latest Chapter. The client's chapter never becomes a fact: the hint only
// makes the next poll come now (a queued poll is made available, or one is
// queued at PriorityHint), unless the Series was polled within HintGap.
func (q *Queue) Hint(ctx context.Context, key string) error {
	last, err := q.Store.RecordHint(ctx, key)
	if err != nil {
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
// unknown Series.
func (q *Queue) PollNow(ctx context.Context, key string) error {
	if _, err := q.Store.SeriesByKey(ctx, key); err != nil {
		return err
	}
	return q.pollNow(ctx, key, "owner request", PriorityOwner)
}

// RefetchCover re-acquires a Series' Cover from a fresh series-page fetch
// now. The Cover changes only when new bytes are stored; a failed refetch
// keeps the old one.
func (q *Queue) RefetchCover(ctx context.Context, key string) error {
	if err := q.Store.RequestCoverRefetch(ctx, key); err != nil {
		return err
	}
	return q.pollNow(ctx, key, "owner cover refetch", PriorityOwner)
}

// ErrNoSuchSite is a site string the registry does not know.
var ErrNoSuchSite = errors.New("unknown site")

// ResumeSite lifts a Site's back-off now: its snoozed polls become available
// and the Series it missed are planned again at once.
func (q *Queue) ResumeSite(ctx context.Context, site string) error {
	if _, ok := Lookup(site); !ok {
		return fmt.Errorf("%w %q", ErrNoSuchSite, site)
	}
	if err := q.Store.ResumeSite(ctx, site); err != nil {
		return err
	}
	ids, err := q.Store.WaitingPolls(ctx, site, 10000)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := q.Client.JobRetry(ctx, id); err != nil {
			return fmt.Errorf("resume %s: make poll %d available: %w", site, id, err)
		}
	}
	if _, err := q.Client.Insert(ctx, PlanArgs{}, nil); err != nil {
		return fmt.Errorf("resume %s: plan polls: %w", site, err)
	}
	q.log().InfoContext(ctx, "Site resumed by the Owner", "site", site, "polls_woken", len(ids))
	return nil
}

// pollNow queues a poll at priority, or makes the Series' queued poll that
// waits for later available now.
func (q *Queue) pollNow(ctx context.Context, key, reason string, priority int) error {
	res, err := q.Client.Insert(ctx, PollArgs{Key: key, Reason: reason}, &river.InsertOpts{Priority: priority, UniqueOpts: uniqueInFlight})
	if err != nil {
		return fmt.Errorf("queue poll of %s: %w", key, err)
	}
	if waiting(res) {
		if _, err := q.Client.JobRetry(ctx, res.Job.ID); err != nil {
			return fmt.Errorf("bring poll of %s forward: %w", key, err)
		}
	}
	return nil
}

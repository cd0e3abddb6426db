// Package poll is the Poll: the poll_series job that fetches a Series page,
// asks the Site registry and stores what changed (Poller, PollWorker); the
// plan_polls job that decides each held Series' next poll (Scheduler under
// the interval policy, Adaptive over package schedule); the Queue that
// brings polls forward (Reader hints, the Owner's requests); the Acquirer
// of a new Series; and the Console, the Owner's view of it all.
// docs/architecture.md follows one poll from PUT to GET.
package poll

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// PollArgs is the poll_series job: fetch one Series page and learn its
// Latest Chapter (and, when it has none, its Cover address).
type PollArgs struct {
	Key string `json:"key" river:"unique"`
	// Reason says why the poll was queued ("acquisition", "schedule",
	// "reader hint", "owner request"); it is shown, never acted on.
	Reason string `json:"reason,omitempty"`
}

// Kind is River's job kind.
func (PollArgs) Kind() string { return riverjob.PollSeries }

// InsertOpts are the defaults of every poll: one in flight per Series, and
// a few quick retries for a network failure (a refusal snoozes instead and
// burns no attempt; the next scheduled poll retries anything else).
func (PollArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: PollMaxAttempts, Priority: PriorityScheduled, UniqueOpts: riverjob.UniqueInFlight()}
}

// PollMaxAttempts bounds the retries of one poll that failed for a reason
// worth retrying soon.
const PollMaxAttempts = 3

// Priorities: River runs lower numbers first. An Acquisition jumps every
// scheduled poll so a new Bookmark shows its facts within seconds; an
// Owner's request is as urgent.
const (
	PriorityAcquisition = 1
	PriorityOwner       = 1
	PriorityHint        = 2
	PriorityScheduled   = 3
)

// Acquirer queues the Acquisition of a new Series on River, in the
// transaction that created it.
type Acquirer struct {
	Client *river.Client[pgx.Tx]
}

// Acquire implements bookmark.Acquirer.
func (a Acquirer) Acquire(ctx context.Context, tx *store.Store, key string) error {
	_, err := a.Client.InsertTx(ctx, tx.Tx(), PollArgs{Key: key, Reason: "acquisition"}, &river.InsertOpts{
		Priority:   PriorityAcquisition,
		UniqueOpts: riverjob.UniqueInFlight(),
	})
	if err != nil {
		return fmt.Errorf("insert acquisition poll: %w", err)
	}
	return nil
}

// AcquireMany queues the Acquisitions of many new Series in one insert,
// for an import: one InsertTx per Series was most of a large import's
// time. Uniqueness holds as for Acquire.
func (a Acquirer) AcquireMany(ctx context.Context, tx *store.Store, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	params := make([]river.InsertManyParams, len(keys))
	for i, k := range keys {
		params[i] = river.InsertManyParams{Args: PollArgs{Key: k, Reason: "acquisition"}, InsertOpts: &river.InsertOpts{
			Priority:   PriorityAcquisition,
			UniqueOpts: riverjob.UniqueInFlight(),
		}}
	}
	if _, err := a.Client.InsertManyTx(ctx, tx.Tx(), params); err != nil {
		return fmt.Errorf("insert %d acquisition polls: %w", len(keys), err)
	}
	return nil
}

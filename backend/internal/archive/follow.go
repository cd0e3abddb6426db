package archive

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Keep archiving: the Poll hands the chapters it found new to QueueFollow
// in the transaction that records them, which queues an archive_follow job;
// the job runs Follow, and a failure retries with River's back-off, apart
// from the poll. The sweep (sweep.go) catches what is missed even so.

// FollowArgs is the archive_follow job: queue the new chapters a poll found
// for the Readers who keep archiving the Series. Unique by Series and
// chapters while queued or running, so the same finding is queued once and
// a later poll's chapters are never dropped as its duplicate.
type FollowArgs struct {
	Series   string           `json:"series" river:"unique"`
	Chapters []latest.Chapter `json:"chapters" river:"unique"`
}

// Kind is River's job kind.
func (FollowArgs) Kind() string { return riverjob.ArchiveFollow }

// FollowMaxAttempts bounds the retries of a follow that fails (a database
// failure): River's back-off spreads them over about a day; the sweep
// catches the newest chapter after that.
const FollowMaxAttempts = 12

// InsertOpts are the defaults of every follow job.
func (FollowArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: FollowMaxAttempts, Priority: PriorityRequest, UniqueOpts: riverjob.UniqueInFlight()}
}

type followWorker struct {
	river.WorkerDefaults[FollowArgs]
	s *Service
}

func (w *followWorker) Work(ctx context.Context, job *river.Job[FollowArgs]) error {
	if err := w.s.Follow(ctx, job.Args.Series, job.Args.Chapters); err != nil {
		return fmt.Errorf("follow %s: %w", job.Args.Series, err)
	}
	return nil
}

func (w *followWorker) Timeout(*river.Job[FollowArgs]) time.Duration { return time.Minute }

// Followed reports whether any Reader keeps archiving the Series: the Poll
// asks before it lists the chapters a Site released.
func (s *Service) Followed(ctx context.Context, key string) (bool, error) {
	ids, err := s.Store.ArchiveFollowers(ctx, key)
	return len(ids) > 0, err
}

// QueueFollow queues the archiving of chapters the Poll found new, inside
// the poll's own transaction tx, so the poll's record and the follow commit
// together. Nothing is queued when nobody keeps archiving the Series.
func (s *Service) QueueFollow(ctx context.Context, tx *store.Store, key string, chapters []latest.Chapter) error {
	if len(chapters) == 0 {
		return nil
	}
	followers, err := tx.ArchiveFollowers(ctx, key)
	if err != nil || len(followers) == 0 {
		return err
	}
	if _, err := s.River.InsertTx(ctx, tx.Tx(), FollowArgs{Series: key, Chapters: chapters}, nil); err != nil {
		return fmt.Errorf("queue follow of %s: %w", key, err)
	}
	site, _, _ := latest.SplitKey(key)
	s.log().InfoContext(ctx, "new chapters handed to keep archiving", "series", key, "site", site, "chapters", len(chapters))
	return nil
}

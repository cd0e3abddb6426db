package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Delivery tuning.
const (
	// ScanInterval is how often the history is scanned for new Latest
	// Chapters: the upper bound of a notification's delay after the Poll.
	ScanInterval = time.Minute
	// ScanWindow is how far back a scan looks. A change older than this
	// when first scanned (the notifier was down for days) is not pushed:
	// late news is noise; the feed still has it.
	ScanWindow = 72 * time.Hour
	// LedgerKeep is how long finished deliveries stay in the ledger (what
	// the settings page counts). It is well beyond ScanWindow: a row the
	// scan could still consider is never pruned, so nothing is sent twice.
	LedgerKeep = 30 * 24 * time.Hour
	// BatchSize is the most changes one message lists; more are sent in
	// further messages of the same job.
	BatchSize = 25
	// SendAttempts is how often River tries a target's batch before the
	// deliveries are recorded as failed. With River's back-off (attempt⁴
	// seconds) the last retry comes about 80 minutes after the first.
	SendAttempts = 8
)

// ScanArgs is the notify_scan job: enter new Latest Chapter changes into
// the delivery ledger and queue a send job per target with deliveries
// pending. River runs it periodically; it reads what the Poll recorded, so
// the Poll never waits on it.
type ScanArgs struct{}

// Kind is River's job kind.
func (ScanArgs) Kind() string { return riverjob.NotifyScan }

// InsertOpts: one scan waiting at a time.
func (ScanArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, Priority: 3, UniqueOpts: river.UniqueOpts{ByState: riverjob.InFlight}}
}

// SendArgs is the notify_send job: send a target's pending deliveries.
type SendArgs struct {
	TargetID int64 `json:"target_id" river:"unique"`
}

// Kind is River's job kind.
func (SendArgs) Kind() string { return riverjob.NotifySend }

// InsertOpts: one send per target queued or running (River's uniqueness
// always counts running jobs; deliveries that arrive while one runs are
// picked up by it or by the next scan). A send backing off keeps its place,
// so a new scan never cuts the back-off short. Were two sends of a target
// ever to run at once, the ledger's row locks keep them from sending the
// same rows.
func (SendArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: SendAttempts, Priority: 3, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: riverjob.InFlight}}
}

// PeriodicScan is the scan's River periodic job.
func PeriodicScan(interval time.Duration) *river.PeriodicJob {
	if interval <= 0 {
		interval = ScanInterval
	}
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return ScanArgs{}, nil },
		&river.PeriodicJobOpts{ID: "notify_scan", RunOnStart: true})
}

// Notifier runs the scan and send jobs.
type Notifier struct {
	Store  *store.Store
	Sender *Sender
	Logger *slog.Logger
	// Backoff, when set, replaces River's retry back-off for sends (tests).
	Backoff func(attempt int) time.Duration
	// Now is the clock the Reader's terms are read on (a digest's hour);
	// nil means time.Now. Tests pass a fake one.
	Now func() time.Time
}

func (n *Notifier) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

// AddWorkers registers the notify_scan and notify_send workers.
func (n *Notifier) AddWorkers(w *river.Workers) {
	river.AddWorker(w, &ScanWorker{N: n})
	river.AddWorker(w, &SendWorker{N: n})
}

// ScanWorker runs notify_scan jobs.
type ScanWorker struct {
	river.WorkerDefaults[ScanArgs]
	N *Notifier
}

// Work implements river.Worker.
func (w *ScanWorker) Work(ctx context.Context, _ *river.Job[ScanArgs]) error {
	_, err := w.N.Scan(ctx, river.ClientFromContext[pgx.Tx](ctx))
	return err
}

// Scan enters new changes into the ledger and queues the sends, in one
// transaction: a ledger row never waits without a job on its way.
func (n *Notifier) Scan(ctx context.Context, client *river.Client[pgx.Tx]) (queued int, err error) {
	err = n.Store.InTx(ctx, func(tx *store.Store) error {
		var targets []int64
		queued, targets, err = tx.QueueDeliveries(ctx, ScanWindow)
		if err != nil || len(targets) == 0 {
			return err
		}
		params := make([]river.InsertManyParams, len(targets))
		for i, id := range targets {
			params[i] = river.InsertManyParams{Args: SendArgs{TargetID: id}}
		}
		if _, err := client.InsertManyTx(ctx, tx.Tx(), params); err != nil {
			return fmt.Errorf("queue sends: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("notify scan: %w", err)
	}
	if _, err := n.Store.PruneDeliveries(ctx, LedgerKeep); err != nil {
		return queued, fmt.Errorf("notify scan: %w", err)
	}
	if queued > 0 {
		n.log().InfoContext(ctx, "new chapters queued for notification", "deliveries", queued)
	}
	return queued, nil
}

// SendWorker runs notify_send jobs.
type SendWorker struct {
	river.WorkerDefaults[SendArgs]
	N *Notifier
}

// Work implements river.Worker.
func (w *SendWorker) Work(ctx context.Context, job *river.Job[SendArgs]) error {
	return w.N.Deliver(ctx, job.Args.TargetID, job.Attempt >= job.MaxAttempts)
}

// NextRetry implements river.Worker: the zero time keeps River's policy.
func (w *SendWorker) NextRetry(job *river.Job[SendArgs]) time.Time {
	if w.N.Backoff == nil {
		return time.Time{}
	}
	return time.Now().Add(w.N.Backoff(job.Attempt))
}

// Timeout implements river.Worker: a few batches, each bounded by the
// gate's deadline.
func (w *SendWorker) Timeout(*river.Job[SendArgs]) time.Duration { return 5 * time.Minute }

// dbGrace bounds one batch's transaction: the send's own deadline (the
// gate's) and the database work around it.
const dbGrace = 2 * time.Minute

// maxRounds bounds the batches one job sends; a Reader with more pending is
// served by the next scan's job.
const maxRounds = 20

// DigestBatch is the most changes a digest lists in one message: a digest
// is one message, its text cut with "… and N more" past what chat services
// show.
const DigestBatch = 500

// Deliver sends a target's pending deliveries, a batch per message. Each
// batch stays locked in its transaction from claim to recorded outcome, so
// it is sent once: a 2xx marks it sent, a permanent failure (or the last
// attempt) marks it failed with the reason, any other failure leaves it
// pending and returns the error for River to retry with back-off.
func (n *Notifier) Deliver(ctx context.Context, targetID int64, lastAttempt bool) error {
	t, err := n.Store.TargetByID(ctx, 0, targetID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted since: its ledger went with it
	}
	if err != nil {
		return err
	}
	reader, err := n.Store.ReaderByID(ctx, t.ReaderID)
	if err != nil {
		return fmt.Errorf("target %d: %w", targetID, err)
	}
	log := n.log().With("target", targetID, "kind", t.Kind)
	batch := BatchSize
	if t.Mode != ModeEach {
		pending, oldest, err := n.Store.PendingDeliveries(ctx, targetID)
		if err != nil {
			return fmt.Errorf("deliver to target %d: %w", targetID, err)
		}
		now := n.now()
		if !Due(t.TargetTerms, pending, oldest, now) {
			return nil // the next scan asks again
		}
		if t.Mode == ModeDigest {
			// Recorded only once the digest left: a failed one is retried
			// within its slot.
			if err := n.sendPending(ctx, t, reader, DigestBatch, lastAttempt, log); err != nil {
				return err
			}
			return n.Store.SetDigestSent(context.WithoutCancel(ctx), targetID, now)
		}
	}
	return n.sendPending(ctx, t, reader, batch, lastAttempt, log)
}

// sendPending sends a target's pending deliveries, batch changes a message.
func (n *Notifier) sendPending(ctx context.Context, t store.Target, reader store.Reader, batch int, lastAttempt bool, log *slog.Logger) error {
	targetID := t.ID
	for range maxRounds {
		var claimed int
		var sendErr error
		// The database work outlives a cancelled job context: a batch that
		// was sent must be recorded as sent, so its transaction commits
		// whatever happens to the job (bounded, so a lost database cannot
		// hold the worker forever). Only the send itself uses ctx.
		dbctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbGrace)
		err := n.Store.InTx(dbctx, func(tx *store.Store) error {
			ds, err := tx.ClaimDeliveries(dbctx, targetID, batch)
			if err != nil || len(ds) == 0 {
				return err
			}
			claimed = len(ds)
			msg := Message{ReaderName: reader.Name, Events: make([]store.ChapterEvent, len(ds))}
			ids := make([]int64, len(ds))
			for i, d := range ds {
				msg.Events[i], ids[i] = d.Event, d.Event.HistoryID
			}
			_, sendErr = n.Sender.Send(ctx, t, msg)
			status, reason := store.DeliverySent, ""
			if sendErr != nil {
				reason = sendErr.Error()
				status = store.DeliveryPending
				if lastAttempt || errors.Is(sendErr, ErrPermanent) {
					status = store.DeliveryFailed
				}
			}
			return tx.FinishDeliveries(dbctx, targetID, ids, status, reason)
		})
		cancel()
		if err != nil {
			return fmt.Errorf("deliver to target %d: %w", targetID, err)
		}
		if sendErr != nil {
			log.WarnContext(ctx, "notification not delivered", "changes", claimed, "permanent", errors.Is(sendErr, ErrPermanent), "err", sendErr)
			if errors.Is(sendErr, ErrPermanent) {
				return river.JobCancel(sendErr)
			}
			return sendErr
		}
		if claimed > 0 {
			log.InfoContext(ctx, "notification delivered", "changes", claimed)
		}
		if claimed < batch {
			return nil
		}
	}
	return nil
}

func (n *Notifier) log() *slog.Logger {
	if n.Logger != nil {
		return n.Logger
	}
	return slog.Default()
}

package poll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// PlannedPoll is one poll the scheduler decided: the Series and when.
type PlannedPoll struct {
	Key string
	At  time.Time
}

// PlanFunc decides, under the interval policy (POLL_POLICY=interval), when
// the held Series due within the cycle starting at now are polled. held
// comes most Readers first, ties broken by the oldest last poll; paused maps
// a backing-off Site to the end of its pause. Under the default adaptive
// policy, Adaptive (adaptive.go) decides instead: it needs each Series'
// history, rhythm and Site budget, and gives a reason and a forecast for
// every Series, which this signature cannot carry.
type PlanFunc func(now time.Time, interval time.Duration, held []store.PollCandidate, paused map[string]time.Time) []PlannedPoll

// PlanCycle is the default PlanFunc: every held Series once per interval.
// A Series whose next poll is already known keeps it, so a plan run twice
// (at every start, on every new leader) never polls a Series twice in one
// cycle. The overdue ones (never planned, or missed while the process was
// down) are spread over the interval in the order given, most Readers
// first, instead of bursting at its start. Series of a backing-off Site are
// left out: they are planned again once it resumes.
func PlanCycle(now time.Time, interval time.Duration, held []store.PollCandidate, paused map[string]time.Time) []PlannedPoll {
	isPaused := func(c store.PollCandidate) bool {
		until, ok := paused[c.Site]
		return ok && until.After(now)
	}
	overdue := 0
	for _, c := range held {
		if !isPaused(c) && (c.NextPollAt == nil || !c.NextPollAt.After(now)) {
			overdue++
		}
	}
	var step time.Duration
	if overdue > 0 {
		step = interval / time.Duration(overdue)
	}
	out := make([]PlannedPoll, 0, len(held))
	i := 0
	for _, c := range held {
		switch {
		case isPaused(c):
		case c.NextPollAt != nil && c.NextPollAt.After(now):
			out = append(out, PlannedPoll{Key: c.Key, At: *c.NextPollAt})
		default:
			out = append(out, PlannedPoll{Key: c.Key, At: now.Add(time.Duration(i) * step)})
			i++
		}
	}
	return out
}

// PlanArgs is the plan_polls job: queue the polls of the next cycle. It is a
// River periodic job, so it runs on the elected leader only, one replica at
// a time.
type PlanArgs struct{}

// Kind is River's job kind.
func (PlanArgs) Kind() string { return riverjob.PlanPolls }

// InsertOpts: one plan at a time.
func (PlanArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, Priority: PriorityAcquisition, UniqueOpts: river.UniqueOpts{ByState: riverjob.InFlight}}
}

// PeriodicPlan is the scheduler's River periodic job: every interval
// (POLL_INTERVAL under the interval policy, Adaptive.PlanEvery under the
// adaptive one), and at start (RunOnStart), so a cycle missed while the
// process was down runs at once; what is due comes from the database, never
// from an in-memory timer.
func PeriodicPlan(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return PlanArgs{}, nil },
		&river.PeriodicJobOpts{ID: "plan_polls", RunOnStart: true})
}

// Scheduler plans the Poll's cycles.
type Scheduler struct {
	Store *store.Store
	// Interval is POLL_INTERVAL.
	Interval time.Duration
	// Policy says which Sites the Owner paused: they are left out, as a
	// backing-off one is; nil: none.
	Policy *fetch.Policy
	// Plan decides what is due; nil means PlanCycle.
	Plan   PlanFunc
	Logger *slog.Logger
}

// planBatch bounds one transaction of the plan.
const planBatch = 500

// Run plans the cycle starting now: it queues a poll_series job scheduled at
// each planned time and records it as the Series' next_poll_at, in one
// transaction per batch. It returns how many polls were queued (a Series
// whose poll is already queued is skipped by River's uniqueness).
func (s *Scheduler) Run(ctx context.Context, client *river.Client[pgx.Tx]) (int, error) {
	if client == nil {
		return 0, errors.New("plan polls: no River client")
	}
	interval := s.Interval
	if interval <= 0 {
		interval = time.Hour
	}
	now := time.Now()
	held, err := s.Store.PollCandidates(ctx, now.Add(interval))
	if err != nil {
		return 0, fmt.Errorf("plan polls: %w", err)
	}
	states, err := s.Store.SiteStates(ctx)
	if err != nil {
		return 0, fmt.Errorf("plan polls: %w", err)
	}
	settings, err := ownerSettings(ctx, s.Policy)
	if err != nil {
		return 0, fmt.Errorf("plan polls: %w", err)
	}
	paused := map[string]time.Time{}
	for name, st := range states {
		if until, ok := st.Paused(now); ok {
			paused[name] = until
		}
	}
	// An Owner's pause has no end: left out of this cycle, planned again
	// by the plan the resume runs.
	if settings.AllPaused || len(settings.Sites) > 0 {
		kept := make([]store.PollCandidate, 0, len(held))
		for _, c := range held {
			if !settings.AllPaused && !settings.Sites[c.Site].Paused {
				kept = append(kept, c)
			}
		}
		held = kept
	}
	plan := s.Plan
	if plan == nil {
		plan = PlanCycle
	}
	polls := plan(now, interval, held, paused)

	before := make(map[string]*time.Time, len(held))
	for _, c := range held {
		before[c.Key] = c.NextPollAt
	}
	queued, raced, err := s.queue(ctx, client, polls, before)
	if err != nil {
		return queued, err
	}
	s.log().InfoContext(ctx, "planned polls", "held_due", len(held), "planned", len(polls), "queued", queued,
		"polled_meanwhile", raced, "paused_sites", len(paused), "interval", interval.String())
	return queued, nil
}

// queue queues a poll_series job scheduled at each planned time and
// records it as the Series' next_poll_at, in one transaction per batch
// under the Series' row locks. before is each Series' next_poll_at as the
// plan read it: a Series whose next poll moved since (polled meanwhile) is
// left alone, its own poll recorded the next one.
func (s *Scheduler) queue(ctx context.Context, client *river.Client[pgx.Tx], polls []PlannedPoll, before map[string]*time.Time) (queued, raced int, err error) {
	for start := 0; start < len(polls); start += planBatch {
		batch := polls[start:min(start+planBatch, len(polls))]
		err := s.Store.InTx(ctx, func(tx *store.Store) error {
			keys := make([]string, len(batch))
			for i, p := range batch {
				keys[i] = p.Key
			}
			now, err := tx.LockNextPolls(ctx, keys)
			if err != nil {
				return err
			}
			params := make([]river.InsertManyParams, 0, len(batch))
			next := make([]store.NextPoll, 0, len(batch))
			for _, p := range batch {
				if cur, ok := now[p.Key]; !ok || !sameTime(cur, before[p.Key]) {
					// Polled (or gone) since the plan read it: its own poll
					// recorded the next one.
					raced++
					continue
				}
				params = append(params, river.InsertManyParams{Args: PollArgs{Key: p.Key, Reason: "schedule"}, InsertOpts: &river.InsertOpts{
					ScheduledAt: p.At, Priority: PriorityScheduled, UniqueOpts: riverjob.UniqueInFlight(),
				}})
				next = append(next, store.NextPoll{Key: p.Key, At: p.At, Reason: ReasonInterval})
			}
			if len(params) == 0 {
				return nil
			}
			res, err := client.InsertManyTx(ctx, tx.Tx(), params)
			if err != nil {
				return err
			}
			for _, r := range res {
				if !r.UniqueSkippedAsDuplicate {
					queued++
				}
			}
			return tx.SetNextPolls(ctx, next)
		})
		if err != nil {
			return queued, raced, fmt.Errorf("plan polls: queue: %w", err)
		}
	}
	return queued, raced, nil
}

func (s *Scheduler) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// PlanWorker runs plan_polls jobs: the adaptive plan when Adaptive is set
// (POLL_POLICY=adaptive), else the interval Scheduler.
type PlanWorker struct {
	river.WorkerDefaults[PlanArgs]
	Scheduler *Scheduler
	Adaptive  *Adaptive
}

// Work implements river.Worker.
func (w *PlanWorker) Work(ctx context.Context, _ *river.Job[PlanArgs]) error {
	client := river.ClientFromContext[pgx.Tx](ctx)
	if w.Adaptive != nil {
		_, err := w.Adaptive.Run(ctx, client)
		return err
	}
	_, err := w.Scheduler.Run(ctx, client)
	return err
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

package poll

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The adaptive Poll (docs/adr/0013-adaptive-polling.md): package schedule learns
// each Series' release rhythm from its Latest Chapter history and decides
// when it is polled within its Site's budget; Adaptive feeds it from
// Postgres, queues the polls it decides on River and records every Series'
// next poll with its reason.

// The policies of the Poll (POLL_POLICY).
const (
	PolicyAdaptive = "adaptive"
	PolicyInterval = "interval"
)

// ReasonInterval is the reason of every next poll under the interval
// policy; the adaptive policy's reasons are package schedule's.
const ReasonInterval = "fixed interval"

// UnpacedBudget is the default budget of a Site paced at zero (SITE_PACE
// asura=0): one scheduled poll a second.
const UnpacedBudget = 3600

// MaxBudget is the most requests per hour package schedule plans for.
const MaxBudget = 3_600_000

// Budgets are each Site's budget of scheduled polls, in requests per hour:
// the Owner's (set at run time), else SITE_BUDGET's, else every request its
// pace allows.
type Budgets struct {
	overrides map[string]int
	paces     fetch.Paces
}

// NewBudgets checks SITE_BUDGET overrides against the registry: a name that
// is no Site is refused, so a typo does not silently leave a Site at its
// default.
func NewBudgets(reg *latest.Registry, overrides map[string]int, paces fetch.Paces) (Budgets, error) {
	b := Budgets{overrides: map[string]int{}, paces: paces}
	for name, n := range overrides {
		if _, ok := reg.Lookup(name); !ok {
			return Budgets{}, fmt.Errorf("SITE_BUDGET names %q, which is not a Site (%s)", name, strings.Join(reg.Names(), ", "))
		}
		if n < 1 || n > MaxBudget {
			return Budgets{}, fmt.Errorf("SITE_BUDGET of %s is %d: %w", name, n, schedule.ErrBudget)
		}
		b.overrides[name] = n
	}
	return b, nil
}

// Budget is a Site's budget now, and where it comes from.
type Budget struct {
	PerHour int
	// Source is "owner" (set at run time), "SITE_BUDGET", or "pace" (every
	// request the Site's pace allows).
	Source string
}

// The sources of a budget.
const (
	BudgetByOwner  = "owner"
	BudgetByConfig = "SITE_BUDGET"
	BudgetByPace   = "pace"
)

// Of is a Site's budget under the Owner's settings s (fetch.Policy's
// OwnerSettings; the zero Settings for the configured one).
func (b Budgets) Of(s fetch.Settings, site *latest.Site) Budget {
	if n := s.Sites[site.Name].Budget; n != nil {
		return Budget{PerHour: *n, Source: BudgetByOwner}
	}
	if n, ok := b.overrides[site.Name]; ok {
		return Budget{PerHour: n, Source: BudgetByConfig}
	}
	n, err := schedule.BudgetFromPace(b.paces.In(s, site))
	if err != nil {
		// A pace of zero (or below a microsecond) is no limit the budget
		// can follow.
		return Budget{PerHour: UnpacedBudget, Source: BudgetByPace}
	}
	return Budget{PerHour: n, Source: BudgetByPace}
}

// Adaptive plans the Poll under the adaptive policy: the plan_polls job
// runs it every PlanEvery on the elected leader. For each Site with held
// Series it claims the next planning horizon (back to back, so two plans
// never hand out the same budget slot), refreshes the cached rhythms that
// are stale, asks schedule.Planner for every Series' next poll, queues a
// poll_series job at each Due decision's time and records every decision as
// the Series' next_poll_at and next_poll_reason.
//
// Reader hints reach the plan through series.hint_at (Queue.HintsPlanned),
// so they move a poll forward only within the budget. Acquisitions and the
// Owner's "poll now" are explicit one-off requests and run at once, outside
// the budget; the pacing gate still spaces every request to a host.
type Adaptive struct {
	Store    *store.Store
	Registry *latest.Registry
	// Planner holds the policy's settings; Interval is POLL_INTERVAL.
	Planner schedule.Planner
	Budgets Budgets
	// Policy says which Sites the Owner paused (they are not planned) and
	// gives the Owner's budgets; nil: none paused, the configured budgets.
	Policy *fetch.Policy
	// Now is the plan's clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Listings is POLL_LISTINGS: a Site with a listing is planned around
	// it (listing.go).
	Listings bool

	// decoded keeps, per Site, the rhythms the last tick used, by Series
	// key, with the rhythm_at they were cached at: a tick reads and decodes
	// only the rhythms estimated since (docs/adr/0033). It is a copy of
	// Postgres' cache, exact because rhythm_at names the estimate, so a
	// plan run by another replica in between costs a read, never a stale
	// rhythm.
	decodedMu sync.Mutex
	decoded   map[string]map[string]decodedRhythm
}

// decodedRhythm is a rhythm the plan decoded, and its rhythm_at.
type decodedRhythm struct {
	at time.Time
	r  *schedule.Rhythm
}

// Staleness of a cached rhythm: it is estimated again after a new release
// and at least this often, so a Series whose releases stop drifts to
// dormant.
const rhythmMaxAge = 24 * time.Hour

// rhythmMaxAgeOf is one Series' staleness: between half of rhythmMaxAge
// and all of it, fixed by its key, so that rhythms estimated in one tick
// (the first plan of a Site, 100,000 at once) are estimated again spread
// over twelve hours of ticks, not all in one tick a day later (ADR 0033).
func rhythmMaxAgeOf(key string) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	half := rhythmMaxAge / 2
	return half + time.Duration(h.Sum32()%uint32(half/time.Minute))*time.Minute
}

// historyWindow is how much Latest Chapter history is read for an
// estimate; schedule.Estimate looks back 12 weeks.
const historyWindow = 13 * 7 * 24 * time.Hour

func (a *Adaptive) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Adaptive) log() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

func (a *Adaptive) horizon() time.Duration {
	if a.Planner.Horizon > 0 {
		return a.Planner.Horizon
	}
	return schedule.DefaultHorizon
}

// PlanEvery is how often the plan_polls job runs: a third of a horizon, so
// the next horizon is claimed while one and a half are still planned ahead.
func (a *Adaptive) PlanEvery() time.Duration { return a.horizon() / 3 }

// Run plans every Site whose next horizon is due and returns how many polls
// it queued.
func (a *Adaptive) Run(ctx context.Context, client *river.Client[pgx.Tx]) (int, error) {
	if client == nil {
		return 0, errors.New("plan polls: no River client")
	}
	now := a.now()
	sites, err := a.Store.HeldSites(ctx)
	if err != nil {
		return 0, fmt.Errorf("plan polls: %w", err)
	}
	states, err := a.Store.SiteStates(ctx)
	if err != nil {
		return 0, fmt.Errorf("plan polls: %w", err)
	}
	jobs, err := a.Store.QueuedPollJobs(ctx)
	if err != nil {
		return 0, fmt.Errorf("plan polls: %w", err)
	}
	queued := map[string][]store.QueuedPoll{}
	for _, j := range jobs {
		queued[j.Key] = append(queued[j.Key], j)
	}
	settings, err := ownerSettings(ctx, a.Policy)
	if err != nil {
		return 0, fmt.Errorf("plan polls: %w", err)
	}
	h := a.horizon()
	total := 0
	var errs []error
	for _, name := range sites {
		site, ok := a.Registry.Lookup(name)
		if !ok {
			// Its polls record unknown_site; there is nothing to plan.
			continue
		}
		if settings.AllPaused || settings.Sites[name].Paused {
			// Paused by the Owner: no budget is spent on it, its queued
			// polls wait; the Owner's resume plans it again at once.
			continue
		}
		start, ok, err := a.Store.ClaimPlan(ctx, name, now, h/2, h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		n, err := a.planSite(ctx, client, site, start, states[name], queued, a.Budgets.Of(settings, site).PerHour)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("plan polls of %s: %w", name, err))
		}
	}
	return total, errors.Join(errs...)
}

// intervalJobReason is the reason the interval policy's plan gives its
// polls; such a poll queued beyond the adaptive plan's horizon was left by
// the interval policy (the adaptive plan never queues past its horizon),
// and the adaptive plan replaces it.
const intervalJobReason = "schedule"

// planSite plans one Site's horizon [start, start+horizon): it sorts the
// Site's held Series into those to plan and those whose poll is already
// queued, asks the planner, queues the due polls and records the
// decisions, and shows the waiting Series of a paused Site its pause.
func (a *Adaptive) planSite(ctx context.Context, client *river.Client[pgx.Tx], site *latest.Site, start time.Time,
	state store.SiteState, queued map[string][]store.QueuedPoll, budget int) (int, error) {
	log := a.log().With("site", site.Name)
	t0 := time.Now()
	cands, err := a.Store.ScheduleCandidates(ctx, site.Name)
	if err != nil || len(cands) == 0 {
		return 0, err
	}
	end := start.Add(a.horizon())
	t1 := time.Now()
	rhythms, err := a.rhythms(ctx, site.Name, cands, start)
	if err != nil {
		return 0, err
	}
	t2 := time.Now()
	var paused time.Time
	if until, ok := state.Paused(start); ok {
		paused = until
	}

	in := planInputs(cands, rhythms, queued, end)
	in.from = start
	// The Site's listing, when it has one, takes its share of the budget
	// and marks the Series it shows (listing.go).
	if budget, err = a.listingPlan(ctx, client, site, start, budget, &in, len(cands)); err != nil {
		return 0, err
	}
	decisions, err := a.Planner.Plan(start, schedule.Site{Name: site.Name, PerHour: budget, PausedUntil: paused, Queued: in.queued, ListingPeriod: in.listingPeriod}, in.series)
	if err != nil {
		return 0, err
	}
	t3 := time.Now()
	n, err := a.queue(ctx, client, cands, in, decisions)
	if err != nil {
		return n.queued, err
	}
	if err := a.showPause(ctx, cands, in.waiting, paused); err != nil {
		return n.queued, err
	}
	log.InfoContext(ctx, "planned polls", "from", start, "to", end, "held", len(cands), "planned", len(in.series),
		"waiting", len(in.waiting), "due", n.due, "queued", n.queued, "polled_meanwhile", n.raced,
		"replaced", n.cancelled, "budget_per_hour", budget, "paused", !paused.IsZero(), "written", n.written,
		// Where the tick's time went, for the Owner and `bench scale`.
		"read_ms", t1.Sub(t0).Milliseconds(), "rhythms_ms", t2.Sub(t1).Milliseconds(),
		"plan_ms", t3.Sub(t2).Milliseconds(), "write_ms", time.Since(t3).Milliseconds())
	return n.queued, nil
}

// planInput is a Site's held Series sorted for one plan.
type planInput struct {
	// series are the Series planned; idx holds each one's index in the
	// candidates.
	series []schedule.Series
	idx    []int
	// stale are, by Series key, the interval policy's polls queued beyond
	// the horizon: the plan cancels them and queues its own.
	stale map[string][]int64
	// waiting are the candidates (by index) whose queued poll is their
	// next; queued are the same as the planner prices them.
	waiting []int
	queued  []schedule.Series
	// from is the start of the horizon planned.
	from time.Time
	// listingPeriod is how often the Site's healthy listing is read; zero
	// when it has none.
	listingPeriod time.Duration
}

// planInputs sorts the candidates of a horizon ending at end. A Series
// whose poll is queued (an Acquisition, the Owner's request, a poll planned
// by the last horizon, one snoozed or retrying) is not planned again until
// that poll has run: the queued poll is its next.
func planInputs(cands []store.ScheduleCandidate, rhythms []*schedule.Rhythm, queued map[string][]store.QueuedPoll, end time.Time) planInput {
	in := planInput{
		series: make([]schedule.Series, 0, len(cands)),
		idx:    make([]int, 0, len(cands)),
		stale:  map[string][]int64{},
	}
	for i, c := range cands {
		var old []int64
		busy := false
		for _, j := range queued[c.Key] {
			if j.Reason == intervalJobReason && j.State == "scheduled" && !j.Attempted && !j.ScheduledAt.Before(end) {
				old = append(old, j.ID)
				continue
			}
			busy = true
		}
		s := schedule.Series{Key: c.Key, Readers: c.Readers, Since: c.CreatedAt, Rhythm: rhythms[i]}
		if c.LastRelease != nil {
			s.Releases = []schedule.Release{{Seen: c.LastRelease.Seen, After: c.LastRelease.After}}
		}
		if c.LastPollAt != nil {
			s.LastPoll = *c.LastPollAt
		}
		s.Hint = c.HintAt != nil && (c.LastPollAt == nil || c.HintAt.After(*c.LastPollAt))
		if busy {
			// Not planned, but priced: see schedule.Site.Queued.
			in.waiting = append(in.waiting, i)
			in.queued = append(in.queued, s)
			continue
		}
		if len(old) > 0 {
			in.stale[c.Key] = old
		}
		in.series = append(in.series, s)
		in.idx = append(in.idx, i)
	}
	return in
}

// queueCounts counts what queueing a plan's decisions did: polls queued
// (River's uniqueness skips one already queued), decisions dropped because
// their Series was polled meanwhile, decisions due, and interval polls
// replaced.
type queueCounts struct {
	queued, raced, due, cancelled, written int
}

// queue queues the due decisions and records the decisions that moved, in
// one transaction per batch. decisions are in the order of in.series.
func (a *Adaptive) queue(ctx context.Context, client *river.Client[pgx.Tx], cands []store.ScheduleCandidate, in planInput,
	decisions []schedule.Decision) (queueCounts, error) {
	// Only the decisions that do something are locked and written: due,
	// replacing an interval poll, or moved (changed). At 100,000 Series most
	// decisions are none of these, and locking them cost more than the
	// plan itself (docs/adr/0033).
	todo := make([]schedule.Decision, 0, len(decisions))
	tidx := make([]int, 0, len(decisions))
	for k, d := range decisions {
		c := cands[in.idx[k]]
		if d.Due || len(in.stale[d.Key]) > 0 || moved(in.from, c.NextPollAt, c.NextPollReason, d.At, d.Reason) {
			todo = append(todo, d)
			tidx = append(tidx, in.idx[k])
		}
	}
	var n queueCounts
	for from := 0; from < len(todo); from += adaptiveBatch {
		to := min(from+adaptiveBatch, len(todo))
		err := a.Store.InTx(ctx, func(tx *store.Store) error {
			return queueBatch(ctx, client, tx, cands, in.stale, todo[from:to], tidx[from:to], &n)
		})
		if err != nil {
			return n, fmt.Errorf("queue: %w", err)
		}
	}
	return n, nil
}

// adaptiveBatch bounds one transaction of the adaptive plan's writes: few
// enough row locks to keep a poll's wait for one short, enough rows to
// spread each commit over many.
const adaptiveBatch = 2000

// queueBatch queues one batch of decisions inside tx, under the Series'
// row locks; bidx holds each decision's index in the candidates.
func queueBatch(ctx context.Context, client *river.Client[pgx.Tx], tx *store.Store, cands []store.ScheduleCandidate,
	stale map[string][]int64, batch []schedule.Decision, bidx []int, n *queueCounts) error {
	keys := make([]string, len(batch))
	for i, d := range batch {
		keys[i] = d.Key
	}
	last, err := tx.LockLastPolls(ctx, keys)
	if err != nil {
		return err
	}
	params := make([]river.InsertManyParams, 0, len(batch))
	next := make([]store.NextPoll, 0, len(batch))
	for i, d := range batch {
		c := cands[bidx[i]]
		if cur, ok := last[d.Key]; !ok || !sameTime(cur, c.LastPollAt) {
			// Polled (or gone) since the plan read it: decided on stale
			// facts, and planned again by the next horizon.
			n.raced++
			continue
		}
		for _, id := range stale[d.Key] {
			if _, err := client.JobCancelTx(ctx, tx.Tx(), id); err != nil {
				return fmt.Errorf("replace the interval policy's poll %d of %s: %w", id, d.Key, err)
			}
			n.cancelled++
		}
		if d.Due {
			n.due++
			params = append(params, river.InsertManyParams{Args: PollArgs{Key: d.Key, Reason: d.Reason}, InsertOpts: &river.InsertOpts{
				ScheduledAt: d.At, Priority: PriorityScheduled, UniqueOpts: riverjob.UniqueInFlight(),
			}})
		}
		if d.Due || len(stale[d.Key]) > 0 || changed(c.NextPollAt, c.NextPollReason, d.At, d.Reason) {
			next = append(next, store.NextPoll{Key: d.Key, At: d.At, Reason: d.Reason})
		}
	}
	n.written += len(next)
	if len(params) > 0 {
		res, err := client.InsertManyTx(ctx, tx.Tx(), params)
		if err != nil {
			return err
		}
		for _, r := range res {
			if !r.UniqueSkippedAsDuplicate {
				n.queued++
			}
		}
	}
	return tx.SetNextPolls(ctx, next)
}

// showPause records a paused Site's pause end as the next poll of its
// Series whose poll is queued: those polls snooze to the pause's end.
func (a *Adaptive) showPause(ctx context.Context, cands []store.ScheduleCandidate, waiting []int, paused time.Time) error {
	if paused.IsZero() || len(waiting) == 0 {
		return nil
	}
	reason := schedule.ReasonPaused(paused)
	var next []store.NextPoll
	for _, i := range waiting {
		c := cands[i]
		if changed(c.NextPollAt, c.NextPollReason, paused, reason) {
			next = append(next, store.NextPoll{Key: c.Key, At: paused, Reason: reason})
		}
	}
	return a.Store.SetNextPolls(ctx, next)
}

// changed reports whether a decision differs enough from the stored next
// poll to be written: forecasts move by seconds from one plan to the next,
// and rewriting thousands of rows every few minutes for that is waste.
func changed(at *time.Time, reason string, nat time.Time, nreason string) bool {
	if at == nil || reason != nreason {
		return true
	}
	d := at.Sub(nat)
	return d > time.Minute || d < -time.Minute
}

// moved reports whether a decision that is not due is written over the
// stored next poll: when its reason differs, or it moved by more than a
// minute and by more than a tenth of how far ahead of now it lies. A
// forecast hours ahead drifts by minutes from one tick to the next as the
// budget's free slots move; at the scale fixture rewriting it made half of
// a Site's plans move every tick, for nothing a person would see ("in 5
// hours" either way). As the forecast nears, the tolerance shrinks, so the
// stored one is never off by more than a tenth of the wait (ADR 0033).
func moved(now time.Time, at *time.Time, reason string, nat time.Time, nreason string) bool {
	if !changed(at, reason, nat, nreason) {
		return false
	}
	if at == nil || reason != nreason {
		return true
	}
	return at.Sub(nat).Abs() > min(at.Sub(now), nat.Sub(now))/10
}

// rhythms returns each candidate's rhythm: the cached one while fresh
// (decoded by an earlier tick, else read from Postgres and decoded), else
// estimated again from its Latest Chapter history (and cached).
func (a *Adaptive) rhythms(ctx context.Context, site string, cands []store.ScheduleCandidate, now time.Time) ([]*schedule.Rhythm, error) {
	out := make([]*schedule.Rhythm, len(cands))
	a.decodedMu.Lock()
	known := a.decoded[site]
	a.decodedMu.Unlock()
	keep := make(map[string]decodedRhythm, len(cands))
	var stale, unread []int
	for i, c := range cands {
		if c.RhythmAt == nil || now.Sub(*c.RhythmAt) >= rhythmMaxAgeOf(c.Key) ||
			(c.LastChangeAt != nil && c.LastChangeAt.After(*c.RhythmAt)) {
			stale = append(stale, i)
			continue
		}
		if d, ok := known[c.Key]; ok && d.at.Equal(*c.RhythmAt) {
			out[i] = d.r
			keep[c.Key] = d
			continue
		}
		unread = append(unread, i)
	}
	if len(unread) > 0 {
		keys := make([]string, len(unread))
		for j, i := range unread {
			keys[j] = cands[i].Key
		}
		cached, err := a.Store.CachedRhythms(ctx, keys)
		if err != nil {
			return nil, err
		}
		for _, i := range unread {
			c := cands[i]
			cr, ok := cached[c.Key]
			var r schedule.Rhythm
			if !ok || !cr.At.Equal(*c.RhythmAt) || json.Unmarshal(cr.Rhythm, &r) != nil {
				// Estimated again since the candidates were read, or
				// unreadable: estimate it here.
				stale = append(stale, i)
				continue
			}
			out[i] = &r
			keep[c.Key] = decodedRhythm{at: cr.At, r: &r}
		}
	}
	if len(stale) > 0 {
		if err := a.estimate(ctx, cands, stale, now, out, keep); err != nil {
			return nil, err
		}
	}
	// Only this tick's candidates are kept: a Series no longer held, or
	// gone, leaves memory with its tick.
	a.decodedMu.Lock()
	if a.decoded == nil {
		a.decoded = map[string]map[string]decodedRhythm{}
	}
	a.decoded[site] = keep
	a.decodedMu.Unlock()
	return out, nil
}

// estimate estimates the rhythms of cands[stale] from their history at now
// into out, caches them in Postgres, and remembers them in keep.
func (a *Adaptive) estimate(ctx context.Context, cands []store.ScheduleCandidate, stale []int, now time.Time,
	out []*schedule.Rhythm, keep map[string]decodedRhythm) error {
	keys := make([]string, len(stale))
	for j, i := range stale {
		keys[j] = cands[i].Key
	}
	hist, err := a.Store.ReleaseHistory(ctx, keys, now.Add(-historyWindow))
	if err != nil {
		return err
	}
	// rhythm_at as Postgres keeps it (microseconds), so the next tick
	// knows the estimate it reads back.
	at := now.Truncate(time.Microsecond)
	recs := make([]store.RhythmRecord, 0, len(stale))
	estimated := make(map[string]decodedRhythm, len(stale))
	for _, i := range stale {
		c := cands[i]
		rel := make([]schedule.Release, len(hist[c.Key]))
		for j, h := range hist[c.Key] {
			rel[j] = schedule.Release{Seen: h.Seen, After: h.After}
		}
		r := schedule.Estimate(c.CreatedAt, now, rel)
		out[i] = &r
		raw, err := json.Marshal(r)
		if err != nil {
			a.log().WarnContext(ctx, "rhythm not cached", "series", c.Key, "err", err)
			continue
		}
		recs = append(recs, store.RhythmRecord{Key: c.Key, Rhythm: raw, At: at})
		estimated[c.Key] = decodedRhythm{at: at, r: &r}
	}
	if err := a.Store.SetRhythms(ctx, recs); err != nil {
		return err
	}
	for k, d := range estimated {
		keep[k] = d
	}
	return nil
}

// DescribeRhythm renders a cached rhythm (series.rhythm) for people:
// "weekly, Tuesdays ~14:00" (times in UTC); ok is false when there is none
// or it cannot be read.
func DescribeRhythm(raw []byte) (desc string, kind schedule.Kind, ok bool) {
	if len(raw) == 0 {
		return "", "", false
	}
	var r schedule.Rhythm
	if err := json.Unmarshal(raw, &r); err != nil || r.Kind == "" {
		return "", "", false
	}
	return r.Describe(time.UTC), r.Kind, true
}

// ownerSettings are the Owner's run-time settings as policy applies them;
// none without a policy.
func ownerSettings(ctx context.Context, policy *fetch.Policy) (fetch.Settings, error) {
	if policy == nil {
		return fetch.Settings{}, nil
	}
	return policy.OwnerSettings(ctx)
}

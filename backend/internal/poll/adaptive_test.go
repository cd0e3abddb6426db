package poll

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The adaptive Poll end to end on a real Postgres and a real River client:
// Adaptive reads the Series, their history and the Site's state from the
// database, plans with package schedule, queues poll_series jobs and
// records each Series' next poll and reason. The clock is fake so a test
// can replay a day or two of plans; the "poll" that runs each queued job at
// its scheduled time is the test's own (it writes what RecordPoll writes,
// at the fake time), because the real Poller stamps the database's clock.

// adaptiveSim replays plans and polls of one Site minute by minute.
type adaptiveSim struct {
	t     *testing.T
	e     *pollEnv
	site  *latest.Site
	a     *Adaptive
	now   time.Time
	polls []simPoll
	// releases are each Series' true release times, oldest first; seen
	// counts those a poll found.
	releases map[string][]time.Time
	seen     map[string]int
}

type simPoll struct {
	key, reason string
	at          time.Time
}

func newAdaptiveSim(t *testing.T, start time.Time, budget int) *adaptiveSim {
	t.Helper()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	budgets, err := NewBudgets(e.reg, map[string]int{site.Name: budget}, fetch.Paces{})
	require.NoError(t, err)
	s := &adaptiveSim{t: t, e: e, site: site, now: start, releases: map[string][]time.Time{}, seen: map[string]int{}}
	s.a = &Adaptive{Store: e.st, Registry: e.reg, Planner: schedule.Planner{Interval: time.Hour}, Budgets: budgets,
		Now: func() time.Time { return s.now }, Logger: quietLogger()}
	return s
}

// nextMonday is a Monday at hour:00 UTC at least a day after now.
func nextMonday(hour int) time.Time {
	d := time.Now().UTC().Add(24 * time.Hour).Truncate(24 * time.Hour)
	for d.Weekday() != time.Monday {
		d = d.Add(24 * time.Hour)
	}
	return d.Add(time.Duration(hour) * time.Hour)
}

// series creates a held Series first polled at created, last polled at
// lastPoll, with the given history of releases: each first seen at seen[i]
// by a poll an hour after the one before.
func (s *adaptiveSim) series(slug string, readers int, created, lastPoll time.Time, seen []time.Time) string {
	s.t.Helper()
	ser := s.e.hold(s.site, slug, readers)
	s.e.exec(`UPDATE series SET created_at = $2, last_poll_at = $3, last_success_at = $3 WHERE key = $1`, ser.Key, created, lastPoll)
	// The Acquisition's Latest Chapter: no poll before it.
	s.e.exec(`INSERT INTO latest_chapter_history (series_key, label, first_seen_at) VALUES ($1, 'Chapter 0', $2)`, ser.Key, created)
	for i, at := range seen {
		s.e.exec(`INSERT INTO latest_chapter_history (series_key, label, first_seen_at, prev_poll_at) VALUES ($1, $2, $3, $4)`,
			ser.Key, fmt.Sprintf("Chapter %d", i+1), at, at.Add(-time.Hour))
	}
	s.e.exec(`UPDATE series SET latest_label = $2 WHERE key = $1`, ser.Key, fmt.Sprintf("Chapter %d", len(seen)))
	return ser.Key
}

// run advances the clock to until a minute at a time: at each minute the
// plan runs (as the periodic job does, every third of a horizon) and every
// queued poll whose time has come is done.
func (s *adaptiveSim) run(until time.Time) {
	s.t.Helper()
	for ; !s.now.After(until); s.now = s.now.Add(time.Minute) {
		_, err := s.a.Run(context.Background(), s.e.client)
		require.NoError(s.t, err)
		s.pollDue()
	}
}

// pollDue does every queued poll due by now, in order, at its scheduled
// time: what the Poller records under the adaptive policy, with a release
// found when one happened since the last poll.
func (s *adaptiveSim) pollDue() {
	s.t.Helper()
	ctx := context.Background()
	rows, err := s.e.st.Pool.Query(ctx, `
		SELECT id, args->>'key', coalesce(args->>'reason', ''), scheduled_at FROM river_job
		WHERE kind = 'poll_series' AND state IN ('scheduled', 'available') AND scheduled_at <= $1
		ORDER BY scheduled_at, id`, s.now)
	require.NoError(s.t, err)
	type job struct {
		id          int64
		key, reason string
		at          time.Time
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		return j, r.Scan(&j.id, &j.key, &j.reason, &j.at)
	})
	require.NoError(s.t, err)
	for _, j := range jobs {
		s.e.exec(`UPDATE river_job SET state = 'completed', attempt = 1, attempted_at = $2, finalized_at = $2 WHERE id = $1`, j.id, j.at)
		var last *time.Time
		require.NoError(s.t, s.e.st.Pool.QueryRow(ctx, `SELECT last_poll_at FROM series WHERE key = $1`, j.key).Scan(&last))
		rel := s.releases[j.key]
		if n := s.seen[j.key]; n < len(rel) && !rel[n].After(j.at) {
			s.seen[j.key] = n + 1
			s.e.exec(`INSERT INTO latest_chapter_history (series_key, label, first_seen_at, prev_poll_at) VALUES ($1, $2, $3, $4)`,
				j.key, fmt.Sprintf("Release %d", n+1), j.at, last)
			s.e.exec(`UPDATE series SET latest_label = $2, latest_at = $3 WHERE key = $1`, j.key, fmt.Sprintf("Release %d", n+1), j.at)
		}
		s.e.exec(`UPDATE series SET last_poll_at = $2, last_success_at = $2, next_poll_at = NULL, next_poll_reason = '' WHERE key = $1`, j.key, j.at)
		s.polls = append(s.polls, simPoll{key: j.key, reason: j.reason, at: j.at})
	}
}

func (s *adaptiveSim) pollsOf(key string, from, to time.Time) []simPoll {
	var out []simPoll
	for _, p := range s.polls {
		if p.key == key && !p.at.Before(from) && p.at.Before(to) {
			out = append(out, p)
		}
	}
	return out
}

// firstPollFrom is the Series' first poll at or after at: the one that
// found a release at at; nil when none came.
func (s *adaptiveSim) firstPollFrom(key string, at time.Time) *simPoll {
	for i := range s.polls {
		if p := &s.polls[i]; p.key == key && !p.at.Before(at) {
			return p
		}
	}
	return nil
}

func (s *adaptiveSim) next(key string) (*time.Time, string) {
	s.t.Helper()
	var at *time.Time
	var reason string
	require.NoError(s.t, s.e.st.Pool.QueryRow(context.Background(),
		`SELECT next_poll_at, next_poll_reason FROM series WHERE key = $1`, key).Scan(&at, &reason))
	return at, reason
}

// A Series with eight weeks of releases on Tuesdays around 14:00 is polled
// densely in a window around 14:00 on Tuesday, finds the new chapter
// minutes after it appears, and is checked only now and then otherwise.
func TestAdaptiveWeeklySeriesIsPolledInItsWindow(t *testing.T) {
	t.Parallel()
	monday := nextMonday(12)
	tuesday := monday.Add(26 * time.Hour) // Tuesday 14:00
	s := newAdaptiveSim(t, monday, 1800)
	var seen []time.Time
	jitter := []time.Duration{-12, 5, 20, -3, 9, -18, 14} // minutes
	for w := 7; w >= 1; w-- {
		release := tuesday.Add(-time.Duration(w)*7*24*time.Hour + jitter[w-1]*time.Minute)
		seen = append(seen, release.Add(25*time.Minute))
	}
	key := s.series("weekly", 3, monday.Add(-8*7*24*time.Hour), monday.Add(-40*time.Minute), seen)
	release := tuesday.Add(7 * time.Minute)
	s.releases[key] = []time.Time{release}

	s.run(monday.Add(36 * time.Hour)) // to Wednesday 00:00

	var raw []byte
	require.NoError(t, s.e.st.Pool.QueryRow(context.Background(), `SELECT rhythm FROM series WHERE key = $1`, key).Scan(&raw))
	desc, kind, ok := DescribeRhythm(raw)
	require.True(t, ok)
	require.Equal(t, schedule.KindWeekly, kind, "the rhythm is learned from the history and cached: %s", raw)
	// Around 14:00: the history's releases, each known within an hour,
	// centre a minute or two either side of it.
	hhmm, weekly := strings.CutPrefix(desc, "weekly, Tuesdays ~")
	require.True(t, weekly, desc)
	clock, err := time.Parse("15:04", hhmm)
	require.NoError(t, err, desc)
	require.LessOrEqual(t, (clock.Sub(time.Date(0, 1, 1, 14, 0, 0, 0, time.UTC))).Abs(), 15*time.Minute, desc)

	// Outside the window: a few safety checks, hours apart.
	before := s.pollsOf(key, monday, tuesday.Add(-3*time.Hour))
	require.NotEmpty(t, before, "a slow safety poll notices a changed rhythm")
	require.LessOrEqual(t, len(before), 12, "%d polls in the 23 quiet hours before the window", len(before))
	for i, p := range before {
		require.Equal(t, schedule.ReasonSafety, p.reason, "poll at %s", p.at)
		if i > 0 {
			require.GreaterOrEqual(t, p.at.Sub(before[i-1].at), time.Hour, "safety polls are hours apart")
		}
	}

	// In the window: dense polls until the chapter is found, minutes after
	// its release.
	window := s.pollsOf(key, tuesday.Add(-2*time.Hour), tuesday.Add(2*time.Hour))
	var found *simPoll
	inWindow := 0
	for i := range window {
		if window[i].reason == schedule.ReasonWindow {
			inWindow++
		}
		if found == nil && !window[i].at.Before(release) {
			found = &window[i]
		}
	}
	require.GreaterOrEqual(t, inWindow, 6, "polls around 14:00: %v", window)
	require.NotNil(t, found, "a poll after the release: %v", window)
	require.Equal(t, schedule.ReasonWindow, found.reason)
	require.LessOrEqual(t, found.at.Sub(release), 15*time.Minute, "detected %s after the release", found.at.Sub(release))
	for i := 1; i < len(window) && window[i].at.Before(release); i++ {
		if window[i].at.After(tuesday.Add(-30 * time.Minute)) {
			require.LessOrEqual(t, window[i].at.Sub(window[i-1].at), 15*time.Minute, "dense polling near the slot")
		}
	}
	var latest string
	require.NoError(t, s.e.st.Pool.QueryRow(context.Background(), `SELECT latest_label FROM series WHERE key = $1`, key).Scan(&latest))
	require.Equal(t, "Release 1", latest)

	// Once the week's chapter is seen, the window closes: quiet again.
	after := s.pollsOf(key, tuesday.Add(3*time.Hour), monday.Add(36*time.Hour))
	require.LessOrEqual(t, len(after), 4, "after the release: %v", after)
	for _, p := range after {
		require.Equal(t, schedule.ReasonSafety, p.reason)
	}
	at, reason := s.next(key)
	require.NotNil(t, at)
	require.Equal(t, schedule.ReasonSafety, reason, "the next poll is recorded with its reason")
}

// A Series with too little history is polled once per POLL_INTERVAL, and
// says so.
func TestAdaptiveWithoutHistoryFallsBackToTheInterval(t *testing.T) {
	t.Parallel()
	start := time.Now().UTC().Truncate(time.Minute)
	s := newAdaptiveSim(t, start, 1800)
	key := s.series("young", 1, start.Add(-48*time.Hour), start.Add(-20*time.Minute), []time.Time{start.Add(-30 * time.Hour)})

	_, err := s.a.Run(context.Background(), s.e.client)
	require.NoError(t, err)
	at, reason := s.next(key)
	require.Equal(t, schedule.ReasonNoHistory, reason)
	require.WithinDuration(t, start.Add(40*time.Minute), *at, time.Second, "an interval after the last poll")
	require.Empty(t, s.e.pollJobs(), "not due within this horizon: nothing queued yet")

	s.run(start.Add(5 * time.Hour))
	polls := s.pollsOf(key, start, start.Add(6*time.Hour))
	require.Len(t, polls, 5, "%v", polls)
	prev := start.Add(-20 * time.Minute)
	for _, p := range polls {
		require.Equal(t, schedule.ReasonNoHistory, p.reason)
		require.InDelta(t, time.Hour.Minutes(), p.at.Sub(prev).Minutes(), 3.1, "polls an interval apart (within a horizon)")
		prev = p.at
	}
}

// While its Site backs off, every Series of it shows "site paused until
// …", nothing is queued, and polling resumes at the end of the pause.
func TestAdaptivePausedSiteSaysUntilWhen(t *testing.T) {
	t.Parallel()
	start := time.Now().UTC().Truncate(time.Minute)
	s := newAdaptiveSim(t, start, 1800)
	never := s.series("never-polled", 2, start.Add(-time.Hour), start.Add(-time.Hour), nil)
	s.e.exec(`UPDATE series SET last_poll_at = NULL WHERE key = $1`, never)
	snoozed := s.series("snoozed", 1, start.Add(-48*time.Hour), start.Add(-2*time.Hour), nil)
	until := start.Add(2 * time.Hour)
	s.e.exec(`INSERT INTO site_state (site, paused_until, refusals, last_problem) VALUES ($1, $2, 1, 'http_429: too many requests')`, s.site.Name, until)
	// The refused poll waits, snoozed to the end of the pause.
	_, err := s.e.client.Insert(context.Background(), PollArgs{Key: snoozed, Reason: "schedule"}, nil)
	require.NoError(t, err)
	s.e.exec(`UPDATE river_job SET state = 'scheduled', scheduled_at = $1, attempted_at = $2 WHERE args->>'key' = $3`, until, start, snoozed)

	_, err = s.a.Run(context.Background(), s.e.client)
	require.NoError(t, err)
	want := "site paused until " + until.Format(time.RFC3339)
	for _, key := range []string{never, snoozed} {
		at, reason := s.next(key)
		require.Equal(t, want, reason, key)
		require.WithinDuration(t, until, *at, time.Second, key)
	}
	require.Len(t, s.e.pollJobs(), 1, "nothing queued while paused but the snoozed poll")

	s.run(until.Add(10 * time.Minute))
	polls := s.pollsOf(never, start, until.Add(time.Hour))
	require.NotEmpty(t, polls, "polled once the pause ends")
	require.False(t, polls[0].at.Before(until), "not before the pause ends: %s", polls[0].at)
}

// More Series want polls than the Site's budget allows: over a simulated
// day no hour ever holds more polls than the budget, the budget is spent,
// and the Series more Readers hold are the ones kept.
func TestAdaptiveBudgetHoldsEndToEnd(t *testing.T) {
	t.Parallel()
	const budget = 20
	start := time.Now().UTC().Truncate(time.Minute)
	s := newAdaptiveSim(t, start, budget)
	var popular, lone []string
	for i := range 10 {
		popular = append(popular, s.series(fmt.Sprintf("popular-%d", i), 5, start.Add(-24*time.Hour), start.Add(-time.Duration(i)*6*time.Minute), nil))
	}
	for i := range 50 {
		lone = append(lone, s.series(fmt.Sprintf("lone-%d", i), 1, start.Add(-24*time.Hour), start.Add(-time.Duration(i)*time.Minute), nil))
	}
	// 60 Series without history want a poll an hour each: three times the
	// budget.
	end := start.Add(24 * time.Hour)
	s.run(end)

	var times []time.Time
	for _, p := range s.polls {
		if p.at.Before(end) {
			times = append(times, p.at)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	busiest, lo := 0, 0
	for hi := range times {
		for times[hi].Sub(times[lo]) >= time.Hour {
			lo++
		}
		busiest = max(busiest, hi-lo+1)
	}
	require.LessOrEqual(t, busiest, budget, "no hour holds more polls than the budget")
	require.GreaterOrEqual(t, len(times), 22*budget, "the budget is spent: %d polls in 24 h", len(times))

	count := func(keys []string) float64 {
		n := 0
		for _, k := range keys {
			n += len(s.pollsOf(k, start, end))
		}
		return float64(n) / float64(len(keys))
	}
	perPopular, perLone := count(popular), count(lone)
	require.GreaterOrEqual(t, perPopular, 20.0, "a Series five Readers hold keeps its hourly poll: %.1f a day", perPopular)
	require.Less(t, perLone, perPopular/2, "the least valuable polls are dropped first: %.1f vs %.1f a day", perLone, perPopular)
	reasons := map[string]int{}
	rows, err := s.e.st.Pool.Query(context.Background(), `SELECT next_poll_reason FROM series WHERE key = ANY($1)`, lone)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	for _, r := range got {
		reasons[r]++
	}
	require.Positive(t, reasons[schedule.ReasonOverBudget], "a dropped poll says why: %v", reasons)
}

// A Reader hint is recorded, not polled at once, and the plan brings the
// Series' poll forward within the budget: two hinted Series on a Site with
// four polls an hour get one slot each, a quarter of an hour apart, well
// before the interval would have polled them; an unhinted one keeps its
// interval.
func TestAdaptiveHintMovesThePollForwardWithinBudget(t *testing.T) {
	t.Parallel()
	// On a slot boundary of a budget of four an hour, and in the past, so
	// the hints (stamped with the database's clock) come after the polls.
	start := time.Now().UTC().Truncate(15 * time.Minute)
	s := newAdaptiveSim(t, start, 4)
	last := start.Add(-10 * time.Minute)
	a := s.series("hinted-a", 1, start.Add(-48*time.Hour), last, nil)
	b := s.series("hinted-b", 1, start.Add(-48*time.Hour), last, nil)
	c := s.series("unhinted", 1, start.Add(-48*time.Hour), last, nil)
	q := &Queue{Client: s.e.client, Store: s.e.st, HintsPlanned: true, Logger: quietLogger()}
	require.NoError(t, q.Hint(context.Background(), a))
	require.NoError(t, q.Hint(context.Background(), b))
	require.Empty(t, s.e.pollJobs(), "a hint alone queues nothing: the plan decides")

	s.now = start.Add(5 * time.Minute)
	s.run(start.Add(65 * time.Minute))
	pa, pb, pc := s.pollsOf(a, start, start.Add(time.Hour)), s.pollsOf(b, start, start.Add(time.Hour)), s.pollsOf(c, start, start.Add(70*time.Minute))
	require.Len(t, pa, 1, "%v", s.polls)
	require.Len(t, pb, 1, "%v", s.polls)
	for _, p := range []simPoll{pa[0], pb[0]} {
		require.Equal(t, schedule.ReasonHint, p.reason)
		require.True(t, p.at.Before(last.Add(time.Hour)), "before the interval's poll: %s after the last", p.at.Sub(last))
	}
	gap := pa[0].at.Sub(pb[0].at)
	if gap < 0 {
		gap = -gap
	}
	require.GreaterOrEqual(t, gap, 15*time.Minute, "four polls an hour: one slot each")
	require.Len(t, pc, 1, "%v", s.polls)
	require.Equal(t, schedule.ReasonNoHistory, pc[0].reason)
	require.False(t, pc[0].at.Before(last.Add(time.Hour)), "the unhinted Series keeps its interval")
	for i, p := range s.polls {
		for _, o := range s.polls[i+1:] {
			d := o.at.Sub(p.at)
			require.True(t, d >= 15*time.Minute || d <= -15*time.Minute, "polls %s and %s share a quarter hour", p.at, o.at)
		}
	}
}

// Horizons are claimed back to back: planning again at the same moment (a
// second replica, an Owner's resume) hands out nothing twice.
func TestAdaptivePlansEachHorizonOnce(t *testing.T) {
	t.Parallel()
	start := time.Now().UTC().Truncate(time.Minute)
	s := newAdaptiveSim(t, start, 1800)
	for i := range 5 {
		s.series(fmt.Sprintf("due-%d", i), 1, start.Add(-48*time.Hour), start.Add(-2*time.Hour), nil)
	}
	n, err := s.a.Run(context.Background(), s.e.client)
	require.NoError(t, err)
	require.Equal(t, 5, n, "five overdue Series, five slots")
	jobs := s.e.pollJobs()
	n, err = s.a.Run(context.Background(), s.e.client)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, jobs, s.e.pollJobs())

	ctx := context.Background()
	_, ok, err := s.e.st.ClaimPlan(ctx, s.site.Name, start, 90*time.Second, 3*time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "three minutes are planned ahead")
	first, ok, err := s.e.st.ClaimPlan(ctx, s.site.Name, start.Add(2*time.Minute), 90*time.Second, 3*time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, start.Add(3*time.Minute), first.UTC(), "the next horizon starts where the last ended")
}

// The interval policy's polls queued far ahead (POLL_POLICY switched to
// adaptive) are replaced by the adaptive plan's.
func TestAdaptiveReplacesTheIntervalPolicysPolls(t *testing.T) {
	t.Parallel()
	start := time.Now().UTC().Truncate(time.Minute)
	s := newAdaptiveSim(t, start, 1800)
	key := s.series("switched", 1, start.Add(-48*time.Hour), start.Add(-2*time.Hour), nil)
	_, err := s.e.client.Insert(context.Background(), PollArgs{Key: key, Reason: "schedule"}, &river.InsertOpts{ScheduledAt: start.Add(50 * time.Minute)})
	require.NoError(t, err)

	_, err = s.a.Run(context.Background(), s.e.client)
	require.NoError(t, err)
	var states []string
	for _, j := range s.e.pollJobs() {
		states = append(states, j.State)
	}
	slices.Sort(states)
	require.Equal(t, []string{"cancelled", "scheduled"}, states)
	_, reason := s.next(key)
	require.Equal(t, schedule.ReasonNoHistory, reason)
	for _, j := range s.e.pollJobs() {
		if j.State == "scheduled" {
			require.True(t, j.ScheduledAt.Before(start.Add(3*time.Minute)), "the overdue Series is polled in this horizon")
		}
	}
}

// Budgets: SITE_BUDGET wins, else every request the pace allows; a name
// that is no Site is refused.
func TestBudgets(t *testing.T) {
	t.Parallel()
	asura, _ := latest.Default().Lookup("asura")
	kagane, _ := latest.Default().Lookup("kagane")
	novelfull, _ := latest.Default().Lookup("novelfull")
	b, err := NewBudgets(latest.Default(), map[string]int{"asura": 600}, fetch.Paces{"novelfull": 0})
	require.NoError(t, err)
	none := fetch.Settings{}
	require.Equal(t, Budget{PerHour: 600, Source: BudgetByConfig}, b.Of(none, asura))
	require.Equal(t, Budget{PerHour: int(time.Hour / kagane.Pace), Source: BudgetByPace}, b.Of(none, kagane), "from the pace")
	require.Equal(t, Budget{PerHour: UnpacedBudget, Source: BudgetByPace}, b.Of(none, novelfull), "an unpaced Site")
	// The Owner's run-time settings win: a budget of their own, or a pace
	// the default budget follows.
	pace, budget := 10*time.Second, 42
	owner := fetch.Settings{Sites: map[string]fetch.SiteSettings{"asura": {Budget: &budget}, "kagane": {Pace: &pace}}}
	require.Equal(t, Budget{PerHour: 42, Source: BudgetByOwner}, b.Of(owner, asura))
	require.Equal(t, Budget{PerHour: 360, Source: BudgetByPace}, b.Of(owner, kagane))
	_, err = NewBudgets(latest.Default(), map[string]int{"tapas": 10}, nil)
	require.ErrorContains(t, err, `SITE_BUDGET names "tapas"`)
	_, err = NewBudgets(latest.Default(), map[string]int{"asura": 0}, nil)
	require.ErrorIs(t, err, schedule.ErrBudget)

	for raw, want := range map[string]string{
		"":   "",
		"{}": "",
		`{"Kind":"weekly","Period":604800000000000,"Slots":[{"Offset":137700000000000,"Spread":1800000000000,"Hit":0.9}]}`: "weekly, Tuesdays ~14:15",
		`{"Kind":"not enough history"}`: "not enough history",
	} {
		desc, _, ok := DescribeRhythm([]byte(raw))
		require.Equal(t, want != "", ok, raw)
		require.Equal(t, want, desc, raw)
	}
}

// On River with its real workers: the periodic plan queues a held Series'
// poll, the Poller runs it and leaves the next poll to the plan, and the
// next plan records it with its reason. A horizon of seconds keeps the
// test short.
func TestAdaptivePlanOnRiver(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	budgets, err := NewBudgets(e.reg, nil, fetch.Paces{})
	require.NoError(t, err)
	a := &Adaptive{Store: e.st, Registry: e.reg, Planner: schedule.Planner{Interval: time.Hour, Horizon: 3 * time.Second}, Budgets: budgets, Logger: quietLogger()}
	e.poller.Adaptive = true
	workers := river.NewWorkers()
	river.AddWorker(workers, &PollWorker{Poller: e.poller})
	river.AddWorker(workers, &PlanWorker{Scheduler: &Scheduler{Store: e.st, Interval: time.Hour}, Adaptive: a})
	client, err := river.NewClient(riverpgxv5.New(e.st.Pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:           workers,
		PeriodicJobs:      []*river.PeriodicJob{PeriodicPlan(a.PlanEvery())},
		FetchCooldown:     20 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		Logger:            quietLogger(),
	})
	require.NoError(t, err)
	e.client = client
	ser := e.hold(site, "on-river", 2)
	e.fetch.set(ser.SeriesURL, seriesBody("On River", "", 4), nil)
	e.start()

	eventually(t, "the plan's poll runs", func() bool { return e.series(ser.Key).LatestLabel == "Chapter 4" })
	eventually(t, "the next plan records the next poll", func() bool { return e.series(ser.Key).NextPollReason == schedule.ReasonNoHistory })
	got := e.series(ser.Key)
	require.WithinDuration(t, got.LastPollAt.Add(time.Hour), *got.NextPollAt, 5*time.Second, "an interval after the poll: too little history")
	require.Equal(t, 1, e.fetch.count(ser.SeriesURL), "polled once")
	var reason string
	require.NoError(t, e.st.Pool.QueryRow(context.Background(),
		`SELECT args->>'reason' FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1`, ser.Key).Scan(&reason))
	require.Equal(t, schedule.ReasonNoHistory, reason, "the job carries the plan's reason")
	var raw []byte
	require.NoError(t, e.st.Pool.QueryRow(context.Background(), `SELECT rhythm FROM series WHERE key = $1`, ser.Key).Scan(&raw))
	desc, kind, ok := DescribeRhythm(raw)
	require.True(t, ok)
	require.Equal(t, schedule.KindUnknown, kind, desc)
}

// A tick writes, and locks, only the plans that changed: a Series whose next
// poll stays as it was keeps its row version untouched (xmin: no new
// version; xmax: no row lock), so a tick over 100,000 Series costs writes in
// proportion to what moved (docs/adr/0033).
func TestAdaptiveTickWritesOnlyChangedPlans(t *testing.T) {
	t.Parallel()
	monday := nextMonday(9)
	tuesday := monday.Add(29 * time.Hour) // Tuesday 14:00
	s := newAdaptiveSim(t, monday, 1800)
	var keys []string
	for i := range 12 {
		var seen []time.Time
		for w := 8; w >= 1; w-- {
			seen = append(seen, tuesday.Add(-time.Duration(w)*7*24*time.Hour+time.Duration(i)*time.Minute))
		}
		keys = append(keys, s.series(fmt.Sprintf("weekly-%d", i), 1+i%3, monday.Add(-9*7*24*time.Hour), monday.Add(-30*time.Minute), seen))
	}
	// Series with no history: planned at the interval, due within the
	// horizon.
	for i := range 4 {
		keys = append(keys, s.series(fmt.Sprintf("new-%d", i), 1, monday.Add(-time.Hour), monday.Add(-50*time.Minute), nil))
	}

	type row struct {
		xmin, xmax string
		at         *time.Time
		reason     string
	}
	rows := func() map[string]row {
		out := map[string]row{}
		for _, k := range keys {
			var r row
			require.NoError(t, s.e.st.Pool.QueryRow(context.Background(),
				`SELECT xmin::text, xmax::text, next_poll_at, next_poll_reason FROM series WHERE key = $1`, k).
				Scan(&r.xmin, &r.xmax, &r.at, &r.reason))
			out[k] = r
		}
		return out
	}
	_, err := s.a.Run(context.Background(), s.e.client)
	require.NoError(t, err)
	first := rows()
	for k, r := range first {
		require.NotNil(t, r.at, "%s is planned by the first tick", k)
	}

	// The next horizon, nothing polled meanwhile.
	s.now = s.now.Add(schedule.DefaultHorizon)
	_, err = s.a.Run(context.Background(), s.e.client)
	require.NoError(t, err)
	second := rows()
	same := 0
	for _, k := range keys {
		a, b := first[k], second[k]
		if a.reason == b.reason && a.at.Equal(*b.at) {
			same++
			require.Equal(t, a.xmin, b.xmin, "%s: an unchanged plan is not written", k)
			require.Equal(t, a.xmax, b.xmax, "%s: an unchanged plan is not locked", k)
		}
	}
	require.Positive(t, same, "some plans stay as they were: %v", second)
}

// A forecast is rewritten when its reason changes, or when it moves by more
// than a minute and more than a tenth of its distance from now: a poll five
// hours ahead drifting by three minutes is not rewritten, one ten minutes
// ahead is.
func TestMovedForecastTolerance(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	for _, tc := range []struct {
		name    string
		stored  *time.Time
		reason  string
		next    time.Duration
		nreason string
		want    bool
	}{
		{"none stored", nil, "", time.Hour, "safety check", true},
		{"new reason", at(5 * time.Hour), "safety check", 5 * time.Hour, "release window", true},
		{"same", at(5 * time.Hour), "safety check", 5 * time.Hour, "safety check", false},
		{"within a minute", at(10 * time.Minute), "safety check", 10*time.Minute + 50*time.Second, "safety check", false},
		{"3 min of 5 h", at(5 * time.Hour), "safety check", 5*time.Hour + 3*time.Minute, "safety check", false},
		{"40 min of 5 h", at(5 * time.Hour), "safety check", 5*time.Hour + 40*time.Minute, "safety check", true},
		{"3 min of 10 min", at(10 * time.Minute), "safety check", 13 * time.Minute, "safety check", true},
		{"brought forward a lot", at(5 * time.Hour), "safety check", 20 * time.Minute, "safety check", true},
		{"stored one overdue", at(-5 * time.Minute), "safety check", 3 * time.Minute, "safety check", true},
	} {
		require.Equal(t, tc.want, moved(now, tc.stored, tc.reason, now.Add(tc.next), tc.nreason), tc.name)
	}
}

// The Series a tick queues still count in the Site's price at the next
// tick, while their polls wait: the forecasts of the others do not move
// with which Series happen to be queued (the most read, which weigh most),
// so the next tick rewrites none of them (docs/adr/0033).
func TestAdaptiveQueuedSeriesDoNotMoveTheOthersForecasts(t *testing.T) {
	t.Parallel()
	monday := nextMonday(9)
	tuesday := monday.Add(29 * time.Hour) // Tuesday 14:00
	// One slot a horizon, and a short interval (the price's floor): the
	// price, not its floor, places the safety checks.
	s := newAdaptiveSim(t, monday, 20)
	s.a.Planner.Interval = 5 * time.Minute
	history := func(i int) []time.Time {
		var seen []time.Time
		for w := 8; w >= 1; w-- {
			seen = append(seen, tuesday.Add(-time.Duration(w)*7*24*time.Hour+time.Duration(i)*time.Minute))
		}
		return seen
	}
	created := monday.Add(-9 * 7 * 24 * time.Hour)
	var quiet, hot []string
	for i := range 16 {
		quiet = append(quiet, s.series(fmt.Sprintf("quiet-%d", i), 1, created, monday.Add(-time.Duration(10+i)*time.Minute), history(i)))
	}
	// Read by many and not polled for a day: due at once, queued by the
	// first tick and not polled before the second.
	for i := range 1 {
		hot = append(hot, s.series(fmt.Sprintf("hot-%d", i), 400, created, monday.Add(-20*time.Hour), history(i)))
	}

	type row struct {
		xmin   string
		at     *time.Time
		reason string
	}
	rows := func(keys []string) map[string]row {
		out := map[string]row{}
		for _, k := range keys {
			var r row
			require.NoError(t, s.e.st.Pool.QueryRow(context.Background(),
				`SELECT xmin::text, next_poll_at, next_poll_reason FROM series WHERE key = $1`, k).Scan(&r.xmin, &r.at, &r.reason))
			out[k] = r
		}
		return out
	}
	_, err := s.a.Run(context.Background(), s.e.client)
	require.NoError(t, err)
	for _, k := range hot {
		jobs, err := s.e.st.QueuedPollJobs(context.Background())
		require.NoError(t, err)
		require.True(t, slices.ContainsFunc(jobs, func(j store.QueuedPoll) bool { return j.Key == k }), "%s is queued by the first tick", k)
	}
	first := rows(quiet)
	for k, r := range first {
		require.NotNil(t, r.at, k)
		require.Greater(t, r.at.Sub(s.now), time.Hour, "%s: a forecast hours ahead, not due", k)
	}

	s.now = s.now.Add(schedule.DefaultHorizon)
	_, err = s.a.Run(context.Background(), s.e.client)
	require.NoError(t, err)
	for k, r := range rows(quiet) {
		require.Equal(t, first[k].xmin, r.xmin, "%s: its forecast is not rewritten (%v %s, was %v %s)", k, r.at, r.reason, first[k].at, first[k].reason)
	}
}

package schedule

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadTrace(t *testing.T) {
	t.Parallel()
	tr, err := ReadTrace(strings.NewReader(TraceHeader + "\n" +
		"a:1,a,3,2026-01-06T14:00:00Z\n" +
		"a:1,a,3,2026-01-05T14:00:00+02:00\n" +
		"a:2,a,0,2026-01-07T01:00:00Z\n" +
		"b:9,b,1,\n"))
	require.NoError(t, err)
	require.Len(t, tr.Series, 3)
	require.Equal(t, []time.Time{time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC), time.Date(2026, 1, 6, 14, 0, 0, 0, time.UTC)}, tr.Series[0].Releases, "sorted, in UTC")
	require.Equal(t, 0, tr.Series[1].Readers, "a Series no Reader holds")
	require.Empty(t, tr.Series[2].Releases, "dormant")
	require.Equal(t, time.Date(2026, 1, 7, 1, 0, 0, 0, time.UTC), tr.Last)
}

// A malformed row is refused with its line number, never skipped.
func TestReadTraceRefusesMalformedRowsWithTheLineNumber(t *testing.T) {
	t.Parallel()
	good := "a:1,a,3,2026-01-06T14:00:00Z\n"
	for name, c := range map[string]struct {
		body string
		line int
	}{
		"header":            {"series,site,released_at\n" + good, 1},
		"empty":             {"", 1},
		"fields":            {TraceHeader + "\n" + good + "a:1,a,3\n", 3},
		"time":              {TraceHeader + "\n" + good + good + "a:1,a,3,yesterday\n", 4},
		"readers":           {TraceHeader + "\n" + "a:1,a,-2,2026-01-06T14:00:00Z\n", 2},
		"readers word":      {TraceHeader + "\n" + good + "a:2,a,many,2026-01-06T14:00:00Z\n", 3},
		"site changes":      {TraceHeader + "\n" + good + "a:1,b,3,2026-01-07T14:00:00Z\n", 3},
		"readers change":    {TraceHeader + "\n" + good + "a:1,a,4,2026-01-07T14:00:00Z\n", 3},
		"dormant releasing": {TraceHeader + "\n" + "b:1,b,1,\n" + good + "b:1,b,1,2026-01-07T14:00:00Z\n", 4},
		"releasing dormant": {TraceHeader + "\n" + good + "a:1,a,3,\n", 3},
		"no series":         {TraceHeader + "\n" + ",a,3,2026-01-06T14:00:00Z\n", 2},
		"site word":         {TraceHeader + "\n" + "a:1,a b,3,2026-01-06T14:00:00Z\n", 2},
		"quote":             {TraceHeader + "\n" + good + "a:1,\"a,3,2026\n", 3},
		"year":              {TraceHeader + "\n" + "a:1,a,3,0001-01-01T00:00:00Z\n", 2},
	} {
		_, err := ReadTrace(strings.NewReader(c.body))
		require.ErrorIs(t, err, ErrTrace, name)
		require.Contains(t, err.Error(), fmt.Sprintf("line %d:", c.line), "%s: %v", name, err)
	}
	_, err := ReadTrace(strings.NewReader(TraceHeader + "\nb:1,b,1,\n"))
	require.ErrorIs(t, err, ErrTrace, "a trace without a release")
}

// listingTrace is a Site of weekly Series, most held, releasing at a few
// popular hours, plus Series no Reader holds that crowd the listing.
func listingTrace(held, unheld, weeks int) *Trace {
	var b strings.Builder
	b.WriteString(TraceHeader + "\n")
	for i := range held + unheld {
		readers := 1 + i%7
		if i >= held {
			readers = 0
		}
		for w := range weeks {
			at := simStart.Add(time.Duration(w)*week + time.Duration(i%7)*day + time.Duration(9+i%3*5)*time.Hour + time.Duration(i*37%50)*time.Minute)
			fmt.Fprintf(&b, "s:%d,site,%d,%s\n", i, readers, at.Format(time.RFC3339))
		}
	}
	tr, err := ReadTrace(strings.NewReader(b.String()))
	if err != nil {
		panic(err)
	}
	return tr
}

// With a listing, a release the listing shows is polled within one
// listing period of it; the Site's hour stays within its budget, with the
// listing's reads counted; nothing is unseen; and the listing finds
// releases sooner for fewer requests than the Series' own polls.
func TestSimulateWithAListing(t *testing.T) {
	t.Parallel()
	tr := listingTrace(300, 150, 6)
	cfg := SimConfig{Trace: tr, Budget: 0.2}
	without, err := Simulate(context.Background(), cfg)
	require.NoError(t, err)
	cfg.Listing = 40
	with, err := Simulate(context.Background(), cfg)
	require.NoError(t, err)
	a := with.Adaptive
	require.Equal(t, 300, with.Held)
	require.Zero(t, a.Undetected)
	require.Zero(t, a.OverBudget, "no hour above the Site's budget")
	require.LessOrEqual(t, a.MaxHour, with.BudgetPerHour)
	require.Positive(t, a.ListingPolls)
	require.Positive(t, a.Reasons[ReasonListing])

	plan := Planner{}.PlanListing(with.BudgetPerHour, with.Held, 0, 40)
	for _, s := range a.samples {
		if s.reason == ReasonListing {
			require.LessOrEqual(t, s.latency, plan.Period+DefaultHorizon+time.Minute, "a release the listing shows is polled within a listing period (and a plan)")
		}
	}
	require.Less(t, a.Median, without.Adaptive.Median)
	require.Less(t, a.P90, without.Adaptive.P90)
	require.Less(t, a.PerSeriesHour, without.Adaptive.PerSeriesHour)
}

func TestPlanListing(t *testing.T) {
	t.Parallel()
	b := Planner{}.PlanListing(500, 5000, 0, 40)
	require.Equal(t, ListingFloor, b.Period, "a large budget reads the listing at its floor")
	require.Less(t, b.Reserve, 500)
	require.GreaterOrEqual(t, b.SeriesBudget(500), 5000/int(ListedGap.Hours()), "the covered Series keep their safety polls")

	small := Planner{}.PlanListing(20, 100, 0, 40)
	require.Greater(t, small.Period, ListingFloor, "a small budget reads it less often")
	require.LessOrEqual(t, small.Reserve, 20)

	// 100 held Series at 10 requests an hour: their safety polls need
	// about two an hour, and the reads take what they leave (every
	// 40 minutes while the Series kept 1.5 times their need and two more).
	tight := Planner{}.PlanListing(10, 100, 0, 40)
	require.LessOrEqual(t, tight.Period, 25*time.Minute)
	require.GreaterOrEqual(t, tight.SeriesBudget(10), 3, "the covered Series keep their safety polls")
	require.LessOrEqual(t, tight.Reserve, 10)

	// A Site releasing fast, whose 40 entries reach back 20 minutes, is
	// read often enough that nothing scrolls past between two reads.
	fast := Planner{}.PlanListing(60, 100, 120, 40)
	require.LessOrEqual(t, fast.Period, 5*time.Minute)
	require.Equal(t, ListingFloor, Planner{}.PlanListing(60, 100, 100000, 40).Period, "never below the floor")

	// A Reader with a few Series on a Site paced at a request a second:
	// the listing costs no more than polling each of them once per
	// Interval would, not the 30 reads an hour the budget allows.
	require.Equal(t, time.Hour, Planner{}.PlanListing(3600, 1, 0, 40).Period)
	require.Equal(t, 12*time.Minute, Planner{}.PlanListing(3600, 5, 0, 40).Period)
	require.Equal(t, 30*time.Minute, Planner{Interval: 2 * time.Hour}.PlanListing(3600, 4, 0, 40).Period)
	require.Equal(t, time.Hour, Planner{Interval: 6 * time.Hour}.PlanListing(3600, 1, 0, 40).Period, "at least a read an hour")
	// Unless releases would scroll past: a listing read too rarely for its
	// reach misses releases, so its reach still decides.
	require.Equal(t, 4*time.Minute, Planner{}.PlanListing(3600, 1, 150, 40).Period)
}

// The planner polls a Series the listing shows newer at once, before any
// forecast, and drops a covered Series to its safety poll.
func TestPlanWithListing(t *testing.T) {
	t.Parallel()
	last := week8.Add(-time.Hour)
	shown := weeklySeries("a:shown", 1, last)
	shown.ListingNewer, shown.Listed = true, true
	covered := weeklySeries("a:covered", 50, last)
	covered.Listed = true
	// Tuesday 14:00 is the covered Series' window: without the listing it
	// would be polled there.
	now := week8.Add(day + 13*time.Hour + 50*time.Minute)
	shown.LastPoll, covered.LastPoll = now.Add(-time.Hour), now.Add(-time.Hour)
	window := weeklySeries("a:window", 50, now.Add(-time.Hour))
	// One slot in the horizon (every 3 minutes).
	d, err := Planner{}.Plan(now, Site{Name: "a", PerHour: 20}, []Series{covered, shown, window})
	require.NoError(t, err)
	require.Equal(t, ReasonListed, d[0].Reason)
	require.Equal(t, covered.LastPoll.Add(ListedGap), d[0].At)
	require.False(t, d[0].Due)
	require.Equal(t, ReasonListing, d[1].Reason)
	require.True(t, d[1].Due, "the one slot goes to the release the listing showed")
	require.Equal(t, ReasonOverBudget, d[2].Reason, "before a window fifty times as held")

	covered.Listed = false // the listing failed: per-Series planning again
	d, err = Planner{}.Plan(now, Site{Name: "a", PerHour: 1000}, []Series{covered})
	require.NoError(t, err)
	require.Contains(t, []string{ReasonWindow, ReasonSafety}, d[0].Reason)
	require.True(t, d[0].At.Before(now.Add(time.Hour)), "back to its window: %v", d[0])
}

// A listing read rarely (a small Site's, ADR 0029's second amendment)
// leaves a weekly Series it covers its window, and nothing else: no
// off-schedule polls between, which the listing shows. Read at its floor,
// the listing alone covers it. An irregular Series' hour of the day is
// not an expected release: covered, it keeps only its safety poll.
func TestPlanWithASlowListingKeepsTheWindows(t *testing.T) {
	t.Parallel()
	now := week8.Add(day + 13*time.Hour + 50*time.Minute) // Tuesday 13:50
	covered := weeklySeries("a:covered", 1, now.Add(-time.Hour))
	covered.Listed = true
	slow := Site{Name: "a", PerHour: 1000, ListingPeriod: 20 * time.Minute}

	d, err := Planner{}.Plan(now, slow, []Series{covered})
	require.NoError(t, err)
	require.Equal(t, ReasonWindow, d[0].Reason)
	require.WithinDuration(t, week8.Add(day+14*time.Hour), d[0].At, 30*time.Minute, "in its Tuesday 14:00 window")

	fast := slow
	fast.ListingPeriod = ListingFloor
	d, err = Planner{}.Plan(now, fast, []Series{covered})
	require.NoError(t, err)
	require.Equal(t, ReasonListed, d[0].Reason, "a listing read every 2 minutes finds it as fast")
	require.Equal(t, covered.LastPoll.Add(ListedGap), d[0].At)

	// Thursday: the next window is five days away, past the safety poll.
	thursday := week8.Add(3*day + 10*time.Hour)
	covered.LastPoll = thursday.Add(-time.Hour)
	d, err = Planner{}.Plan(thursday, slow, []Series{covered})
	require.NoError(t, err)
	require.Equal(t, ReasonListed, d[0].Reason, "no off-schedule polls between windows")
	require.Equal(t, covered.LastPoll.Add(ListedGap), d[0].At)

	history := observed(steadyAuthor(), 5*time.Minute, 0)
	at := history[len(history)-1].Seen.Add(29 * time.Hour) // its gap is due
	author := Series{Key: "a:author", Readers: 1, Since: t0, Releases: history, LastPoll: at.Add(-time.Hour), Listed: true}
	rh := Estimate(author.Since, at, author.Releases)
	require.Equal(t, KindIrregular, rh.Kind)
	d, err = Planner{}.Plan(at, slow, []Series{author})
	require.NoError(t, err)
	require.Equal(t, ReasonListed, d[0].Reason)
	require.Equal(t, author.LastPoll.Add(ListedGap), d[0].At)
}

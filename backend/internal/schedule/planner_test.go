package schedule

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var allowedReasons = []string{ReasonWindow, ReasonSafety, ReasonHint, ReasonNoHistory, ReasonOverBudget, ReasonOwner}

// weeklySeries has released every Tuesday at 14:00 for the eight weeks
// from t0, seen by polls every 5 minutes.
func weeklySeries(key string, readers int, lastPoll time.Time) Series {
	return Series{
		Key:      key,
		Readers:  readers,
		Since:    t0,
		Releases: observed(weekly(8, tue14, none), 5*time.Minute, 0),
		LastPoll: lastPoll,
	}
}

// week8 is the Monday of the week after the history above.
var week8 = t0.Add(8 * week)

func planOne(t *testing.T, p Planner, now time.Time, s Series) Decision {
	t.Helper()
	d, err := p.Plan(now, Site{Name: "asura", PerHour: 1000}, []Series{s})
	require.NoError(t, err)
	require.Len(t, d, 1)
	require.Equal(t, s.Key, d[0].Key)
	return d[0]
}

func TestPlanNotEnoughHistoryPollsAtTheInterval(t *testing.T) {
	t.Parallel()
	now := t0.Add(2 * day)
	s := Series{Key: "asura:new", Readers: 3, Since: t0, LastPoll: now.Add(-20 * time.Minute)}

	d := planOne(t, Planner{}, now, s)
	require.Equal(t, ReasonNoHistory, d.Reason)
	require.Equal(t, s.LastPoll.Add(DefaultInterval), d.At)
	require.False(t, d.Due)

	later := now.Add(40 * time.Minute)
	d = planOne(t, Planner{}, later, s)
	require.Equal(t, ReasonNoHistory, d.Reason)
	require.True(t, d.Due)
	require.False(t, d.At.Before(later))
	require.True(t, d.At.Before(later.Add(DefaultHorizon)))

	d = planOne(t, Planner{Interval: 10 * time.Minute}, now, s)
	require.True(t, d.Due, "POLL_INTERVAL is honoured")

	never := Series{Key: "asura:fresh", Readers: 1}
	d = planOne(t, Planner{}, now, never)
	require.Equal(t, ReasonNoHistory, d.Reason)
	require.True(t, d.Due, "a Series never polled is polled at once")
}

func TestPlanPollsDenselyInTheWindowAndSparselyOtherwise(t *testing.T) {
	t.Parallel()
	release := week8.Add(tue14)

	// Just before the expected release: the next poll is minutes away.
	now := release.Add(-2 * time.Minute)
	d := planOne(t, Planner{}, now, weeklySeries("asura:w", 1, now.Add(-DefaultMinGap)))
	require.Equal(t, ReasonWindow, d.Reason)
	require.True(t, d.Due)

	// Thursday: nothing expected for days; a safety poll hours away.
	now = week8.Add(3*day + 10*time.Hour)
	d = planOne(t, Planner{}, now, weeklySeries("asura:w", 1, now.Add(-5*time.Minute)))
	require.Equal(t, ReasonSafety, d.Reason)
	require.False(t, d.Due)
	require.True(t, d.At.After(now.Add(2*time.Hour)), "%v", d.At.Sub(now))
	require.False(t, d.At.After(now.Add(DefaultMaxGap)))

	// The day before the release: the safety poll does not run past the
	// window, the window's first polls come before the release.
	now = release.Add(-20 * time.Hour)
	d = planOne(t, Planner{}, now, weeklySeries("asura:w", 1, now))
	require.True(t, d.At.Before(release), "%v", d.At)

	// The release has been seen: the window closes and polling is sparse
	// again, although the expected time is only minutes ago.
	seen := release.Add(3 * time.Minute)
	s := weeklySeries("asura:w", 1, seen)
	s.Releases = append(s.Releases, Release{Seen: seen, After: seen.Add(-3 * time.Minute)})
	d = planOne(t, Planner{}, seen.Add(time.Minute), s)
	require.Equal(t, ReasonSafety, d.Reason)
	require.True(t, d.At.After(seen.Add(time.Hour)), "%v", d.At.Sub(seen))
}

func TestPlanLateReleaseKeepsTheWindowOpenUntilItCloses(t *testing.T) {
	t.Parallel()
	release := week8.Add(tue14)
	// A Series that publishes within half an hour either side of 14:00:
	// 40 minutes late and still nothing, keep looking, densely.
	r := rand.New(rand.NewPCG(8, 8))
	jittery := weeklySeries("asura:j", 1, time.Time{})
	jittery.Releases = observed(weekly(8, tue14, func(int) time.Duration {
		return time.Duration(r.NormFloat64() * float64(30*time.Minute))
	}), 5*time.Minute, 0)
	now := release.Add(40 * time.Minute)
	jittery.LastPoll = now.Add(-DefaultMinGap)
	d := planOne(t, Planner{}, now, jittery)
	require.Equal(t, ReasonWindow, d.Reason)
	require.True(t, d.Due)
	// Three hours late: the week counts as skipped.
	now = release.Add(3 * time.Hour)
	jittery.LastPoll = now.Add(-DefaultMinGap)
	d = planOne(t, Planner{}, now, jittery)
	require.Equal(t, ReasonSafety, d.Reason)
	require.False(t, d.Due)

	// A Series that was always on the minute: 20 minutes late is still
	// worth a look, 50 minutes late it has most likely skipped the week.
	now = release.Add(20 * time.Minute)
	d = planOne(t, Planner{}, now, weeklySeries("asura:w", 1, now.Add(-DefaultMinGap)))
	require.Equal(t, ReasonWindow, d.Reason)
	require.True(t, d.Due)
	now = release.Add(50 * time.Minute)
	d = planOne(t, Planner{}, now, weeklySeries("asura:w", 1, now.Add(-DefaultMinGap)))
	require.False(t, d.Due)
}

func TestPlanHintMovesThePollForward(t *testing.T) {
	t.Parallel()
	now := week8.Add(3*day + 10*time.Hour)
	s := weeklySeries("asura:w", 2, now.Add(-30*time.Minute))
	d := planOne(t, Planner{}, now, s)
	require.False(t, d.Due)
	require.True(t, d.At.After(now.Add(time.Hour)))

	s.Hint = true
	d = planOne(t, Planner{}, now, s)
	require.Equal(t, ReasonHint, d.Reason)
	require.True(t, d.Due)
	require.True(t, d.At.Before(now.Add(DefaultHorizon)))

	// A hint right after a poll waits for MinGap: a Reader's claim never
	// makes the backend hammer a Site.
	s.LastPoll = now.Add(-time.Minute)
	d = planOne(t, Planner{}, now, s)
	require.Equal(t, ReasonHint, d.Reason)
	require.False(t, d.At.Before(s.LastPoll.Add(DefaultMinGap)))

	// A Series with no history is hinted forward too.
	fresh := Series{Key: "asura:new", Readers: 1, Since: now.Add(-day), LastPoll: now.Add(-10 * time.Minute), Hint: true}
	d = planOne(t, Planner{}, now, fresh)
	require.Equal(t, ReasonHint, d.Reason)
	require.True(t, d.Due)
}

func TestPlanOwnerRequestPollsNowAndOutranksEverything(t *testing.T) {
	t.Parallel()
	now := week8.Add(3*day + 10*time.Hour)
	s := weeklySeries("asura:w", 1, now.Add(-time.Minute))
	s.OwnerRequest = true
	d := planOne(t, Planner{}, now, s)
	require.Equal(t, ReasonOwner, d.Reason)
	require.True(t, d.Due)

	// One slot in the horizon, five hinted Series with many Readers and
	// one Owner request on a Series nobody holds: the Owner's wins.
	var series []Series
	for i := range 5 {
		h := weeklySeries(fmt.Sprintf("asura:h%d", i), 100, now.Add(-time.Hour))
		h.Hint = true
		series = append(series, h)
	}
	owner := weeklySeries("asura:owner", 0, now.Add(-time.Minute))
	owner.OwnerRequest = true
	series = append(series, owner)
	ds, err := Planner{}.Plan(now, Site{Name: "asura", PerHour: 20}, series)
	require.NoError(t, err)
	due := dueKeys(ds)
	require.Equal(t, []string{"asura:owner"}, due)
	for _, d := range ds[:5] {
		require.Equal(t, ReasonOverBudget, d.Reason)
		require.Equal(t, now.Add(DefaultHorizon), d.At)
	}
}

func dueKeys(ds []Decision) []string {
	var out []string
	for _, d := range ds {
		if d.Due {
			out = append(out, d.Key)
		}
	}
	return out
}

func TestPlanPausedSite(t *testing.T) {
	t.Parallel()
	now := week8.Add(tue14)
	until := now.Add(2 * time.Hour)
	s := weeklySeries("asura:w", 1, now.Add(-DefaultMinGap))
	s.OwnerRequest = true
	ds, err := Planner{}.Plan(now, Site{Name: "asura", PerHour: 100, PausedUntil: until}, []Series{s, weeklySeries("asura:x", 1, now)})
	require.NoError(t, err)
	for _, d := range ds {
		require.Equal(t, "site paused until "+until.Format(time.RFC3339), d.Reason)
		require.Equal(t, until, d.At)
		require.False(t, d.Due)
	}

	// A pause ending inside the horizon: polls wait for its end.
	until = now.Add(time.Minute)
	ds, err = Planner{}.Plan(now, Site{Name: "asura", PerHour: 100, PausedUntil: until}, []Series{s})
	require.NoError(t, err)
	require.True(t, ds[0].Due)
	require.False(t, ds[0].At.Before(until))
}

func TestPlanDropsTheLeastValuableFirst(t *testing.T) {
	t.Parallel()
	// 30 Series with no history, all overdue by the same time: value is
	// proportional to Readers. 100 an hour is a slot every 36 s: five in a
	// 3-minute horizon starting on a slot.
	now := time.Unix(1_800_000_000-1_800_000_000%36, 0).UTC()
	var series []Series
	for i := range 30 {
		series = append(series, Series{Key: fmt.Sprintf("asura:%02d", i), Readers: (i*7)%30 + 1, Since: now.Add(-day), LastPoll: now.Add(-2 * time.Hour)})
	}
	ds, err := Planner{}.Plan(now, Site{Name: "asura", PerHour: 100}, series)
	require.NoError(t, err)
	var kept, dropped []int
	for i, d := range ds {
		switch d.Reason {
		case ReasonNoHistory:
			require.True(t, d.Due)
			kept = append(kept, series[i].Readers)
		case ReasonOverBudget:
			require.False(t, d.Due)
			dropped = append(dropped, series[i].Readers)
		default:
			t.Fatalf("unexpected reason %q", d.Reason)
		}
	}
	require.Len(t, kept, 5)
	slices.Sort(kept)
	require.Equal(t, []int{26, 27, 28, 29, 30}, kept)
	require.Less(t, slices.Max(dropped), slices.Min(kept))
}

func TestPlanPrefersTheSeriesMoreLikelyToHaveReleased(t *testing.T) {
	t.Parallel()
	// Same Readers, same last poll an hour ago: one Series' release was
	// expected 10 minutes ago, the other releases at random about twice a
	// week. One slot: the expected release wins.
	release := week8.Add(tue14)
	// 20 an hour is one slot in a 3-minute horizon that starts on one.
	now := release.Add(10 * time.Minute).Truncate(3 * time.Minute)
	w := weeklySeries("asura:weekly", 5, now.Add(-time.Hour))
	rnd := rand.New(rand.NewPCG(3, 3))
	var rels []time.Time
	for at := t0.Add(hours(rnd.ExpFloat64() * 84)); at.Before(week8); at = at.Add(hours(rnd.ExpFloat64() * 84)) {
		rels = append(rels, at)
	}
	irr := Series{Key: "asura:irregular", Readers: 5, Since: t0, Releases: observed(rels, 30*time.Minute, 0), LastPoll: now.Add(-time.Hour)}
	require.Equal(t, KindIrregular, Estimate(irr.Since, now, irr.Releases).Kind)
	// The irregular Series is due now only because its last poll is
	// old enough; give it a hint-free reason to want a poll: MaxGap.
	p := Planner{MaxGap: time.Hour}
	ds, err := p.Plan(now, Site{Name: "asura", PerHour: 20}, []Series{irr, w})
	require.NoError(t, err)
	require.Equal(t, ReasonOverBudget, ds[0].Reason, "%+v", ds)
	require.Equal(t, ReasonWindow, ds[1].Reason)
	require.True(t, ds[1].Due)
	// Both fit when the budget allows two in the horizon.
	ds, err = p.Plan(now, Site{Name: "asura", PerHour: 1000}, []Series{irr, w})
	require.NoError(t, err)
	require.Equal(t, []string{"asura:irregular", "asura:weekly"}, dueKeys(ds))
}

// TestPlanNeverExceedsTheBudget replays three days of Plans for two Sites
// with too much demand (short interval, frequent hints, Owner requests),
// polling what is due, and counts every half-open hour.
func TestPlanNeverExceedsTheBudget(t *testing.T) {
	t.Parallel()
	start := week8.Add(7 * time.Minute)
	p := Planner{Interval: 5 * time.Minute}
	sites := []Site{{Name: "asura", PerHour: 7}, {Name: "novelfull", PerHour: 45}}
	r := rand.New(rand.NewPCG(11, 12))
	for _, site := range sites {
		var series []Series
		for i := range 80 {
			var s Series
			switch i % 3 {
			case 0:
				s = Series{Since: start.Add(-day), LastPoll: start.Add(-time.Duration(i) * time.Minute)}
			case 1:
				s = weeklySeries("", 1, start.Add(-time.Hour))
			default:
				s = weeklySeries("", 1, start.Add(-time.Hour))
				s.Releases = s.Releases[:2]
			}
			s.Key = fmt.Sprintf("%s:%d", site.Name, i)
			s.Readers = 1 + r.IntN(50)
			series = append(series, s)
		}
		var polls []int64
		for now := start; now.Before(start.Add(3 * day)); now = now.Add(DefaultHorizon) {
			for i := range series {
				series[i].Hint = r.Float64() < 0.05
				series[i].OwnerRequest = r.Float64() < 0.01
			}
			ds, err := p.Plan(now, site, series)
			require.NoError(t, err)
			require.Len(t, ds, len(series))
			for i, d := range ds {
				require.Equal(t, series[i].Key, d.Key)
				require.Contains(t, allowedReasons, d.Reason)
				if !d.Due {
					if d.Reason == ReasonOverBudget {
						require.Equal(t, now.Add(DefaultHorizon), d.At)
					}
					continue
				}
				require.False(t, d.At.Before(now))
				require.True(t, d.At.Before(now.Add(DefaultHorizon)))
				polls = append(polls, d.At.UnixNano())
				series[i].LastPoll = d.At
			}
		}
		slices.Sort(polls)
		require.Greater(t, len(polls), 3*24*site.PerHour*9/10, "the budget is used when demand exceeds it")
		require.LessOrEqual(t, maxPerHourWindow(polls), site.PerHour, site.Name)
		for i := 1; i < len(polls); i++ {
			require.NotEqual(t, polls[i-1], polls[i], "two polls share a slot")
		}
	}
}

func TestPlanRejectsBadInput(t *testing.T) {
	t.Parallel()
	now := week8
	s := []Series{weeklySeries("asura:w", 1, now)}
	_, err := Planner{}.Plan(now, Site{Name: "asura"}, s)
	require.ErrorIs(t, err, ErrBudget)
	_, err = Planner{}.Plan(now, Site{Name: "asura", PerHour: -3}, s)
	require.ErrorIs(t, err, ErrBudget)
	_, err = Planner{MinGap: 2 * time.Hour, MaxGap: time.Hour}.Plan(now, Site{Name: "asura", PerHour: 10}, s)
	require.ErrorIs(t, err, ErrPlanner)
	_, err = Planner{Interval: -time.Second}.Plan(now, Site{Name: "asura", PerHour: 10}, s)
	require.ErrorIs(t, err, ErrPlanner)
	_, err = Planner{}.Plan(time.Time{}, Site{Name: "asura", PerHour: 10}, s)
	require.ErrorIs(t, err, ErrPlanner)

	b, err := BudgetFromPace(2 * time.Second)
	require.NoError(t, err)
	require.Equal(t, 1800, b)
	_, err = BudgetFromPace(0)
	require.True(t, errors.Is(err, ErrBudget))

	// Odd but possible facts plan without panicking: a last poll in the
	// future, ancient history, negative Readers, an empty Site.
	odd := weeklySeries("asura:odd", -4, now.Add(time.Hour))
	odd.Releases = append([]Release{{Seen: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}}, odd.Releases...)
	ds, err := Planner{}.Plan(now, Site{Name: "asura", PerHour: 10}, []Series{odd, {Key: "asura:zero", LastPoll: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)}})
	require.NoError(t, err)
	require.Len(t, ds, 2)
	require.True(t, ds[1].Due, "a Series last polled in 1500 is overdue")
	// A cached Rhythm Estimate could not have made is not trusted: a zero
	// spread or a one-nanosecond period would stall or flood the model.
	for _, bad := range []Rhythm{
		{Kind: KindWeekly, Period: week, Slots: []Slot{{Offset: tue14, Spread: 0, Hit: 1}}},
		{Kind: KindWeekly, Period: time.Nanosecond, Slots: []Slot{{Spread: time.Hour, Hit: 1}}},
		{Kind: KindDaily, Period: day, OffRate: -1, Slots: []Slot{{Spread: time.Hour, Hit: 1}}},
		{Kind: "monthly"},
	} {
		s := weeklySeries("asura:cached", 1, now.Add(-time.Hour))
		s.Rhythm = &bad
		ds, err := Planner{}.Plan(now, Site{Name: "asura", PerHour: 10}, []Series{s})
		require.NoError(t, err)
		want := weeklySeries("asura:cached", 1, now.Add(-time.Hour))
		expected, err := Planner{}.Plan(now, Site{Name: "asura", PerHour: 10}, []Series{want})
		require.NoError(t, err)
		require.Equal(t, expected, ds, "%+v", bad)
	}
	ds, err = Planner{}.Plan(now, Site{Name: "asura", PerHour: 10}, nil)
	require.NoError(t, err)
	require.Empty(t, ds)
}

// TestPlanDoesNotDrift runs one Series through the planner for 24 weeks
// with a fake clock: it releases on Tuesdays at 14:00 give or take 5
// minutes, starts with no history, and is polled exactly when the plan
// says. Because first-seen times are late by the polling delay, an
// estimator fed only Seen would open each window a little later; the
// detection delay must instead settle and stay at a few minutes.
func TestPlanDoesNotDrift(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 22))
	var releases []time.Time
	for w := range 24 {
		releases = append(releases, t0.Add(time.Duration(w)*week+tue14+time.Duration(r.NormFloat64()*float64(5*time.Minute))))
	}
	s := Series{Key: "asura:drift", Readers: 1, Since: t0, LastPoll: t0}
	p := Planner{}
	site := Site{Name: "asura", PerHour: 100}
	next := 0
	latency := make([]time.Duration, len(releases))
	polls := 0
	for now := t0; now.Before(t0.Add(24 * week)); now = now.Add(DefaultHorizon) {
		ds, err := p.Plan(now, site, []Series{s})
		require.NoError(t, err)
		if !ds[0].Due {
			continue
		}
		polls++
		at := ds[0].At
		found := false
		for next < len(releases) && !releases[next].After(at) {
			latency[next] = at.Sub(releases[next])
			next++
			found = true
		}
		if found {
			s.Releases = append(s.Releases, Release{Seen: at, After: s.LastPoll})
		}
		s.LastPoll = at
	}
	require.Equal(t, len(releases), next)
	for w := 12; w < 24; w++ {
		require.LessOrEqual(t, latency[w], 2*DefaultMinGap, "week %d", w)
	}
	rh := Estimate(s.Since, t0.Add(24*week), s.Releases)
	require.Equal(t, KindWeekly, rh.Kind)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, tue14, week), 5*time.Minute)
	// Fewer than half the polls of the fixed interval.
	require.Less(t, polls, 24*7*24/2, "polls %d", polls)
}

// Two Series that release at random with the same history, one held by 16
// times the Readers of the other, and a budget large enough that neither is
// squeezed: the busier one is polled 16^readerExponent times as often (7x,
// where the square-root rule would give 4x).
func TestPlanWeighsReadersAboveTheSquareRootRule(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(5, 5))
	var rels []time.Time
	for at := t0.Add(hours(rnd.ExpFloat64() * 84)); at.Before(week8); at = at.Add(hours(rnd.ExpFloat64() * 84)) {
		rels = append(rels, at)
	}
	now := week8.Add(10 * time.Hour)
	mk := func(key string, readers int) Series {
		return Series{Key: key, Readers: readers, Since: t0, Releases: observed(rels, 30*time.Minute, 0), LastPoll: now}
	}
	one, many := mk("asura:one", 1), mk("asura:many", 16)
	require.Equal(t, KindIrregular, Estimate(one.Since, now, one.Releases).Kind)
	ds, err := Planner{}.Plan(now, Site{Name: "asura", PerHour: 100_000}, []Series{one, many})
	require.NoError(t, err)
	gapOne, gapMany := ds[0].At.Sub(now), ds[1].At.Sub(now)
	require.Greater(t, gapMany, DefaultMinGap, "the busier Series must not sit at MinGap: %+v", ds)
	require.Less(t, gapOne, DefaultMaxGap, "the quieter Series must not sit at MaxGap: %+v", ds)
	require.InEpsilon(t, 6.96, gapOne.Seconds()/gapMany.Seconds(), 0.03, "gaps %v and %v", gapOne, gapMany)
}

// A Series whose poll is already queued is not planned, but it still
// counts in the Site's price: the forecasts of the others are those of a
// Plan of every held Series. Left out of the price, the queued Series
// (the most valuable, which weigh most) would move every other forecast
// from one Plan to the next with whichever happen to be queued.
func TestPlanPricesTheQueuedSeriesToo(t *testing.T) {
	t.Parallel()
	now := week8.Add(2 * time.Hour) // Monday: every window a day away
	var planned []Series
	for i := range 200 {
		planned = append(planned, weeklySeries(fmt.Sprintf("asura:s%d", i), 1+i%7, now.Add(-time.Duration(i%50)*time.Minute)))
	}
	hot := weeklySeries("asura:hot", 5000, now.Add(-time.Hour))
	site := Site{Name: "asura", PerHour: 30}
	p := Planner{}

	all, err := p.Plan(now, site, append(slices.Clone(planned), hot))
	require.NoError(t, err)
	queued := site
	queued.Queued = []Series{hot}
	withQueued, err := p.Plan(now, queued, planned)
	require.NoError(t, err)
	without, err := p.Plan(now, site, planned)
	require.NoError(t, err)

	forecasts, differ := 0, 0
	for i := range planned {
		if all[i].Due || withQueued[i].Due {
			continue
		}
		forecasts++
		require.Equal(t, all[i], withQueued[i], "%s", planned[i].Key)
		if without[i] != withQueued[i] {
			differ++
		}
	}
	require.Greater(t, forecasts, 100)
	// Not vacuous: leaving the queued Series out of the price moves the
	// forecasts.
	require.Greater(t, differ, forecasts/2)
}

func TestPlanGathersAnIrregularSeriesPollsAtItsHour(t *testing.T) {
	t.Parallel()
	history := observed(eveningAuthor(), 30*time.Minute, 0)
	s := Series{Key: "quill:n1", Readers: 4, Since: t0, Releases: history}
	// A day after the last release, a quarter of an hour since the last
	// poll: at 18:50 the author's evening is starting, at 06:50 it is
	// half a day away.
	last := history[len(history)-1].Seen
	evening := last.Truncate(day).Add(day + 18*time.Hour + 50*time.Minute)
	morning := evening.Add(-12 * time.Hour)

	s.LastPoll = evening.Add(-15 * time.Minute)
	d := planOne(t, Planner{}, evening, s)
	require.Equal(t, ReasonWindow, d.Reason)
	gapEvening := d.At.Sub(s.LastPoll)

	s.LastPoll = morning.Add(-15 * time.Minute)
	d = planOne(t, Planner{}, morning, s)
	require.Equal(t, ReasonSafety, d.Reason)
	gapMorning := d.At.Sub(s.LastPoll)
	require.Greater(t, gapMorning, 3*gapEvening, "evening %v, morning %v", gapEvening, gapMorning)
}

func TestPlanOpensTheWindowFromTheFineReleases(t *testing.T) {
	t.Parallel()
	// Ten weeks of a Tuesday 14:00 Series, the first three seen by a
	// poller every 4 hours: an hour and a half before the slot the
	// window, placed by the later releases seen within minutes, is not
	// open yet, so the next poll waits for it.
	s := Series{Key: "asura:w", Readers: 1, Since: t0, Releases: coarseThenFine(false)}
	now := t0.Add(10*week + tue14 - 90*time.Minute)
	s.LastPoll = now.Add(-5 * time.Minute)
	d := planOne(t, Planner{}, now, s)
	require.False(t, d.At.Before(now.Add(25*time.Minute)), "%v after the last poll (%s)", d.At.Sub(s.LastPoll), d.Reason)
	require.True(t, d.At.Before(now.Add(90*time.Minute)), "%v", d.At.Sub(now))
}

func TestPlanPollsARenewalSeriesWhenItsGapIsDue(t *testing.T) {
	t.Parallel()
	history := observed(steadyAuthor(), 30*time.Minute, 0)
	s := Series{Key: "quill:steady", Readers: 2, Since: t0, Releases: history}
	last := history[len(history)-1].Seen
	gap := func(now time.Time) time.Duration {
		s.LastPoll = now.Add(-DefaultMinGap)
		d := planOne(t, Planner{}, now, s)
		return d.At.Sub(s.LastPoll)
	}
	// Two hours after a release the next is a day away: polls are sparse.
	// At 29 hours it is due: polls come several times as often.
	early, due := gap(last.Add(2*time.Hour)), gap(last.Add(29*time.Hour))
	require.Greater(t, early, 3*due, "early %v, due %v", early, due)
	// Far past due (a hiatus) the renewal no longer drives the polls.
	late := gap(last.Add(4 * day))
	require.Greater(t, late, 2*due, "late %v, due %v", late, due)
}

func TestPlanSpendsTheBudgetOfASiteOfIrregularSeriesWithAnHour(t *testing.T) {
	t.Parallel()
	// bench scale's Site: 2,000 Series, each with three releases a week
	// apart at one hour of the day over four months (an irregular Series
	// with an hour, the hour now), polled in the last ten hours, and a
	// budget of two polls a day each. Priced at one poll owed to each
	// day's window, their floor (one window poll and one safety poll a
	// day) was above the budget: the price went to its ceiling, every
	// Series waited for its 24-hour safety poll, and the Site sat idle for
	// fourteen hours.
	const n = 2000
	now := t0.Add(120 * day)
	series := make([]Series, n)
	for i := range series {
		var rel []Release
		for w := 3; w >= 1; w-- {
			seen := now.Add(-time.Duration(w*7+i%7)*day + time.Duration(i%13+30)*time.Minute)
			rel = append(rel, Release{Seen: seen, After: seen.Add(-2 * time.Hour)})
		}
		series[i] = Series{Key: fmt.Sprintf("asura:s%d", i), Readers: 1 + i%5, Since: t0, Releases: rel,
			LastPoll: now.Add(-time.Duration(i%600) * time.Minute)}
	}
	rh := Estimate(series[0].Since, now, series[0].Releases)
	require.Equal(t, KindIrregular, rh.Kind)
	require.Len(t, rh.Slots, 1, "the releases' hour of the day is a slot")

	budget := n / 12
	ds, err := Planner{Horizon: time.Hour}.Plan(now, Site{Name: "asura", PerHour: budget}, series)
	require.NoError(t, err)
	due := 0
	for _, d := range ds {
		if d.Due {
			due++
		}
	}
	require.Greater(t, due, budget/2, "polls queued in the next hour, budget %d", budget)
}

func TestPlanExpectsAMissedWeeklyChapterADayLateOnASiteThatSlips(t *testing.T) {
	t.Parallel()
	// Week 9, Wednesday 13:50: asura:late's Tuesday 14:00 chapter did not
	// come, the window closed, and a poll at 09:50 saw nothing. On a Site whose other weekly Series
	// put a fifth of their chapters up a day late, a day-late window opens
	// now; on a Site whose Series never slip, the next poll is a safety
	// poll hours away.
	now := t0.Add(9*week + tue14 + day - 10*time.Minute)
	late := Series{Key: "asura:late", Readers: 1, Since: t0,
		Releases: observed(weekly(9, tue14, none), 5*time.Minute, 0),
		LastPoll: now.Add(-4 * time.Hour)}
	site := func(slips bool) []Series {
		out := []Series{late}
		for i := range 10 {
			var rel []time.Time
			if slips {
				slipped := []int{i % 9, (i + 4) % 9}
				rel = weekly(10, tue14, none, slipped...)
				for _, w := range slipped {
					rel = append(rel, t0.Add(time.Duration(w)*week+tue14+day))
				}
				slices.SortFunc(rel, time.Time.Compare)
			} else {
				rel = weekly(10, tue14, none)
			}
			out = append(out, Series{Key: fmt.Sprintf("asura:s%d", i), Readers: 1, Since: t0,
				Releases: observed(rel, 5*time.Minute, 0), LastPoll: now.Add(-5 * time.Minute)})
		}
		return out
	}
	plan := func(slips bool) Decision {
		ds, err := Planner{Horizon: time.Hour}.Plan(now, Site{Name: "asura", PerHour: 2}, site(slips))
		require.NoError(t, err)
		return ds[0]
	}
	d := plan(true)
	require.Equal(t, ReasonWindow, d.Reason)
	require.True(t, d.Due)
	require.True(t, d.At.Before(now.Add(30*time.Minute)), "%v after now", d.At.Sub(now))
	d = plan(false)
	require.Equal(t, ReasonSafety, d.Reason)
	require.False(t, d.Due)
	require.True(t, d.At.After(now.Add(2*time.Hour)), "%v after now", d.At.Sub(now))
}

func TestPlanPricesARenewalEarlyInItsGapAtItsShapedRate(t *testing.T) {
	t.Parallel()
	// A Site of steady authors (a 30-hour renewal), all of whom released
	// together, and a probe at a flat rate. Two hours after the releases
	// the renewals poll at a fraction of the flat rate: priced at it
	// anyway, the budget they left was never spent (the probe's poll came
	// as late as when they are due). Priced at what they spend, the price
	// falls and the probe is polled sooner than when the renewals are due.
	history := observed(steadyAuthor(), 30*time.Minute, 0)
	last := history[len(history)-1].Seen
	probeGap := func(now time.Time) time.Duration {
		var series []Series
		for i := range 300 {
			series = append(series, Series{Key: fmt.Sprintf("quill:s%d", i), Readers: 1 + i%4, Since: t0,
				Releases: history, LastPoll: now.Add(-time.Duration(i%60) * time.Minute)})
		}
		probe := Series{Key: "quill:probe", Readers: 2, Since: t0, LastPoll: now.Add(-10 * time.Minute),
			Rhythm: &Rhythm{Kind: KindIrregular, Rate: 0.02, OffRate: 0.02}}
		ds, err := Planner{}.Plan(now, Site{Name: "quill", PerHour: 20}, append(series, probe))
		require.NoError(t, err)
		d := ds[len(ds)-1]
		require.Equal(t, probe.Key, d.Key)
		require.Equal(t, ReasonSafety, d.Reason)
		return d.At.Sub(probe.LastPoll)
	}
	early, due := probeGap(last.Add(2*time.Hour)), probeGap(last.Add(29*time.Hour))
	require.Less(t, early, due*2/3, "early %v, due %v", early, due)
}

func TestPlanPollsASeriesStarvedForTwoMaxGaps(t *testing.T) {
	t.Parallel()
	// A saturated Site: five slots in the horizon, ten new Series wanting
	// them. A dormant Series, one Reader, unpolled for three days: at its
	// model's odds (a release in three days at its slow rate, about 2%) its
	// poll lost every slot to them, and a return went unseen for a week.
	// Starved past two MaxGaps, it counts as a certain release.
	now := time.Unix(1_800_000_000-1_800_000_000%36, 0).UTC()
	var series []Series
	for i := range 10 {
		series = append(series, Series{Key: fmt.Sprintf("asura:%02d", i), Readers: 2, Since: now.Add(-day), LastPoll: now.Add(-2 * time.Hour)})
	}
	dormant := Series{Key: "asura:dormant", Readers: 1, Since: now.Add(-10 * week), LastPoll: now.Add(-3 * day),
		Rhythm: &Rhythm{Kind: KindDormant, Rate: 0.0003, OffRate: 0.0003}}
	ds, err := Planner{}.Plan(now, Site{Name: "asura", PerHour: 100}, append(series, dormant))
	require.NoError(t, err)
	due := 0
	for _, d := range ds {
		if d.Due {
			due++
		}
	}
	require.Equal(t, 5, due, "the Site is saturated")
	d := ds[len(ds)-1]
	require.Equal(t, dormant.Key, d.Key)
	require.True(t, d.Due, "%+v", d)
}

// A second chapter comes within BurstSpan of its release. After a release
// the Series' own window saw within minutes, the burst's rate holds for the
// whole span; after one a 4-hour safety poll found, most of a second
// chapter's time has passed unseen or came with it, and the rate fades to
// zero over the span: a fixed rate from the poll spent a slow Site's polls
// on second chapters long seen (novels at 0.1). The expected releases the
// value reads (cumulative) are the integral of the same hazard.
func TestBurstFadesAfterAReleaseFoundLate(t *testing.T) {
	t.Parallel()
	p, err := Planner{}.withDefaults()
	require.NoError(t, err)
	seen := week8.Add(10 * time.Hour)
	rh := Rhythm{Kind: KindIrregular, Rate: 0.01, OffRate: 0.01, Burst: 0.3}
	build := func(after time.Duration) *model {
		s := Series{Key: "quill:b", Readers: 1, Since: t0, LastPoll: seen,
			Releases: []Release{{Seen: seen, After: seen.Add(-after)}}}
		var (
			m     model
			cands []candidate
			occ   []occurrence
		)
		m.build(p, &s, seen.UnixNano(), &rh, 0, &cands, &occ)
		return &m
	}
	fine, late := build(5*time.Minute), build(4*time.Hour)
	at := func(d time.Duration) int64 { return seen.Add(d).UnixNano() }
	burst := rh.Burst / BurstSpan.Hours()

	hf, _ := fine.hazard(at(2 * time.Hour))
	hl, _ := late.hazard(at(2 * time.Hour))
	require.InDelta(t, rh.OffRate+burst, hf, 1e-12, "seen within minutes: the whole burst")
	require.InDelta(t, rh.OffRate+burst/4, hl, 1e-12, "found late: an hour of the span left of a 4-hour interval")

	// cumulative over the span is the off rate plus the burst's integral:
	// 0.3 for the fine release but the last 5 minutes' fade, 0.3 * (3h)²/2
	// / (3h * 4h) for the late one.
	require.InDelta(t, 3*rh.OffRate+rh.Burst*(1-5.0/180/2), fine.cumulative(at(BurstSpan)), 1e-9)
	require.InDelta(t, 3*rh.OffRate+rh.Burst*9.0/2/12, late.cumulative(at(BurstSpan)), 1e-9)
	// And its steps agree with the hazard: the next poll comes later.
	nf, _ := fine.next(1)
	nl, _ := late.next(1)
	require.Greater(t, nl, nf)
}

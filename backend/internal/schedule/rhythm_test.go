package schedule

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// t0 is a Monday 00:00 UTC; the histories below start there.
var t0 = time.Date(2026, time.March, 2, 0, 0, 0, 0, time.UTC)

// observed turns true release times into the history a poller every
// `every` (starting at phase) would have recorded.
func observed(releases []time.Time, every, phase time.Duration) []Release {
	var out []Release
	for _, at := range releases {
		k := (at.Sub(t0) - phase + every - 1) / every
		seen := t0.Add(phase + k*every)
		if n := len(out); n > 0 && out[n-1].Seen.Equal(seen) {
			continue
		}
		out = append(out, Release{Seen: seen, After: seen.Add(-every)})
	}
	return out
}

// weekly gives one release per week at weekday offset (from Monday 00:00)
// plus jitter, skipping the weeks listed.
func weekly(weeks int, offset time.Duration, jitter func(int) time.Duration, skip ...int) []time.Time {
	var out []time.Time
	for w := range weeks {
		if contains(skip, w) {
			continue
		}
		out = append(out, t0.Add(time.Duration(w)*week+offset+jitter(w)))
	}
	return out
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func none(int) time.Duration { return 0 }

// offsetDiff is the circular distance between two offsets in period p.
func offsetDiff(a, b, p time.Duration) time.Duration {
	d := (a - b) % p
	if d < 0 {
		d += p
	}
	return min(d, p-d)
}

const tue14 = day + 14*time.Hour

func TestEstimateWeekly(t *testing.T) {
	t.Parallel()
	rel := observed(weekly(8, tue14, none), 5*time.Minute, 0)
	now := t0.Add(8 * week)
	rh := Estimate(t0, now, rel)

	require.Equal(t, KindWeekly, rh.Kind)
	require.Len(t, rh.Slots, 1)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, tue14, week), 5*time.Minute)
	require.Greater(t, rh.Slots[0].Hit, 0.8)
	require.Greater(t, rh.Confidence, 0.9)
	require.Equal(t, "weekly, Tuesdays ~13:57", rh.Describe(nil))
	require.Equal(t, "weekly, Tuesdays ~15:57", rh.Describe(time.FixedZone("CEST", 2*3600)))
}

func TestEstimateWeeklyWithSkippedWeeksAndJitter(t *testing.T) {
	t.Parallel()
	// Up to two hours either side, two weeks of ten skipped, seen by
	// polls every 20 minutes.
	r := rand.New(rand.NewPCG(7, 7))
	jitter := func(int) time.Duration { return time.Duration((r.Float64()*4 - 2) * float64(time.Hour)) }
	rel := observed(weekly(10, tue14, jitter, 3, 7), 20*time.Minute, 0)
	rh := Estimate(t0, t0.Add(10*week), rel)

	require.Equal(t, KindWeekly, rh.Kind, "%+v", rh)
	require.Len(t, rh.Slots, 1)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, tue14, week), 45*time.Minute)
	require.Greater(t, rh.Slots[0].Spread, 30*time.Minute, "the jitter must widen the window")
	require.Less(t, rh.Slots[0].Hit, 0.9, "skipped weeks lower the hit rate")
}

func TestEstimateWeeklyFromThreeWeeksWithOneMissed(t *testing.T) {
	t.Parallel()
	// Three weeks seen by a poller every 4 hours, as a new install's
	// history or the simulator's: a week skipped, or slipped a day, still
	// leaves the two releases on Tuesday a slot, so the fourth week gets
	// its window.
	now := t0.Add(3 * week)
	skipped := observed(weekly(3, tue14, none, 1), 4*time.Hour, 0)
	slipped := observed(sorted(append(weekly(3, tue14, none, 1), t0.Add(week+tue14+day))), 4*time.Hour, 0)
	for name, rel := range map[string][]Release{"skipped": skipped, "slipped": slipped} {
		rh := Estimate(t0, now, rel)
		require.Equal(t, KindWeekly, rh.Kind, "%s: %+v", name, rh)
		require.Len(t, rh.Slots, 1, name)
		require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, tue14, week), 2*time.Hour, name)
	}
	require.Equal(t, 1, Estimate(t0, now, slipped).Slips)

	// Releases at random, about two a week: two of six falling on one
	// weekday's few hours by chance make a weekly slot in few histories
	// (3 in 100; 11 in 400 with three releases needed, 14 with two and
	// day-late releases set aside): the significance test guards them,
	// not the count.
	weeklies := 0
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 3))
		var rels []time.Time
		for at := t0.Add(hours(r.ExpFloat64() * 84)); at.Before(now); at = at.Add(hours(r.ExpFloat64() * 84)) {
			rels = append(rels, at)
		}
		if Estimate(t0, now, observed(rels, 4*time.Hour, 0)).Kind == KindWeekly {
			weeklies++
		}
	}
	require.LessOrEqual(t, weeklies, 5)
}

func TestEstimateWeeklyFromASlowPoller(t *testing.T) {
	t.Parallel()
	// Three weeks seen by a poller every 10 hours (0.1 requests per
	// Series-hour): every release is known only within 10 hours, but the
	// intervals shift 8 hours a week and overlap where the slot is.
	now := t0.Add(3 * week)
	wed5 := 2*day + 5*time.Hour
	r := rand.New(rand.NewPCG(7, 7))
	jitter := func(int) time.Duration { return time.Duration(r.NormFloat64() * float64(20*time.Minute)) }
	for phase := time.Duration(0); phase < 10*time.Hour; phase += 2 * time.Hour {
		rel := observed(weekly(3, wed5, jitter), 10*time.Hour, phase)
		rh := Estimate(t0, now, rel)
		require.Equal(t, KindWeekly, rh.Kind, "phase %v: %+v", phase, rh)
		require.Len(t, rh.Slots, 1)
		require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, wed5, week), 3*time.Hour, "phase %v", phase)
		require.LessOrEqual(t, rh.Slots[0].Spread, maxSpread)
	}

	// Wide intervals line up by chance more often than narrow ones, so
	// a loose slot needs significance at 0.001: three releases on the
	// slot and two elsewhere are a weekly Series seen within minutes, and
	// not one seen within 10 hours (at 0.01 they would be).
	rels := append(weekly(3, wed5, none), t0.Add(4*day+20*time.Hour), t0.Add(week+6*day+3*time.Hour))
	rh := Estimate(t0, now, observed(sorted(rels), 10*time.Hour, 0))
	require.Equal(t, KindIrregular, rh.Kind, "%+v", rh)
	require.Equal(t, KindWeekly, Estimate(t0, now, observed(sorted(rels), 10*time.Minute, 0)).Kind)
}

func TestEstimateWeeklyFromCoarseHistoryDoesNotLeanLate(t *testing.T) {
	t.Parallel()
	// Releases at exactly 14:00 seen by polls every 2 h that fall at
	// 15:50: Seen is 1 h 50 min late, the interval's middle only 50 min.
	// Without After (the poll before) the slot would sit at Seen.
	rel := observed(weekly(6, tue14, none), 2*time.Hour, 110*time.Minute)
	require.Equal(t, t0.Add(tue14+110*time.Minute), rel[0].Seen)
	rh := Estimate(t0, t0.Add(6*week), rel)
	require.Equal(t, KindWeekly, rh.Kind)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, tue14, week), 50*time.Minute)
	// The uncertainty of a 2 h interval widens the spread so the true time
	// stays inside the window.
	require.GreaterOrEqual(t, windowBefore(rh.Slots[0].Spread), 50*time.Minute)
}

func TestEstimateTwiceAWeek(t *testing.T) {
	t.Parallel()
	mon10, thu10 := 10*time.Hour, 3*day+10*time.Hour
	r := rand.New(rand.NewPCG(1, 2))
	jitter := func(int) time.Duration { return time.Duration(r.NormFloat64() * float64(15*time.Minute)) }
	var all []time.Time
	all = append(all, weekly(6, mon10, jitter)...)
	all = append(all, weekly(6, thu10, jitter, 2)...)
	rh := Estimate(t0, t0.Add(6*week), observed(sorted(all), 10*time.Minute, 0))

	require.Equal(t, KindWeekly, rh.Kind)
	require.Len(t, rh.Slots, 2)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, mon10, week), 20*time.Minute)
	require.LessOrEqual(t, offsetDiff(rh.Slots[1].Offset, thu10, week), 20*time.Minute)
	require.Contains(t, rh.Describe(nil), "twice a week, Mondays ~")
	require.Contains(t, rh.Describe(nil), " and Thursdays ~")
}

func TestEstimateDaily(t *testing.T) {
	t.Parallel()
	var rels []time.Time
	r := rand.New(rand.NewPCG(3, 4))
	for d := range 12 {
		if d == 5 {
			continue // a skipped day
		}
		rels = append(rels, t0.Add(time.Duration(d)*day+6*time.Hour+30*time.Minute+time.Duration(r.NormFloat64()*float64(10*time.Minute))))
	}
	rh := Estimate(t0, t0.Add(12*day), observed(rels, 5*time.Minute, 0))

	require.Equal(t, KindDaily, rh.Kind)
	require.Equal(t, day, rh.Period)
	require.Len(t, rh.Slots, 1)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, 6*time.Hour+30*time.Minute, day), 15*time.Minute)
	require.Contains(t, rh.Describe(nil), "daily ~06:")
}

func TestEstimateIrregular(t *testing.T) {
	t.Parallel()
	// Poisson releases, about two a week at any hour. The slot test leans
	// towards finding slots (a false one costs a few polls, a missed one
	// hours of delay), so a chance bunching may pass now and then: at most
	// one history in ten.
	slotted := 0
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 99))
		var rels []time.Time
		for at := t0.Add(hours(r.ExpFloat64() * 84)); at.Before(t0.Add(8 * week)); at = at.Add(hours(r.ExpFloat64() * 84)) {
			rels = append(rels, at)
		}
		rh := Estimate(t0, t0.Add(8*week), observed(rels, 30*time.Minute, 0))
		require.InDelta(t, float64(len(rels))/(8*168), rh.Rate, 0.004, "seed %d", seed)
		if len(rh.Slots) > 0 {
			slotted++
			t.Logf("seed %d: %s %+v", seed, rh.Kind, rh.Slots)
			continue
		}
		require.Equal(t, rh.Rate, rh.OffRate)
		require.Contains(t, rh.Describe(nil), "irregular, about")
	}
	require.LessOrEqual(t, slotted, 2)
}

func TestEstimateDormant(t *testing.T) {
	t.Parallel()
	rel := observed(weekly(4, tue14, none), 10*time.Minute, 0)
	now := t0.Add(11 * week)
	rh := Estimate(t0, now, rel)
	require.Equal(t, KindDormant, rh.Kind)
	require.Equal(t, "dormant since 24 Mar 2026", rh.Describe(nil))
	require.Less(t, rh.OffRate, 1.0/(24*30), "a dormant Series is expected to release less than monthly")

	// Never a release in a month of polling.
	rh = Estimate(t0, t0.Add(30*day), nil)
	require.Equal(t, KindDormant, rh.Kind)
}

func TestEstimateNotEnoughHistory(t *testing.T) {
	t.Parallel()
	rel := observed([]time.Time{t0.Add(10 * time.Hour), t0.Add(2*day + 10*time.Hour)}, 10*time.Minute, 0)
	require.Equal(t, KindUnknown, Estimate(t0, t0.Add(5*day), rel).Kind)
	require.Equal(t, KindUnknown, Estimate(t0, t0.Add(14*day), rel).Kind, "two releases in two weeks are too few")
	require.Equal(t, KindUnknown, Estimate(time.Time{}, t0.Add(5*day), nil).Kind)
	require.Equal(t, "not enough history", Rhythm{}.Describe(nil))
}

func TestEstimateDoubleReleases(t *testing.T) {
	t.Parallel()
	rels := weekly(8, tue14, none)
	// Weeks 2 and 5 bring a second chapter 40 minutes later.
	rels = append(rels, rels[2].Add(40*time.Minute), rels[5].Add(40*time.Minute))
	rh := Estimate(t0, t0.Add(8*week), observed(sorted(rels), 5*time.Minute, 0))
	require.Equal(t, KindWeekly, rh.Kind)
	require.Len(t, rh.Slots, 1)
	require.Equal(t, 8, rh.Events, "a double release is one event")
	require.Greater(t, rh.Burst, 0.15)
}

func TestEstimateFollowsAMovedSchedule(t *testing.T) {
	t.Parallel()
	// Tuesdays for 6 weeks, then Fridays 09:00 for 14: the old slot falls
	// out of the look-back.
	fri9 := 4*day + 9*time.Hour
	rels := weekly(6, tue14, none)
	for w := 6; w < 20; w++ {
		rels = append(rels, t0.Add(time.Duration(w)*week+fri9))
	}
	rh := Estimate(t0, t0.Add(20*week), observed(rels, 5*time.Minute, 0))
	require.Equal(t, KindWeekly, rh.Kind)
	require.Len(t, rh.Slots, 1)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, fri9, week), 5*time.Minute)
}

func TestEstimateIgnoresFutureAndUnsortedInput(t *testing.T) {
	t.Parallel()
	rel := observed(weekly(8, tue14, none), 5*time.Minute, 0)
	shuffled := append([]Release(nil), rel...)
	rand.New(rand.NewPCG(5, 5)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	now := t0.Add(6 * week)
	require.Equal(t, Estimate(t0, now, rel[:6]), Estimate(t0, now, shuffled))
}

func sorted(ts []time.Time) []time.Time {
	out := append([]time.Time(nil), ts...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Before(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// eveningAuthor releases every two or three days at about 19:00 UTC for
// three weeks: no weekday comes round three times (no weekly slot), and it
// is not daily.
func eveningAuthor() []time.Time {
	jitter := []time.Duration{-25, 10, 30, -5, 15, -20, 0, 20}
	var out []time.Time
	for i, d := range []int{0, 2, 5, 8, 10, 13, 16, 19} {
		out = append(out, t0.Add(time.Duration(d)*day+19*time.Hour+jitter[i]*time.Minute))
	}
	return out
}

func TestEstimateIrregularAtOneHourOfTheDay(t *testing.T) {
	t.Parallel()
	rh := Estimate(t0, t0.Add(3*week), observed(eveningAuthor(), 30*time.Minute, 0))

	require.Equal(t, KindIrregular, rh.Kind, "%+v", rh)
	require.Len(t, rh.Slots, 1, "the evening is a slot")
	require.Equal(t, day, rh.Period)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, 19*time.Hour, day), 30*time.Minute)
	require.Less(t, rh.Slots[0].Hit, 0.6, "the hit rate is releases per day")
	require.Less(t, rh.OffRate, rh.Rate/2, "the slot explains most releases")
	require.True(t, rh.plausible())
	require.Regexp(t, `^irregular, about \d+ a week, mostly ~1[89]:\d\d$`, rh.Describe(nil))
}

func TestEstimateWeeklyFromHistoryStraddlingAPoll(t *testing.T) {
	t.Parallel()
	// A Site's Tuesday drop at 15:00 puts the Series' chapter up within the
	// next 90 minutes; over three weeks a poller every 4 hours (at 12:00,
	// 16:00, 20:00) saw it by 16:00 twice and by 20:00 once. The two
	// intervals touch: it is one slot, not two parts too small to count.
	offs := []time.Duration{50, 75, 55}
	rels := weekly(len(offs), day+15*time.Hour, func(w int) time.Duration { return offs[w] * time.Minute })
	rh := Estimate(t0, t0.Add(time.Duration(len(offs))*week), observed(rels, 4*time.Hour, 0))

	require.Equal(t, KindWeekly, rh.Kind, "%+v", rh)
	require.Len(t, rh.Slots, 1)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, day+16*time.Hour, week), 135*time.Minute)
}

// coarseThenFine is a weekly Series at Tuesday 14:00 (jitter a few
// minutes) seen by a poller every 4 hours for three weeks, then by polls
// 5 minutes apart for seven; with late, the last week's release came two
// hours after the slot, past the window, and a safety poll saw it 90
// minutes later.
func coarseThenFine(late bool) []Release {
	jit := []time.Duration{-6, 4, 9, -3, 7, -8, 2, 5, -4, 3}
	rels := weekly(10, tue14, func(w int) time.Duration { return jit[w] * time.Minute })
	out := observed(rels[:3], 4*time.Hour, 90*time.Minute)
	out = append(out, observed(rels[3:9], 5*time.Minute, 0)...)
	if late {
		at := t0.Add(9*week + tue14 + 2*time.Hour)
		return append(out, Release{Seen: at.Add(90 * time.Minute), After: at.Add(-30 * time.Minute)})
	}
	return append(out, observed(rels[9:], 5*time.Minute, 0)...)
}

func TestEstimateForgetsCoarseHistoryOnceWindowsPlaceTheSlot(t *testing.T) {
	t.Parallel()
	rh := Estimate(t0, t0.Add(10*week), coarseThenFine(false))
	require.Equal(t, KindWeekly, rh.Kind)
	require.Len(t, rh.Slots, 1)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, tue14, week), 10*time.Minute)
	// The history's intervals (±2 hours) hold the slot and say nothing
	// more: the spread is the fine releases' (shrunk towards the 30-minute
	// prior), not widened by them.
	require.Less(t, rh.Slots[0].Spread, 25*time.Minute)

	// A release the window missed, seen later by a safety poll, is kept:
	// the spread must cover it.
	late := Estimate(t0, t0.Add(10*week), coarseThenFine(true))
	require.Len(t, late.Slots, 1)
	require.Greater(t, late.Slots[0].Spread, rh.Slots[0].Spread)
	var pts []placed
	for _, r := range coarseThenFine(true) {
		mid, half := r.estimate()
		pts = append(pts, placed{pos: position(mid, week), half: half})
	}
	kept := dropBlurred(pts)
	require.Len(t, kept, len(pts)-3, "the three history points go")
	require.Equal(t, pts[len(pts)-1], kept[len(kept)-1], "the missed release stays")
}

func TestEstimatePlacesAWindowByItsFirstFineReleases(t *testing.T) {
	t.Parallel()
	// Tuesdays at 15:20 (a few minutes either way): a poller every 4 hours
	// saw it in (12:00, 16:00] for four weeks, then two windows found it
	// within 5 minutes. The history's middles (14:00) are still the
	// majority; the intervals hold 15:20 and say nothing against it.
	slot := day + 15*time.Hour + 20*time.Minute
	jit := []time.Duration{-4, 3, 6, -2, 4, -5}
	rels := weekly(len(jit), slot, func(w int) time.Duration { return jit[w] * time.Minute })
	hist := append(observed(rels[:4], 4*time.Hour, 0), observed(rels[4:], 5*time.Minute, 0)...)
	rh := Estimate(t0, t0.Add(6*week), hist)

	require.Equal(t, KindWeekly, rh.Kind, "%+v", rh)
	require.Len(t, rh.Slots, 1)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, slot, week), 15*time.Minute, "%+v", rh.Slots[0])
	require.Less(t, rh.Slots[0].Spread, 55*time.Minute, "the middles' median spread 58 minutes")
}

func TestEstimateNarrowsAWindowWhoseReleasesStraddleAPoll(t *testing.T) {
	t.Parallel()
	// Tuesdays at 16:00, ten minutes either way, seen by a poller every 4
	// hours: by 16:00 in some weeks and by 20:00 in the others. The
	// intervals (12:00, 16:00] and (16:00, 20:00] only meet at 16:00. How
	// wide the jitter is they cannot tell (ten minutes or ninety split the
	// weeks alike), so the window stays wider than the jitter, but not the
	// three hours (170 minutes) of the two intervals' middles.
	slot := day + 16*time.Hour
	jit := []time.Duration{-10, 10, -10, 10, -10, 10}
	rels := weekly(len(jit), slot, func(w int) time.Duration { return jit[w] * time.Minute })
	rh := Estimate(t0, t0.Add(6*week), observed(rels, 4*time.Hour, 0))

	require.Equal(t, KindWeekly, rh.Kind, "%+v", rh)
	require.Len(t, rh.Slots, 1)
	require.LessOrEqual(t, offsetDiff(rh.Slots[0].Offset, slot, week), 15*time.Minute, "%+v", rh.Slots[0])
	require.Less(t, rh.Slots[0].Spread, 2*time.Hour)
}

func TestPosteriorSlotKeepsAnIntervalsWholeWidthWhenNothingNarrowsIt(t *testing.T) {
	t.Parallel()
	// Every week in the same 4-hour interval: the centre may be anywhere
	// in it, and the window must say so (a uniform's deviation is 69 min;
	// the tail allowance widens it, as no fine release shows the jitter).
	var vals []placed
	for range 5 {
		vals = append(vals, placed{pos: day + 14*time.Hour, half: 2 * time.Hour})
	}
	c, sp := posteriorSlot(vals)
	require.LessOrEqual(t, absDur(c-(day+14*time.Hour)), 5*time.Minute)
	require.Greater(t, sp, 65*time.Minute)
	require.Less(t, sp, 90*time.Minute)

	// A second chapter two hours after four fine releases is not jitter.
	fine := []placed{{pos: 600 * time.Minute}, {pos: 603 * time.Minute}, {pos: 606 * time.Minute}, {pos: 610 * time.Minute}, {pos: 730 * time.Minute}}
	c, sp = posteriorSlot(fine)
	require.LessOrEqual(t, absDur(c-605*time.Minute), 5*time.Minute)
	require.Less(t, sp, 30*time.Minute)
}

func TestEstimateKeepsAWideSlotPlausible(t *testing.T) {
	t.Parallel()
	// Tuesdays, anywhere from 10:00 to 18:00, each release found within
	// minutes: the releases' robust spread makes it a slot (under three
	// hours), and the posterior's, which weighs every release, is wider.
	// The window stays within what a cached rhythm may hold, or the planner
	// would estimate it again at every Plan.
	rels := weekly(12, day+10*time.Hour, func(w int) time.Duration { return time.Duration(w) * 43 * time.Minute })
	rh := Estimate(t0, t0.Add(12*week), observed(rels, 5*time.Minute, 0))
	require.Equal(t, KindWeekly, rh.Kind, "%+v", rh)
	require.Len(t, rh.Slots, 1)
	var vals []placed
	for _, r := range observed(rels, 5*time.Minute, 0) {
		mid, half := r.estimate()
		vals = append(vals, placed{pos: position(mid, week), half: half})
	}
	_, wide := posteriorSlot(vals)
	require.Greater(t, wide, maxSpread, "the case this test is for")
	require.Equal(t, maxSpread, rh.Slots[0].Spread)
	require.True(t, rh.plausible(), "%+v", rh)
}

// robust is the one median and scaled MAD of summarize, the renewal and the
// posterior: the midpoint of an even count, a deviation an outlier does
// not move, and its input left in its order.
func TestRobustIsTheMedianAndAScaledMAD(t *testing.T) {
	t.Parallel()
	xs := []float64{9, 1, 5, 3, 1000}
	med, sd := robust(xs)
	require.Equal(t, 5.0, med)
	require.InDelta(t, 1.4826*4, sd, 1e-9, "deviations 4, 2, 0, 4, 995: their median is 4")
	require.Equal(t, []float64{9, 1, 5, 3, 1000}, xs, "left as it was")

	gaps := []time.Duration{4 * time.Hour, 2 * time.Hour, 3 * time.Hour, 5 * time.Hour}
	m, s := robust(gaps)
	require.Equal(t, 3*time.Hour+30*time.Minute, m, "an even count's median is halfway between the middle two")
	require.InDelta(t, 1.4826*float64(time.Hour), s, 1, "deviations 30, 90, 30, 90 minutes: their median is an hour")
}

func TestPhiMatchesErfc(t *testing.T) {
	t.Parallel()
	for z := -10.0; z <= 10; z += 0.013 {
		want := 0.5 * math.Erfc(-z/math.Sqrt2)
		require.InDelta(t, want, phi(z), 1e-5, "z=%v", z)
	}
	require.Equal(t, 0.0, phi(math.NaN()))
}

// steadyAuthor releases every 30 hours (± up to 3) for four weeks, so its
// hour of the day moves round the clock.
func steadyAuthor() []time.Time {
	jit := []time.Duration{-2, 1, 3, 0, -1, 2, -3, 1, 0, -2, 2, 1, -1, 0, 3, -2, 1, -1, 0, 2, -3, 1}
	var out []time.Time
	at := t0.Add(5 * time.Hour)
	for i := 0; at.Before(t0.Add(4 * week)); i++ {
		out = append(out, at)
		at = at.Add(30*time.Hour + jit[i%len(jit)]*time.Hour)
	}
	return out
}

func TestEstimateRenewal(t *testing.T) {
	t.Parallel()
	rh := Estimate(t0, t0.Add(4*week), observed(steadyAuthor(), 30*time.Minute, 0))
	require.Equal(t, KindIrregular, rh.Kind, "%+v", rh)
	require.Empty(t, rh.Slots, "no hour of the day")
	require.InDelta(t, 30, rh.Gap.Hours(), 1.5)
	require.Greater(t, rh.GapSpread, time.Duration(0))
	require.Less(t, rh.GapSpread, 6*time.Hour)
	require.True(t, rh.plausible())

	// Poisson releases have no steady gap.
	r := rand.New(rand.NewPCG(3, 99))
	var rels []time.Time
	for at := t0.Add(hours(r.ExpFloat64() * 30)); at.Before(t0.Add(4 * week)); at = at.Add(hours(r.ExpFloat64() * 30)) {
		rels = append(rels, at)
	}
	require.Zero(t, Estimate(t0, t0.Add(4*week), observed(rels, 30*time.Minute, 0)).Gap)
}

// A poller every 4 hours sees a chapter and the one that followed it 40
// minutes later in one poll: its history shows no double release, and
// counting its releases as evidence against them (the old estimate: 0.4%
// for eight weekly releases) made the model stop polling after a release
// though the Series releases a second chapter every fourth week. Such a
// history says nothing of doubles: the prior stays.
func TestEstimateDoubleReleasesAreNotDisprovedByACoarseHistory(t *testing.T) {
	t.Parallel()
	rels := weekly(8, tue14, none)
	rels = append(rels, rels[1].Add(40*time.Minute), rels[5].Add(40*time.Minute))
	rh := Estimate(t0, t0.Add(8*week), observed(sorted(rels), 4*time.Hour, 0))
	require.Equal(t, 8, rh.Events)
	require.InDelta(t, 0.05, rh.Burst, 1e-9, "no release known within fineHalf: the prior")

	// Known within 5 minutes, but the second chapter seen only by a poll 5
	// hours after the first: it lay in (first, first+5h], three fifths of
	// which is within BurstSpan, and counts that much.
	fine := observed(weekly(8, tue14, none), 5*time.Minute, 0)
	var hist []Release
	for i, r := range fine {
		hist = append(hist, r)
		if i == 2 || i == 5 {
			hist = append(hist, Release{Seen: r.Seen.Add(5 * time.Hour), After: r.Seen})
		}
	}
	rh = Estimate(t0, t0.Add(8*week), hist)
	require.Equal(t, 10, rh.Events, "seen 5 hours later: a separate event")
	// Exposed: the seven releases known within fineHalf that another
	// followed (not the last, not the two seen 5 hours late).
	require.InDelta(t, (2*0.6+0.1)/(7+2), rh.Burst, 1e-9, "two releases credited 3/5 each")
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

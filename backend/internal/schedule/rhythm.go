package schedule

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

const (
	day  = 24 * time.Hour
	week = 7 * day
)

// Release is one change of a Series' Latest Chapter as the Poll saw it.
type Release struct {
	// Seen is when the poll that first saw the new Latest Chapter ran.
	Seen time.Time
	// After is the previous successful poll of the Series, which did not see
	// it; zero when unknown. The release happened in (After, Seen]: using the
	// middle of that interval instead of Seen keeps the estimate from being
	// pulled later by the polling delay, which would otherwise make every
	// window open a little later than the last and drift.
	After time.Time
}

// estimate returns the best guess of when the release happened and the
// half-width of the interval it is known to lie in.
func (r Release) estimate() (time.Time, time.Duration) {
	if r.After.IsZero() || !r.After.Before(r.Seen) {
		return r.Seen, 0
	}
	half := r.Seen.Sub(r.After) / 2
	return r.Seen.Add(-half), half
}

// Kind names the shape of a Series' release rhythm.
type Kind string

// The rhythms Estimate tells apart.
const (
	KindUnknown   Kind = "not enough history"
	KindDaily     Kind = "daily"
	KindWeekly    Kind = "weekly" // one or more fixed slots in the week
	KindIrregular Kind = "irregular"
	KindDormant   Kind = "dormant"
)

// Slot is one recurring release time within the rhythm's period.
type Slot struct {
	// Offset is the slot's centre from the start of the period: from
	// midnight UTC for a daily rhythm, from Monday 00:00 UTC for a weekly one.
	Offset time.Duration
	// Spread is the slot's jitter (a robust standard deviation).
	Spread time.Duration
	// Hit is the share of periods in which the slot produced a release
	// (skipped weeks lower it).
	Hit float64
}

// Rhythm is what Estimate learned from a Series' history. Rates are per hour.
type Rhythm struct {
	Kind   Kind
	Period time.Duration // 24h (daily) or 168h (weekly); zero for the other kinds
	Slots  []Slot
	// Rate is releases per hour over the observed span.
	Rate float64
	// OffRate is releases per hour that no Slot explains: off-schedule
	// chapters, and the whole rate of an irregular Series. Safety polls are
	// spaced by it.
	OffRate float64
	// Burst is the probability that a release is followed by another within
	// BurstSpan (double releases seen by separate polls).
	Burst float64
	// Gap and GapSpread, when Gap is not zero, say that an irregular
	// Series releases about Gap after its last release (a renewal: an
	// author on a steady pace at no fixed hour); the off-schedule rate is
	// then shaped by the time since the last release (hazard.go).
	Gap, GapSpread time.Duration
	// Slips counts a weekly Series' releases in the observed span that came
	// a day after a slot's window and in none: pooled over a Site they say
	// whether it slips chapters to the next day (slip.go).
	Slips int
	// Confidence is 0..1: the share of releases the Slots explain, scaled
	// down while the history is short.
	Confidence float64
	// Events counts the releases used (double releases counted once).
	Events int
	// From is the start of the observed span, Last the latest release.
	From, Last time.Time
}

const (
	// BurstSpan is how long after a release a second one counts as part of
	// the same burst.
	BurstSpan = 3 * time.Hour

	lookBack     = 12 * week // older history is ignored, so a changed rhythm takes over
	minObserve   = 7 * day   // below this no rhythm is guessed
	fullObserve  = 21 * day  // with this much observation, few releases mean irregular or dormant
	minEvents    = 3         // releases a daily slot or an hour of the day needs (weekly: minWeekly)
	clusterGap   = 150 * time.Minute
	maxSpread    = 3 * time.Hour    // a wider cluster is not a slot
	minSpread    = 10 * time.Minute // floor: even an exact schedule gets a window
	maxUncertain = 3 * time.Hour    // events known less precisely place only loose weekly slots
	maxLoose     = 12 * time.Hour   // and those known less precisely than this none
	looseLevel   = 0.001            // the significance a loose weekly slot needs
	dormantAfter = 28 * day
	maxSlots     = 14
	hourShare    = 0.6 // of an irregular Series' releases, at one hour of the day

	// Smoothing priors for rates: half a release over a week of pretend
	// observation, so a Series with no off-schedule release so far still
	// gets a slow safety poll.
	priorEvents = 0.5
	priorHours  = 168.0
)

// minWeekly is the releases a weekly slot needs, where the share of weeks
// and the significance test agree: in a three-week history (a new
// install's, the simulator's) one skipped or slipped week left a weekly
// Series without a window until its fourth release (docs/adr/0034, step 9).
const minWeekly = 2

// refMonday is a Monday 00:00 UTC; slot offsets count from it.
var refMonday = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// Estimate learns the release rhythm from a Series' Latest Chapter history.
// since is when the Series was first polled (its history starts there); now
// is the time of the estimate. Releases need not be sorted; releases after
// now are ignored.
func Estimate(since, now time.Time, releases []Release) Rhythm {
	from := since
	if from.IsZero() && len(releases) > 0 {
		// Without the first poll's time, the first release is the earliest
		// moment the Series is known to have been watched.
		from = earliestSeen(releases)
	}
	if from.IsZero() || from.After(now) {
		from = now
	}
	if from.Before(now.Add(-lookBack)) {
		from = now.Add(-lookBack)
	}

	sorted := make([]Release, 0, len(releases))
	for _, r := range releases {
		if !r.Seen.After(now) && r.Seen.After(from) {
			sorted = append(sorted, r)
		}
	}
	slices.SortFunc(sorted, func(a, b Release) int { return a.Seen.Compare(b.Seen) })
	events := make([]event, 0, len(sorted))
	// A burst (a second chapter within BurstSpan) is counted only after a
	// release known within fineHalf, and each such release once, at the
	// first release after it (burstShare).
	bursts, exposed := 0.0, 0.0
	led := -1 // the last event counted as a burst's possible first
	for _, r := range sorted {
		n := len(events)
		fine := n > 0 && events[n-1].half <= fineHalf
		if fine && led != n-1 {
			led = n - 1
			exposed++
		}
		if n > 0 && r.Seen.Sub(events[n-1].seen) <= BurstSpan {
			if fine {
				bursts++
			}
			continue
		}
		if fine {
			bursts += burstShare(events[n-1].seen, r)
		}
		mid, half := r.estimate()
		events = append(events, event{mid: mid, half: half, seen: r.Seen})
	}

	obs := now.Sub(from)
	obsH := obs.Hours()
	n := len(events)
	rh := Rhythm{Kind: KindUnknown, Events: n, From: from}
	if n > 0 {
		rh.Last = events[n-1].seen
	}
	rh.Rate = (float64(n) + priorEvents) / (obsH + priorHours)
	rh.OffRate = rh.Rate
	rh.Burst = min(1, (bursts+0.1)/(exposed+2))
	if obs < minObserve || (n < minEvents && obs < fullObserve) {
		return rh
	}

	if n == 0 || now.Sub(rh.Last) > dormantGap(events[max(0, n-9):]) {
		rh.Kind = KindDormant
		// A dormant Series' old releases say little about when it returns.
		rh.Rate = priorEvents / (obsH + priorHours)
		rh.OffRate = rh.Rate
		return rh
	}

	precise := make([]point, 0, n)
	for _, e := range events {
		if e.half <= maxUncertain {
			precise = append(precise, point{at: e.mid, half: e.half})
		}
	}

	explained := 0
	if cl, ok := bestCluster(precise, day); ok && cl.count >= minEvents && significant(cl, n, day) &&
		float64(cl.count) >= 0.5*obs.Hours()/24 && float64(cl.count) >= 0.6*float64(n) && cl.spread <= maxSpread {
		rh.Kind = KindDaily
		rh.Period = day
		cl = cl.refined()
		rh.Slots = []Slot{{Offset: cl.center, Spread: cl.spread, Hit: hitRate(cl.count, obsH/24)}}
		explained = cl.count
	} else {
		weeks := obsH / 168
		rh.Slots, explained = weeklySlots(clusters(precise, week), events, weeks, false)
		if len(rh.Slots) == 0 {
			rh.Slots, explained = looseWeeklySlots(events, weeks)
		}
		slices.SortFunc(rh.Slots, func(a, b Slot) int { return cmp.Compare(a.Offset, b.Offset) })
		if len(rh.Slots) > 0 {
			rh.Kind = KindWeekly
			rh.Period = week
			rh.Slips = rh.slips(events)
		} else {
			rh.Kind = KindIrregular
		}
	}
	if rh.Kind == KindIrregular {
		rh.Gap, rh.GapSpread = renewal(events)
		// No weekly or daily rhythm, but most releases at one hour of the
		// day (a Site's drop, an author's evening): a daily slot whose hit
		// rate is the releases per day, so the safety polls gather there.
		cl, ok := bestCluster(precise, day)
		if !ok || cl.count < minEvents || cl.spread > maxSpread || float64(cl.count) < hourShare*float64(n) || !significantAt(cl, n, day, hourLevel) {
			return rh
		}
		rh.Period = day
		cl = cl.refined()
		rh.Slots = []Slot{{Offset: cl.center, Spread: cl.spread, Hit: hitRate(cl.count, obsH/24)}}
		explained = cl.count
	}
	rh.OffRate = (float64(n-explained) + priorEvents) / (obsH + priorHours)
	support := math.Min(1, float64(explained)/6)
	rh.Confidence = float64(explained) / float64(n) * support
	return rh
}

// weeklySlots are the weekly slots that clusters (on the week) make, and
// the releases they explain. loose: the clusters hold releases known only
// within hours (looseWeeklySlots), so a cluster's spread is its
// posterior's and the bar is higher.
func weeklySlots(cands []cluster, events []event, weeks float64, loose bool) ([]Slot, int) {
	var slots []Slot
	n, explained := len(events), 0
	least, level := minWeekly, 0.01
	if loose {
		least, level = minEvents, looseLevel
	}
	// Largest first, and each tested against the releases no slot
	// accepted so far explains: the other day of a twice-weekly
	// Series is not background noise.
	slices.SortStableFunc(cands, func(a, b cluster) int { return cmp.Compare(b.count, a.count) })
	for _, cl := range cands {
		if len(slots) == maxSlots {
			break
		}
		if cl.count < least || float64(cl.count) < 0.4*weeks {
			continue
		}
		var post cluster // the slot's window, once known
		known := false
		if loose && cl.spread > maxSpread {
			// summarize adds each interval's own width; the posterior
			// keeps only where the intervals overlap, and is worth
			// computing only where enough of them do.
			if depth(cl.vals, priorSpread) < least {
				continue
			}
			post, known = cl.posterior(), true
			cl.spread = post.spread
		}
		// A day-late release of this slot is not background that a
		// chance cluster stands out from (slip.go).
		slot := Rhythm{Period: week, Slots: []Slot{{Offset: cl.center, Spread: cl.spread}}}
		if cl.spread > maxSpread || !significantAt(cl, n-explained-slot.slips(events), week, level) {
			continue
		}
		if !known {
			post = cl.refined()
		}
		slots = append(slots, Slot{Offset: post.center, Spread: post.spread, Hit: hitRate(cl.count, weeks)})
		explained += cl.count
	}
	return slots, explained
}

// looseWeeklySlots places weekly slots from releases known only within
// maxLoose (docs/adr/0034, step 10). A slow poller's history (every 10
// hours at 0.1 requests per Series-hour) and the safety polls of a Series
// without a rhythm know no release within maxUncertain, so no slot was
// ever placed from them: the Series stayed irregular, polled at its weekly
// rate, and every release it found was again known only within hours. A
// weekly release seen by such a poller lands in intervals that shift from
// week to week, and where they overlap places the slot. Since wide
// intervals line up by chance more often, a loose slot needs three
// releases, significance at looseLevel, and its slots must explain half
// of the Series' releases (an author posting every few days at no fixed
// time is not a weekly Series with four slots).
func looseWeeklySlots(events []event, weeks float64) ([]Slot, int) {
	loose := make([]point, 0, len(events))
	wide := false
	for _, e := range events {
		if e.half <= maxLoose {
			loose = append(loose, point{at: e.mid, half: e.half})
			wide = wide || e.half > maxUncertain
		}
	}
	if !wide {
		return nil, 0 // nothing the precise releases did not decide
	}
	// Before any posterior: can the releases that overlap explain half?
	cands := clusters(loose, week)
	can := 0
	for _, cl := range cands {
		if d := depth(cl.vals, priorSpread); d >= minEvents && float64(d) >= 0.4*weeks {
			can += d
		}
	}
	if 2*can < len(events) {
		return nil, 0
	}
	slots, explained := weeklySlots(cands, events, weeks, true)
	if 2*explained < len(events) {
		return nil, 0
	}
	return slots, explained
}

// depth is the most of vals' intervals, each widened by slack on both
// sides, that share one point.
func depth(vals []placed, slack time.Duration) int {
	type edge struct {
		at   time.Duration
		open int
	}
	edges := make([]edge, 0, 2*len(vals))
	for _, v := range vals {
		edges = append(edges, edge{v.pos - v.half - slack, 1}, edge{v.pos + v.half + slack, -1})
	}
	// Opens before closes at the same point: touching intervals share it.
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(b.open, a.open)) })
	most, in := 0, 0
	for _, e := range edges {
		in += e.open
		most = max(most, in)
	}
	return most
}

// burstShare is the chance that r, seen more than BurstSpan after the
// release seen at prev, followed it within BurstSpan: the share of the
// interval r is known to lie in, (After, Seen], that falls within
// BurstSpan of prev (uniform within the interval).
func burstShare(prev time.Time, r Release) float64 {
	from := r.After
	if from.Before(prev) {
		from = prev
	}
	in := prev.Add(BurstSpan).Sub(from)
	if in <= 0 || !from.Before(r.Seen) {
		return 0
	}
	return min(1, float64(in)/float64(r.Seen.Sub(from)))
}

// renewal is the typical gap between an irregular Series' last releases
// and its robust spread, when the last renewalGaps gaps are steady enough
// (spread at most half the gap) to say when the next one is due; zero
// otherwise.
func renewal(events []event) (gap, spread time.Duration) {
	if len(events) < renewalGaps+1 {
		return 0, 0
	}
	recent := events[len(events)-renewalGaps-1:]
	gaps := make([]time.Duration, 0, renewalGaps)
	unknown := 0.0
	for i := 1; i < len(recent); i++ {
		gaps = append(gaps, recent[i].mid.Sub(recent[i-1].mid))
		h := float64(recent[i].half)
		unknown += 2 * h * h / 3 // a gap's two ends are both uncertain
	}
	med, mad := robust(gaps)
	sd := time.Duration(math.Sqrt(mad*mad + unknown/float64(len(gaps))))
	sd = max(sd, med/8, time.Hour)
	if med <= 0 || sd > med/2 {
		return 0, 0
	}
	return med, sd
}

// renewalGaps is how many recent gaps a renewal is read from.
const renewalGaps = 6

type event struct {
	mid  time.Time
	half time.Duration
	seen time.Time
}

func earliestSeen(rs []Release) time.Time {
	t := rs[0].Seen
	for _, r := range rs[1:] {
		if r.Seen.Before(t) {
			t = r.Seen
		}
	}
	return t
}

// dormantGap is how long without a release makes a Series dormant: four
// typical (median) gaps between its recent releases, and never less than
// four weeks.
func dormantGap(recent []event) time.Duration {
	if len(recent) < 2 {
		return dormantAfter
	}
	gaps := make([]time.Duration, 0, len(recent)-1)
	for i := 1; i < len(recent); i++ {
		gaps = append(gaps, recent[i].seen.Sub(recent[i-1].seen))
	}
	slices.Sort(gaps)
	return max(4*median(gaps), dormantAfter)
}

// significant tells a slot from a chance bunching of irregular releases:
// how likely is it that as many of the other n releases, spread evenly
// over the period, would fall in a stretch as wide as the cluster (±2
// spreads), anywhere in the period? Below one in a hundred counts as a
// slot. The test leans towards finding slots: a false slot costs a few
// polls a week, a missed one costs hours of delay on every release.
func significant(cl cluster, n int, p time.Duration) bool {
	return significantAt(cl, n, p, 0.01)
}

// hourLevel is the significance an irregular Series' hour of the day needs:
// the releases are spread over the whole day's circle, where a chance
// bunching of half of them within a few hours is common enough at 0.01.
const hourLevel = 0.001

func significantAt(cl cluster, n int, p time.Duration, level float64) bool {
	width := 4 * cl.spread
	if width >= p {
		return false
	}
	mu := float64(n-cl.count) * float64(width) / float64(p-width)
	return poissonTail(cl.count, mu)*float64(p)/float64(width) < level
}

// poissonTail is P(X >= k) for X ~ Poisson(mu).
func poissonTail(k int, mu float64) float64 {
	if mu <= 0 {
		return 0
	}
	term, below := math.Exp(-mu), 0.0
	for i := range k {
		below += term
		term *= mu / float64(i+1)
	}
	return math.Max(0, 1-below)
}

// hitRate smooths count/periods so a short history does not claim certainty.
func hitRate(count int, periods float64) float64 {
	h := (float64(count) + 0.5) / (periods + 1)
	return math.Max(0.05, math.Min(1, h))
}

type cluster struct {
	center time.Duration // offset in the period
	spread time.Duration
	count  int
	// vals are the cluster's releases on its line and period its circle's
	// length, for refined.
	vals   []placed
	period time.Duration
}

// position is t's offset in a period of length p that starts at refMonday.
func position(t time.Time, p time.Duration) time.Duration {
	d := t.Sub(refMonday) % p
	if d < 0 {
		d += p
	}
	return d
}

// point is a release's estimated time and the half-width of the interval
// it is known to lie in.
type point struct {
	at   time.Time
	half time.Duration
}

// placed is a point's position on the period's circle.
type placed struct {
	pos, half time.Duration
}

// clusters groups release times by their position in the period p, on a
// circle: the cut is placed in the widest empty stretch so a slot near the
// period's boundary (Sunday night, midnight) is not split in two.
func clusters(points []point, p time.Duration) []cluster {
	n := len(points)
	if n == 0 {
		return nil
	}
	pos := make([]placed, n)
	for i, pt := range points {
		pos[i] = placed{pos: position(pt.at, p), half: pt.half}
	}
	slices.SortFunc(pos, func(a, b placed) int { return cmp.Compare(a.pos, b.pos) })
	cut, widest := 0, pos[0].pos+p-pos[n-1].pos
	for i := 1; i < n; i++ {
		if g := pos[i].pos - pos[i-1].pos; g > widest {
			cut, widest = i, g
		}
	}
	line := make([]placed, 0, n)
	for i := range n {
		v := pos[(cut+i)%n]
		if i > 0 && v.pos < line[i-1].pos {
			v.pos += p
		}
		line = append(line, v)
	}
	var out []cluster
	start := 0
	for i := 1; i <= n; i++ {
		if i < n && line[i].pos-line[i-1].pos <= max(clusterGap, line[i].half+line[i-1].half) {
			continue
		}
		out = append(out, summarize(line[start:i], p))
		start = i
	}
	return out
}

func bestCluster(times []point, p time.Duration) (cluster, bool) {
	var best cluster
	found := false
	for _, c := range clusters(times, p) {
		if !found || c.count > best.count || c.count == best.count && c.spread < best.spread {
			best, found = c, true
		}
	}
	return best, found
}

// priorSpread is the jitter assumed before a slot has many releases: the
// scaled median absolute deviation of three or four points is often near
// zero by chance, and a window that narrow misses the next release.
const priorSpread = 30 * time.Minute

// summarize gives a cluster's median and its spread: a robust deviation of
// the points (scaled median absolute deviation), shrunk towards
// priorSpread while the points are few, plus what is not known of each
// point (a release seen by hourly polls is only known within the hour,
// the variance of a uniform interval being half-width²/3).
func summarize(vals []placed, p time.Duration) cluster {
	count := len(vals)
	all := vals
	vals = dropBlurred(vals)
	n := len(vals)
	pos := make([]time.Duration, n)
	unknown := 0.0
	for i, v := range vals {
		pos[i] = v.pos
		h := float64(v.half)
		unknown += h * h / 3
	}
	med, mad := robust(pos)
	const k = 2
	prior := float64(priorSpread)
	variance := (float64(n)*mad*mad+k*prior*prior)/(float64(n)+k) + unknown/float64(n)
	spread := max(time.Duration(math.Sqrt(variance)), minSpread)
	return cluster{center: med % p, spread: spread, count: count, vals: all, period: p}
}

// refined is cl with its slot's window: the posterior's centre and spread
// (posterior.go) in place of the robust ones that chose it. The spread
// stays within maxSpread, as summarize's did: a slot wider than that is not
// plausible, and the planner would estimate it again at every Plan.
func (cl cluster) refined() cluster {
	cl = cl.posterior()
	cl.spread = min(cl.spread, maxSpread)
	return cl
}

// posterior is cl with the posterior's centre and spread, however wide.
func (cl cluster) posterior() cluster {
	c, sp := posteriorSlot(cl.vals)
	c %= cl.period
	if c < 0 {
		c += cl.period
	}
	cl.center, cl.spread = c, sp
	return cl
}

// fineHalf is how precisely a window's polls (minutes apart) place a
// release; a round-robin history or a safety poll places it within hours.
const (
	fineHalf  = 30 * time.Minute
	fineCount = 6
)

// dropBlurred leaves out of a cluster's centre and spread the coarse points
// whose interval holds the centre of its fine ones, once there are
// fineCount of those: such a point says nothing the fine ones do not, and
// its half-width² / 3 would widen every window (the middle of a 4-hour
// interval is up to 2 hours off). A coarse point that does not hold it is
// kept: a release the window missed is what the spread must cover, and
// leaving it out would narrow the window onto where it already is.
func dropBlurred(vals []placed) []placed {
	var fine []time.Duration
	for _, v := range vals {
		if v.half <= fineHalf {
			fine = append(fine, v.pos)
		}
	}
	if len(fine) < fineCount || len(fine) == len(vals) {
		return vals
	}
	slices.Sort(fine)
	c := median(fine)
	out := make([]placed, 0, len(vals))
	for _, v := range vals {
		if v.half > fineHalf && v.pos-v.half <= c && c <= v.pos+v.half {
			continue
		}
		out = append(out, v)
	}
	return out
}

// median of sorted values: the middle one, or halfway between the two.
func median[T ~int64 | ~float64](v []T) T {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return v[n/2-1] + (v[n/2]-v[n/2-1])/2
}

// robust is the median of xs (in any order; left as they are) and their
// scaled median absolute deviation: a normal sample's standard deviation
// that a few outliers do not move.
func robust[T ~int64 | ~float64](xs []T) (med T, sd float64) {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	med = median(sorted)
	dev := make([]T, len(sorted))
	for i, x := range sorted {
		dev[i] = max(x-med, med-x)
	}
	slices.Sort(dev)
	return med, 1.4826 * float64(median(dev))
}

// Describe renders the rhythm for the Series page and the Owner console, in
// loc (nil means UTC): "weekly, Tuesdays ~14:00", "twice a week, Mondays
// ~10:00 and Thursdays ~10:00", "daily ~06:30", "irregular, about 2 a week",
// "dormant since 2 Jan 2026", "not enough history".
func (r Rhythm) Describe(loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	switch r.Kind {
	case KindDaily:
		if len(r.Slots) == 0 {
			return "daily"
		}
		return "daily ~" + refMonday.Add(r.Slots[0].Offset).In(loc).Format("15:04")
	case KindWeekly:
		parts := make([]string, len(r.Slots))
		for i, s := range r.Slots {
			t := refMonday.Add(s.Offset).In(loc)
			parts[i] = t.Weekday().String() + "s ~" + t.Format("15:04")
		}
		var lead string
		switch len(r.Slots) {
		case 1:
			lead = "weekly"
		case 2:
			lead = "twice a week"
		default:
			lead = fmt.Sprintf("%d times a week", len(r.Slots))
		}
		if len(parts) > 1 {
			return lead + ", " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
		}
		return lead + ", " + parts[0]
	case KindIrregular:
		perWeek := r.Rate * 168
		var d string
		if perWeek >= 1 {
			d = fmt.Sprintf("irregular, about %.0f a week", perWeek)
		} else {
			d = fmt.Sprintf("irregular, about %.0f a month", perWeek*30/7)
		}
		if len(r.Slots) == 1 {
			d += ", mostly ~" + refMonday.Add(r.Slots[0].Offset).In(loc).Format("15:04")
		}
		return d
	case KindDormant:
		if r.Last.IsZero() {
			return "dormant"
		}
		return "dormant since " + r.Last.In(loc).Format("2 Jan 2006")
	}
	return string(KindUnknown)
}

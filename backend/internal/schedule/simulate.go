package schedule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Pattern is the release behaviour of one synthetic Series.
type Pattern int

// The patterns a simulation mixes.
const (
	Weekly Pattern = iota
	Twice
	Daily
	Irregular
	Dormant
	numPatterns
)

var patternNames = [numPatterns]string{"weekly", "twice", "daily", "irregular", "dormant"}

func (p Pattern) String() string {
	if p < 0 || p >= numPatterns {
		return "pattern(" + strconv.Itoa(int(p)) + ")"
	}
	return patternNames[p]
}

// Mix is the share of Series following each Pattern; the shares sum to 1.
type Mix [numPatterns]float64

// DefaultMix is the mix of issue 12.
var DefaultMix = Mix{Weekly: 0.55, Twice: 0.10, Daily: 0.12, Irregular: 0.15, Dormant: 0.08}

// ErrMix reports a mix that cannot be simulated.
var ErrMix = errors.New("invalid mix")

// ParseMix reads "weekly=0.55,twice=0.1,daily=0.12,irregular=0.15,dormant=0.08".
// Patterns left out get no share; the shares must sum to 1 (within 0.01,
// then normalised).
func ParseMix(s string) (Mix, error) {
	var m Mix
	var seen [numPatterns]bool
	if strings.TrimSpace(s) == "" {
		return m, fmt.Errorf("%w: empty; want e.g. %s", ErrMix, DefaultMix)
	}
	for part := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return m, fmt.Errorf("%w: %q is not name=share", ErrMix, part)
		}
		p := slices.Index(patternNames[:], strings.TrimSpace(name))
		if p < 0 {
			return m, fmt.Errorf("%w: unknown pattern %q (known: %s)", ErrMix, name, strings.Join(patternNames[:], ", "))
		}
		if seen[p] {
			return m, fmt.Errorf("%w: %s given twice", ErrMix, name)
		}
		seen[p] = true
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1 {
			return m, fmt.Errorf("%w: share of %s is %q, want a number in [0, 1]", ErrMix, name, val)
		}
		m[p] = f
	}
	sum := 0.0
	for _, f := range m {
		sum += f
	}
	if math.Abs(sum-1) > 0.01 {
		return m, fmt.Errorf("%w: shares sum to %.4g, want 1", ErrMix, sum)
	}
	for i := range m {
		m[i] /= sum
	}
	return m, nil
}

func (m Mix) String() string {
	parts := make([]string, 0, numPatterns)
	for p, f := range m {
		parts = append(parts, fmt.Sprintf("%s=%s", patternNames[p], strconv.FormatFloat(f, 'g', 4, 64)))
	}
	return strings.Join(parts, ",")
}

// SimConfig describes one simulation.
type SimConfig struct {
	Series int
	Weeks  int     // the first half is history, the second is measured
	Budget float64 // requests per Series-hour, shared by the Site
	Seed   uint64
	Mix    Mix
	// Planner is the adaptive policy's settings (zero: defaults).
	Planner Planner

	// Trace, when set, is replayed instead of the generator's trace (whose
	// settings Series, Weeks, Seed and Mix are then unused); Budget is per
	// Site: Budget × the Site's held Series per hour.
	Trace *Trace
	// History is how much of the trace is history (zero: the first half).
	History time.Duration
	// Listing models each Site's listing as its last Listing updates (0: no
	// listings).
	Listing int
}

// Limits of a simulation, so a typo cannot ask for a week of CPU.
const (
	maxSimSeries = 200_000
	maxSimWeeks  = 104
	// maxSimListing bounds --listing: no Site's listing shows more.
	maxSimListing = 10_000
)

// ErrSimConfig reports a simulation that cannot run.
var ErrSimConfig = errors.New("invalid simulation")

func (c SimConfig) validate() error {
	if c.Listing < 0 || c.Listing > maxSimListing {
		return fmt.Errorf("%w: listing %d, want 0..%d", ErrSimConfig, c.Listing, maxSimListing)
	}
	if c.Trace != nil {
		span := c.Trace.Last.Sub(c.Trace.First)
		switch {
		case math.IsNaN(c.Budget) || c.Budget <= 0 || c.Budget > 60:
			return fmt.Errorf("%w: budget %v requests per Series-hour, want more than 0 and at most 60", ErrSimConfig, c.Budget)
		case c.History < 0 || c.History > 0 && c.History >= span:
			return fmt.Errorf("%w: history %v, want less than the trace's span %v", ErrSimConfig, c.History, span.Round(time.Minute))
		}
		_, err := c.Planner.withDefaults()
		return err
	}
	switch {
	case c.Series < 1 || c.Series > maxSimSeries:
		return fmt.Errorf("%w: series %d, want 1..%d", ErrSimConfig, c.Series, maxSimSeries)
	case c.Weeks < 2 || c.Weeks > maxSimWeeks:
		return fmt.Errorf("%w: weeks %d, want 2..%d (half history, half measured)", ErrSimConfig, c.Weeks, maxSimWeeks)
	case math.IsNaN(c.Budget) || c.Budget <= 0 || c.Budget > 60:
		return fmt.Errorf("%w: budget %v requests per Series-hour, want more than 0 and at most 60", ErrSimConfig, c.Budget)
	case c.Budget*float64(c.Series) < 1:
		return fmt.Errorf("%w: budget %v × %d Series is less than one request per hour", ErrSimConfig, c.Budget, c.Series)
	}
	sum := 0.0
	for _, f := range c.Mix {
		if f < 0 || math.IsNaN(f) {
			return fmt.Errorf("%w: mix %s", ErrSimConfig, c.Mix)
		}
		sum += f
	}
	if math.Abs(sum-1) > 0.01 {
		return fmt.Errorf("%w: mix %s sums to %.4g", ErrSimConfig, c.Mix, sum)
	}
	_, err := c.Planner.withDefaults()
	return err
}

// PolicyResult is what one policy achieved over the measured half.
type PolicyResult struct {
	// Median and P90 are Reader-weighted detection latencies: from a
	// release to the poll that first saw it.
	Median, P90 time.Duration
	// PerSeriesHour is polls per Series per hour over the measured half.
	PerSeriesHour float64
	Polls         int
	// MaxHour is the most polls in any half-open hour of the measured half.
	MaxHour int
	// Undetected counts releases still unseen a week after the end.
	Undetected int
	// OverBudget counts the Sites with an hour above their budget.
	OverBudget int
	// ListingPolls are the listing reads among Polls.
	ListingPolls int
	ByPattern    [numPatterns]PatternResult
	// Reasons counts the polls made for each reason.
	Reasons map[string]int

	samples []sample
}

// PatternResult is a policy's figures for the Series of one Pattern.
type PatternResult struct {
	Median, P90   time.Duration
	Releases      int
	PerSeriesHour float64
}

// SimResult holds both policies' figures.
type SimResult struct {
	Config               SimConfig
	Releases             int // released in the measured half
	Series               [numPatterns]int
	BudgetPerHour        int // the Site's budget: Budget × Series (the largest Site's, with several)
	Adaptive, RoundRobin PolicyResult
	// Sites and Held count the trace's Sites and held Series (Readers > 0).
	Sites, Held int
}

// simStart is the fake clock's epoch, a Monday: fixed so a seed always
// replays the same weekdays.
var simStart = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)

// drain is how long after the end polls go on so late releases get seen.
const drain = week

// Simulate replays a synthetic release trace through the planner with a
// fake clock, and through round-robin at the same budget. The trace is a
// function of the seed alone.
func Simulate(ctx context.Context, cfg SimConfig) (SimResult, error) {
	if err := cfg.validate(); err != nil {
		return SimResult{}, err
	}
	res := SimResult{Config: cfg}
	tr := newTrace(cfg)
	if cfg.Trace != nil {
		tr = newRecordedTrace(cfg)
	}
	for _, s := range tr.series {
		if !s.held {
			continue
		}
		res.Series[s.pattern]++
		res.Releases += len(s.releases) - s.measuredFrom
		res.Held++
	}
	res.Sites = len(tr.sites)
	for _, st := range tr.sites {
		res.BudgetPerHour = max(res.BudgetPerHour, st.perHour)
	}
	res.RoundRobin = tr.roundRobin()
	var err error
	res.Adaptive, err = tr.adaptive(ctx)
	if err != nil {
		return res, err
	}
	return res, nil
}

// simSeries is one synthetic Series: its true release times.
type simSeries struct {
	site     int
	held     bool // Readers > 0: Lectern polls it
	pattern  Pattern
	readers  int
	releases []simRelease // sorted by time
	// measuredFrom is the index of the first release in the measured half.
	measuredFrom int
}

// simRelease is one true release and how the trace made it.
type simRelease struct {
	at  time.Time
	tag releaseTag
}

type releaseTag uint8

const (
	onSchedule releaseTag = iota
	offSchedule
	secondOfDouble
	afterMove
	random
)

type trace struct {
	cfg         SimConfig
	start, half time.Time
	end         time.Time
	rrSpacing   time.Duration // round-robin interval at the budget
	series      []simSeries
	sites       []simSite
}

// simSite is one Site of a trace: its Series and every release on it, in
// time order, which is what its listing shows.
type simSite struct {
	name     string
	members  []int // every Series of the Site, held or not
	held     int
	perHour  int
	releases []siteRelease
}

type siteRelease struct {
	at time.Time
	i  int
}

// The synthetic trace. Rhythmic Series release at a fixed weekday and hour
// (half of them at one of three hours popular on the Site, so windows
// collide), with a per-Series jitter whose standard deviation is
// 120 min × u³ (median 15 min, a fifth above an hour), a skipped week 8% of
// the time, an off-schedule release anywhere within ±12 h 3% of the time, a
// double release (a second chapter up to 3 h later) 5% of the time, and a
// 5% chance per Series that its schedule moves to another weekday and hour
// partway through. Irregular Series release as a Poisson process with a
// mean gap between 2 and 10 days. Dormant Series release nothing.
const (
	skipWeek   = 0.08
	offSched   = 0.03
	doubleRel  = 0.05
	moveRhythm = 0.05
	maxReaders = 200
)

func newTrace(cfg SimConfig) *trace {
	t := &trace{
		cfg:       cfg,
		start:     simStart,
		half:      simStart.Add(time.Duration(cfg.Weeks) * week / 2),
		end:       simStart.Add(time.Duration(cfg.Weeks) * week),
		rrSpacing: time.Duration(float64(time.Hour) / cfg.Budget),
	}
	site := rand.New(rand.NewPCG(cfg.Seed, 0x5173))
	var popular [3]int
	for i := range popular {
		popular[i] = site.IntN(24)
	}
	// Classic Zipf: the n-th most held Series has about 1/n of the top
	// one's Readers, so P(Readers = k) falls as k^-2.
	zipf := rand.NewZipf(rand.New(rand.NewPCG(cfg.Seed, 0x2e4d)), 2, 1, maxReaders-1)
	t.series = make([]simSeries, cfg.Series)
	for i := range t.series {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1<<32))
		s := &t.series[i]
		s.readers = 1 + int(zipf.Uint64())
		s.pattern = pick(cfg.Mix, r.Float64())
		s.releases = t.releases(s.pattern, r, popular)
		slices.SortStableFunc(s.releases, func(a, b simRelease) int { return a.at.Compare(b.at) })
		s.measuredFrom, _ = slices.BinarySearchFunc(s.releases, t.half, func(a simRelease, b time.Time) int { return a.at.Compare(b) })
		s.held = true
	}
	t.sites = []simSite{{name: "sim"}}
	t.index()
	return t
}

// index fills each Site's members, releases and budget from the Series.
func (t *trace) index() {
	for i := range t.series {
		s := &t.series[i]
		st := &t.sites[s.site]
		st.members = append(st.members, i)
		if s.held {
			st.held++
		}
		for _, r := range s.releases {
			st.releases = append(st.releases, siteRelease{at: r.at, i: i})
		}
	}
	for k := range t.sites {
		st := &t.sites[k]
		slices.SortStableFunc(st.releases, func(a, b siteRelease) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.i, b.i)) })
		st.perHour = max(1, int(math.Floor(t.cfg.Budget*float64(st.held))))
	}
}

func pick(m Mix, u float64) Pattern {
	acc := 0.0
	last := Dormant
	for p, f := range m {
		if f > 0 {
			last = Pattern(p)
		}
		acc += f
		if u < acc {
			return Pattern(p)
		}
	}
	return last
}

func (t *trace) releases(p Pattern, r *rand.Rand, popular [3]int) []simRelease {
	var out []simRelease
	add := func(at time.Time, tag releaseTag) {
		if !at.Before(t.start) && at.Before(t.end) {
			out = append(out, simRelease{at: at, tag: tag})
		}
	}
	hour := func() int {
		if r.Float64() < 0.5 {
			return popular[r.IntN(len(popular))]
		}
		return r.IntN(24)
	}
	switch p {
	case Irregular:
		gap := (2 + 8*r.Float64()) * 24
		for at := t.start.Add(hours(r.ExpFloat64() * gap)); at.Before(t.end); at = at.Add(hours(r.ExpFloat64() * gap)) {
			add(at, random)
		}
		return out
	case Dormant:
		return nil
	}
	jitter := 120 * math.Pow(r.Float64(), 3) // minutes
	days := func() []int {
		switch p {
		case Daily:
			return []int{0, 1, 2, 3, 4, 5, 6}
		case Twice:
			d := r.IntN(7)
			return []int{d, (d + 3 + r.IntN(2)) % 7}
		}
		return []int{r.IntN(7)}
	}
	weekdays, h := days(), hour()
	moveAt, moved := t.end, false
	if r.Float64() < moveRhythm {
		moveAt = t.start.Add(time.Duration(r.Int64N(int64(t.end.Sub(t.start)))))
	}
	for wk := -1; wk <= t.cfg.Weeks; wk++ {
		if weekStart := t.start.Add(time.Duration(wk) * week); !weekStart.Before(moveAt) {
			weekdays, h = days(), hour()
			moveAt, moved = t.end.Add(week), true
		}
		for _, d := range weekdays {
			center := t.start.Add(time.Duration(wk)*week + time.Duration(d)*day + time.Duration(h)*time.Hour)
			if r.Float64() < skipWeek {
				continue
			}
			at, tag := center.Add(time.Duration(r.NormFloat64()*jitter*float64(time.Minute))), onSchedule
			if moved {
				tag = afterMove
			}
			if r.Float64() < offSched {
				at, tag = center.Add(time.Duration((r.Float64()*24-12)*float64(time.Hour))), offSchedule
			}
			add(at, tag)
			if r.Float64() < doubleRel {
				add(at.Add(time.Duration(r.Float64()*3*float64(time.Hour))), secondOfDouble)
			}
		}
	}
	return out
}

// rrPoll is the round-robin poller's k-th poll of Series i: Series are
// staggered evenly over the interval.
func (t *trace) rrPhase(i int) time.Duration {
	return time.Duration(int64(t.rrSpacing) * int64(i) / int64(len(t.series)))
}

// rrSeen is the first round-robin poll of Series i at or after at.
func (t *trace) rrSeen(i int, at time.Time) time.Time {
	first := t.start.Add(t.rrPhase(i))
	k := ceilDiv(int64(at.Sub(first)), int64(t.rrSpacing))
	return first.Add(time.Duration(k) * t.rrSpacing)
}

// history is what the first half looked like to a round-robin poller at
// the budget: the planner starts from the same facts as round-robin.
func (t *trace) history(i int) Series {
	s := &t.series[i]
	out := Series{Key: fmt.Sprintf("sim:%d", i), Readers: s.readers, Since: t.start.Add(t.rrPhase(i))}
	for _, rel := range s.releases[:s.measuredFrom] {
		seen := t.rrSeen(i, rel.at)
		if !seen.Before(t.half) {
			break
		}
		if n := len(out.Releases); n > 0 && out.Releases[n-1].Seen.Equal(seen) {
			continue
		}
		out.Releases = append(out.Releases, Release{Seen: seen, After: seen.Add(-t.rrSpacing)})
	}
	out.LastPoll = t.rrSeen(i, t.half).Add(-t.rrSpacing)
	return out
}

type sample struct {
	latency time.Duration
	weight  float64
	pattern Pattern
	tag     releaseTag
	reason  string
}

func (t *trace) roundRobin() PolicyResult {
	var samples []sample
	var polls [numPatterns]int
	for i := range t.series {
		s := &t.series[i]
		if !s.held {
			continue
		}
		for _, rel := range s.releases[s.measuredFrom:] {
			samples = append(samples, sample{latency: t.rrSeen(i, rel.at).Sub(rel.at), weight: float64(s.readers), pattern: s.pattern, tag: rel.tag})
		}
		first, stop := t.rrSeen(i, t.half), t.rrSeen(i, t.end)
		polls[s.pattern] += int(stop.Sub(first) / t.rrSpacing)
	}
	res := t.summarize(samples, polls, nil)
	res.Reasons = map[string]int{"round-robin": res.Polls}
	// Staggered evenly, the busiest hour holds at most one poll per
	// Series per interval, rounded up.
	for _, st := range t.sites {
		res.MaxHour = max(res.MaxHour, int(math.Ceil(float64(time.Hour)/float64(t.rrSpacing)*float64(st.held))))
	}
	return res
}

// maxPerHourWindow is the most of the sorted times in any [t, t+1h).
func maxPerHourWindow(times []int64) int {
	best, lo := 0, 0
	for hi := range times {
		for times[hi]-times[lo] >= int64(time.Hour) {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func (t *trace) summarize(samples []sample, polls [numPatterns]int, reasons map[string]int) PolicyResult {
	res := PolicyResult{Reasons: reasons, samples: samples}
	hoursMeasured := t.end.Sub(t.half).Hours()
	res.Median, res.P90 = weightedQuantiles(samples, -1)
	for p := range numPatterns {
		res.Polls += polls[p]
		pr := &res.ByPattern[p]
		pr.Median, pr.P90 = weightedQuantiles(samples, Pattern(p))
		for _, s := range samples {
			if s.pattern == Pattern(p) {
				pr.Releases++
			}
		}
		count := 0
		for _, s := range t.series {
			if s.held && s.pattern == Pattern(p) {
				count++
			}
		}
		if count > 0 {
			pr.PerSeriesHour = float64(polls[p]) / float64(count) / hoursMeasured
		}
	}
	held := 0
	for _, s := range t.series {
		if s.held {
			held++
		}
	}
	res.PerSeriesHour = float64(res.Polls) / float64(max(held, 1)) / hoursMeasured
	return res
}

// weightedQuantiles gives the Reader-weighted median and 90th percentile
// of the samples of pattern p (all patterns when p < 0).
func weightedQuantiles(samples []sample, p Pattern) (time.Duration, time.Duration) {
	var sel []sample
	total := 0.0
	for _, s := range samples {
		if p < 0 || s.pattern == p {
			sel = append(sel, s)
			total += s.weight
		}
	}
	if len(sel) == 0 {
		return 0, 0
	}
	slices.SortFunc(sel, func(a, b sample) int { return cmp.Compare(a.latency, b.latency) })
	q := func(f float64) time.Duration {
		acc := 0.0
		for _, s := range sel {
			acc += s.weight
			if acc >= f*total {
				return s.latency
			}
		}
		return sel[len(sel)-1].latency
	}
	return q(0.5), q(0.9)
}

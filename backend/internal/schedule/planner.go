package schedule

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// The reasons a Decision carries. Every Decision has exactly one, and the
// paused one names the time (see ReasonPaused).
const (
	ReasonWindow     = "expected release window"
	ReasonSafety     = "safety check"
	ReasonHint       = "reader hint"
	ReasonNoHistory  = "not enough history"
	ReasonOverBudget = "over budget"
	ReasonOwner      = "owner request"
)

// ReasonPaused is the reason of every Series of a Site that is backing off.
func ReasonPaused(until time.Time) string {
	return "site paused until " + until.UTC().Format(time.RFC3339)
}

// Defaults of a zero Planner.
const (
	DefaultInterval = time.Hour
	DefaultHorizon  = 3 * time.Minute
	DefaultMinGap   = 3 * time.Minute
	DefaultMaxGap   = 24 * time.Hour
)

// utilization is the share of a Site's budget the planner plans to spend on
// its own schedule; the rest absorbs hints, owner requests and releases
// that cluster at the same hour, so those rarely push a poll over budget.
// 0.98, not 0.95: a poll pushed out is dropped by value, and since the
// starved Series is valued as a certain release (value) nothing waits
// for ever; the 3% more polls improved every simulator figure at 0.1 and
// 0.25 but novels' median (ADR 0034).
const utilization = 0.98

// Errors Plan reports for input it cannot plan with.
var (
	ErrBudget  = errors.New("schedule: site budget must be between 1 and 3600000 requests per hour")
	ErrPlanner = errors.New("schedule: invalid planner settings")
)

// Series is what the planner needs to know of one Series, read from the
// store. Readers of zero (a Series no Reader holds but the Owner asked for)
// is planned as one Reader.
type Series struct {
	Key     string
	Readers int
	// Since is the Series' first poll: its history starts there.
	Since time.Time
	// Releases are the Latest Chapter changes seen after the first poll,
	// oldest first (the planner reads the newest from the end).
	Releases []Release
	// LastPoll is the last poll that reached the Site (zero: never polled).
	LastPoll time.Time
	// Hint: a Reader recorded Progress beyond the stored Latest Chapter
	// after LastPoll.
	Hint bool
	// OwnerRequest: the Owner asked for a poll now.
	OwnerRequest bool
	// ListingNewer: the Site's healthy listing shows a chapter newer than
	// the stored Latest Chapter (listing.go). Listed: the Site's healthy
	// listing covers the Series, which drops to a safety poll every
	// ListedGap.
	ListingNewer, Listed bool
	// Rhythm is Estimate(Since, t, Releases) computed by the caller at
	// some recent t (refresh when a release is stored, and daily); nil
	// makes Plan estimate it.
	Rhythm *Rhythm
}

// Site is the Site all Series of one Plan belong to.
type Site struct {
	Name string
	// PerHour is the request budget: no half-open hour ever holds more
	// polls of this Site than this. See BudgetFromPace for the default.
	PerHour int
	// PausedUntil is the end of the Site's back-off, zero when none.
	PausedUntil time.Time
	// ListingPeriod is how often the Site's healthy listing is read (zero:
	// none). Read less often than listedWindowsAbove, it leaves the Series
	// it covers their windows (listing.go).
	ListingPeriod time.Duration
	// Queued are the Site's other held Series, whose poll is already
	// queued: they get no Decision, but they count in the price, which is
	// the Site's long-run rate and so belongs to every held Series. Left
	// out, the price would follow which Series happen to be queued (the
	// most valuable, which weigh most) and every forecast would move with
	// it from one Plan to the next (docs/adr/0033).
	Queued []Series
}

// BudgetFromPace is the default budget of a Site paced at one request per
// pace: every request the pacing gate lets through.
func BudgetFromPace(pace time.Duration) (int, error) {
	if pace <= 0 {
		return 0, fmt.Errorf("budget from pace %v: %w", pace, ErrBudget)
	}
	b := int(time.Hour / pace)
	if b < 1 || b > maxPerHour {
		return 0, fmt.Errorf("budget from pace %v: %w", pace, ErrBudget)
	}
	return b, nil
}

const maxPerHour = 3_600_000

// Decision is the plan for one Series.
type Decision struct {
	Key string
	// At is the Series' next poll: exact when Due, a forecast otherwise.
	At     time.Time
	Reason string
	// Due means At is within this Plan's horizon and holds one of the
	// Site's budget slots: enqueue the poll for At. Other Decisions are
	// shown as next_poll_at and planned again by a later Plan.
	Due bool
}

// Planner holds the settings of the scheduling policy; its zero value uses
// the defaults.
type Planner struct {
	// Interval is POLL_INTERVAL: how often a Series with too little history
	// is polled.
	Interval time.Duration
	// Horizon is the span one Plan commits polls for. Call Plan once per
	// Horizon per Site (at now, now+Horizon, ...), so two Plans never hand
	// out the same budget slot.
	Horizon time.Duration
	// MinGap is the densest polling of one Series, MaxGap the slowest
	// safety poll.
	MinGap, MaxGap time.Duration
}

func (p Planner) withDefaults() (Planner, error) {
	if p.Interval == 0 {
		p.Interval = DefaultInterval
	}
	if p.Horizon == 0 {
		p.Horizon = DefaultHorizon
	}
	if p.MinGap == 0 {
		p.MinGap = DefaultMinGap
	}
	if p.MaxGap == 0 {
		p.MaxGap = DefaultMaxGap
	}
	const most = 30 * day
	if p.Interval < 0 || p.Interval > most || p.Horizon < 0 || p.Horizon > day ||
		p.MinGap < 0 || p.MaxGap < p.MinGap || p.MaxGap > most {
		return p, fmt.Errorf("%w: interval %v, horizon %v, min gap %v, max gap %v", ErrPlanner, p.Interval, p.Horizon, p.MinGap, p.MaxGap)
	}
	return p, nil
}

// Plan decides the next poll of every Series of one Site at now: one
// Decision per Series, in the order given. Decisions that are Due hold
// distinct budget slots in [now, now+Horizon): slots are spaced so that
// no hour ever holds more than site.PerHour of them. When more polls are
// wanted than there are slots, the least valuable are dropped first: value
// is the Readers holding the Series times the probability that a release
// is waiting to be seen; an Owner request outranks everything, a hint
// counts as a certain release.
func (p Planner) Plan(now time.Time, site Site, series []Series) ([]Decision, error) {
	var b buffers
	return p.plan(now, site, series, &b, nil)
}

// buffers are reused across Plans by the simulator so replaying weeks does
// not allocate a plan's worth of memory per step.
type buffers struct {
	wants []want
	terms []term
	due   []dueWant
	used  map[int64]struct{}
	slots slotSet
	rh    []*Rhythm
	cands []candidate
	occ   []occurrence
}

type want struct {
	at     time.Time
	reason string
}

// dueWant is a poll competing for the horizon's slots.
type dueWant struct {
	value float64
	at    int64
	i     int
}

func (p Planner) plan(now time.Time, site Site, series []Series, b *buffers, dst []Decision) ([]Decision, error) {
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	if site.PerHour < 1 || site.PerHour > maxPerHour {
		return nil, fmt.Errorf("plan site %q with budget %d: %w", site.Name, site.PerHour, ErrBudget)
	}
	// The model works in Unix nanoseconds, which hold years 1678 to 2262.
	if y := now.Year(); y < 1970 || y > 2200 {
		return nil, fmt.Errorf("plan site %q at %v: %w: time out of range", site.Name, now, ErrPlanner)
	}
	dst = slices.Grow(dst[:0], len(series))[:len(series)]
	end := now.Add(p.Horizon)
	start := now
	if site.PausedUntil.After(now) {
		start = site.PausedUntil
	}
	if !start.Before(end) {
		reason := ReasonPaused(site.PausedUntil)
		for i, s := range series {
			dst[i] = Decision{Key: s.Key, At: site.PausedUntil, Reason: reason}
		}
		return dst, nil
	}

	keep := site.ListingPeriod > listedWindowsAbove
	c := p.sitePrice(now, site, series, b, keep)
	p.wants(now, start, end, series, b, c, slipRate(now, b.rh), keep)
	allocate(now, site, start, end, series, b, dst)
	return dst, nil
}

// sitePrice reads every Series' rhythm into b.rh (estimating one that is
// missing or implausible) and returns the price of a poll: it depends on
// every Series of the Site, the queued ones too, so rhythms come first.
func (p Planner) sitePrice(now time.Time, site Site, series []Series, b *buffers, keep bool) float64 {
	b.terms = b.terms[:0]
	fixed := 0.0
	// b.rh holds the planned Series' rhythms, then the queued ones': the
	// price and the Site's slip share (slipRate) read them all.
	b.rh = slices.Grow(b.rh[:0], len(series)+len(site.Queued))
	add := func(s *Series) {
		rh := s.Rhythm
		if !rh.plausible() {
			// Missing, or not something Estimate could have made (a zero
			// spread would stall the model, a tiny period flood it).
			r := Estimate(s.Since, now, s.Releases)
			rh = &r
		}
		b.rh = append(b.rh, rh)
		fixed = p.priceTerms(now, s, rh, b, fixed, keep)
	}
	for i := range series {
		add(&series[i])
	}
	for i := range site.Queued {
		add(&site.Queued[i])
	}
	return p.price(fixed, float64(site.PerHour)*utilization, b.terms)
}

// priceTerms adds one Series' share of the Site's rate: to b.terms, or to
// fixed (returned) when it does not depend on the price. keep: the Site's
// listing is read rarely (keepsWindows).
func (p Planner) priceTerms(now time.Time, s *Series, rh *Rhythm, b *buffers, fixed float64, keep bool) float64 {
	switch {
	case s.Listed && !s.LastPoll.IsZero():
		// Covered by the listing: its safety poll, not its rhythm, but
		// for the windows a slow listing leaves it.
		if keepsWindows(keep, s, rh) {
			b.terms = appendSlotTerms(b.terms, p, s, rh)
		}
		return fixed + 1/ListedGap.Hours()
	case rh.Kind == KindUnknown:
		return fixed + 1/p.Interval.Hours()
	}
	off := len(b.terms)
	b.terms = appendTerms(b.terms, p, s, rh)
	// A renewal early in its gap polls at its shaped rate, down to
	// renewalLo of the flat one: priced at the flat rate, a Site of such
	// Series left a tenth of its budget unspent (novels). It is priced at
	// the rate it polls at now, up to renewalPriceHi times the flat rate:
	// a due renewal polls at up to renewalHi times it, and those polls,
	// valuable, win slots by value as a window's do in the busiest hour.
	// Priced at the full shaped rate, the price rose whenever renewals
	// fell due and slowed the Site's other Series (generator p90 44.0 ->
	// 45.5); capped at the flat rate, due renewals overran the budget
	// (generator at 0.1: 99 releases unseen, value's starvation guard
	// aside); capped at 2, novels at 0.05 lost 8% on the median. After an
	// outage or a hiatus every renewal is overdue, back at the flat rate
	// and priced at it (ADR 0034's long-run price starved Series then).
	if mu, sigma, lastRel, ok := renewalOf(s, rh); ok {
		b.terms[off].a *= math.Sqrt(min(renewalPriceHi, renewalShape(mu, sigma, now.UnixNano()-lastRel)))
	}
	return fixed
}

// wants decides, at price c, when each Series would be polled were slots
// unlimited (b.wants, never before start), and values the ones that fall
// in [start, end) and so compete for the horizon's slots (b.due).
func (p Planner) wants(now, start, end time.Time, series []Series, b *buffers, c float64, slip float64, keep bool) {
	n := len(series)
	b.wants = slices.Grow(b.wants[:0], n)[:n]
	b.due = b.due[:0]
	var m model
	for i := range series {
		s, rh := &series[i], b.rh[i]
		last, polled := p.lastPoll(now, s)
		if polled && rh.Kind != KindUnknown {
			b.occ = b.occ[:0]
			if keepsWindows(keep, s, rh) {
				// Its windows alone, up to its safety poll: the next may be
				// further than MaxGap from the last poll.
				bp := p
				bp.MaxGap = max(p.MaxGap, ListedGap)
				m.build(bp, s, last.UnixNano(), rh, slip, &b.cands, &b.occ)
				m.off, m.burst = 0, 0
			} else {
				m.build(p, s, last.UnixNano(), rh, slip, &b.cands, &b.occ)
			}
		}
		w := p.want(now, s, rh, &m, c, keep)
		if w.at.Before(start) {
			w.at = start
		}
		if w.at.Before(end) {
			// Only polls competing for this horizon's slots need a value.
			b.due = append(b.due, dueWant{value: p.value(s, rh, &m, w), at: w.at.UnixNano(), i: i})
		}
		b.wants[i] = w
	}
}

// allocate writes every Series' decision into dst: its want, except that
// the due wants take the budget's slots in [start, end), most valuable
// first, and those left without one are over budget until end.
func allocate(now time.Time, site Site, start, end time.Time, series []Series, b *buffers, dst []Decision) {
	// Most valuable first; ties by time, then key, so a Plan is a
	// function of its input alone.
	slices.SortFunc(b.due, func(x, y dueWant) int {
		switch {
		case x.value > y.value:
			return -1
		case x.value < y.value:
			return 1
		case x.at != y.at:
			return compareInt64(x.at, y.at)
		}
		return cmp.Compare(series[x.i].Key, series[y.i].Key)
	})
	spacing := (time.Hour + time.Duration(site.PerHour) - 1) / time.Duration(site.PerHour)
	first := ceilDiv(start.UnixNano(), int64(spacing))
	last := ceilDiv(end.UnixNano(), int64(spacing)) - 1
	for i := range series {
		dst[i] = Decision{Key: series[i].Key, At: b.wants[i].at, Reason: b.wants[i].reason}
	}
	take := b.slotTaker(first, last)
	for _, d := range b.due {
		i := d.i
		k, ok := take(ceilDiv(d.at, int64(spacing)))
		if !ok {
			dst[i].At = end
			dst[i].Reason = ReasonOverBudget
			continue
		}
		dst[i].At = time.Unix(0, k*int64(spacing)).In(now.Location())
		dst[i].Due = true
	}
}

// denseSlots is the most slots one Plan tracks in arrays; a larger horizon
// times budget is tracked in a map, where few of them are ever taken.
const denseSlots = 1 << 20

// slotTaker returns a function that takes the first free slot at or after
// k, else the last free one before it, within [first, last].
func (b *buffers) slotTaker(first, last int64) func(k int64) (int64, bool) {
	n := last - first + 1
	if n <= 0 {
		return func(int64) (int64, bool) { return 0, false }
	}
	if n <= denseSlots {
		b.slots.reset(int32(n))
		return func(k int64) (int64, bool) {
			j := int32(min(max(k, first), last) - first)
			f := b.slots.findNext(j)
			if f == int32(n) {
				if f = b.slots.findPrev(j); f < 0 {
					return 0, false
				}
			}
			b.slots.take(f)
			return first + int64(f), true
		}
	}
	if b.used == nil {
		b.used = make(map[int64]struct{})
	}
	clear(b.used)
	return func(k int64) (int64, bool) {
		k = min(max(k, first), last)
		for j := k; j <= last; j++ {
			if _, taken := b.used[j]; !taken {
				b.used[j] = struct{}{}
				return j, true
			}
		}
		for j := k - 1; j >= first; j-- {
			if _, taken := b.used[j]; !taken {
				b.used[j] = struct{}{}
				return j, true
			}
		}
		return 0, false
	}
}

// slotSet is two union-find structures over a horizon's slots: the next
// free slot at or after j and the last free one at or before j, each found
// in near-constant time even when the budget is exhausted.
type slotSet struct {
	nxt []int32 // nxt[j]: a slot ≥ j that may be free; n means none
	prv []int32 // prv[j+1]: a slot+1 ≤ j+1 that may be free; 0 means none
}

func (s *slotSet) reset(n int32) {
	s.nxt = slices.Grow(s.nxt[:0], int(n)+1)[:n+1]
	s.prv = slices.Grow(s.prv[:0], int(n)+1)[:n+1]
	for i := range s.nxt {
		s.nxt[i] = int32(i)
		s.prv[i] = int32(i)
	}
}

func (s *slotSet) findNext(j int32) int32 {
	for s.nxt[j] != j {
		s.nxt[j] = s.nxt[s.nxt[j]]
		j = s.nxt[j]
	}
	return j
}

func (s *slotSet) findPrev(j int32) int32 {
	k := j + 1
	for s.prv[k] != k {
		s.prv[k] = s.prv[s.prv[k]]
		k = s.prv[k]
	}
	return k - 1
}

func (s *slotSet) take(j int32) {
	s.nxt[j] = j + 1
	s.prv[j+1] = j
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}

// want is the poll one Series would like, before the budget is applied.
func (p Planner) want(now time.Time, s *Series, rh *Rhythm, m *model, c float64, keep bool) want {
	if s.OwnerRequest {
		return want{at: now, reason: ReasonOwner}
	}
	if w, ok := p.listingWant(now, s, rh, m, c, keep); ok {
		if w.at.Before(now) {
			w.at = now
		}
		return w
	}
	last, polled := p.lastPoll(now, s)
	var base want
	switch {
	case !polled:
		base = want{at: now, reason: ReasonSafety}
		if rh.Kind == KindUnknown {
			base.reason = ReasonNoHistory
		}
	case rh.Kind == KindUnknown:
		base = want{at: last.Add(p.Interval), reason: ReasonNoHistory}
	default:
		next, inWindow := m.next(c)
		base = want{at: time.Unix(0, next).In(now.Location()), reason: ReasonSafety}
		if inWindow {
			base.reason = ReasonWindow
		}
	}
	if base.at.Before(now) {
		base.at = now
	}
	if s.Hint {
		at := last.Add(p.MinGap)
		if at.Before(now) {
			at = now
		}
		if !at.After(base.at) {
			return want{at: at, reason: ReasonHint}
		}
	}
	return base
}

// value ranks a wanted poll against the others of its horizon: the Readers
// holding the Series times the probability that a release is waiting.
func (p Planner) value(s *Series, rh *Rhythm, m *model, w want) float64 {
	readers := float64(max(s.Readers, 1))
	switch {
	case w.reason == ReasonOwner:
		return math.Inf(1)
	case w.reason == ReasonListing:
		// A release the listing showed is certain, and the Site has told
		// every Reader of it: it goes before any forecast.
		return readers * 1e3
	case w.reason == ReasonHint || s.LastPoll.IsZero() || w.reason == ReasonListed:
		return readers
	case rh.Kind == KindUnknown:
		// Without history, assume about two releases a week.
		return readers * -math.Expm1(-w.at.Sub(s.LastPoll).Hours()/84)
	}
	v := readers * -math.Expm1(-m.cumulative(w.at.UnixNano()))
	if !w.at.Before(s.LastPoll.Add(2 * p.MaxGap)) {
		// Its MaxGap safety poll, which the price budgets for every
		// Series, lost slot after slot: valued at its model's odds, a
		// dormant Series' poll lost every slot of a saturated Site and its
		// return went unseen for a week (generator seed 3 at 0.1). Starved
		// that long, it counts as a certain release.
		v = max(v, readers)
	}
	return v
}

// plausible reports whether r could have come from Estimate.
func (r *Rhythm) plausible() bool {
	if r == nil || !(r.OffRate >= 0 && r.OffRate < 1e3) || !(r.Burst >= 0 && r.Burst <= 1) {
		return false
	}
	// A renewal's gap is an irregular Series' and has a spread (rhythm.go).
	if r.Gap < 0 || r.GapSpread < 0 || r.Gap > 0 && (r.Kind != KindIrregular || r.GapSpread < time.Hour) {
		return false
	}
	switch r.Kind {
	case KindUnknown, KindDormant:
		return len(r.Slots) == 0
	case KindIrregular:
		// An irregular Series may have an hour of the day (rhythm.go).
		if len(r.Slots) == 0 {
			return r.Period == 0
		}
		if r.Period != day || len(r.Slots) != 1 {
			return false
		}
	case KindDaily, KindWeekly:
	default:
		return false
	}
	if r.Period != day && r.Period != week || len(r.Slots) == 0 || len(r.Slots) > maxSlots {
		return false
	}
	for _, s := range r.Slots {
		if s.Spread < minSpread || s.Spread > maxSpread || !(s.Hit > 0 && s.Hit <= 1) {
			return false
		}
	}
	return true
}

// lastPoll is the Series' last poll as the model uses it: one in the
// future (a clock step) counts as now, one older than two MaxGaps as two
// MaxGaps ago (the Series is overdue either way, and the model's span stays
// bounded); false when the Series was never polled.
func (p Planner) lastPoll(now time.Time, s *Series) (time.Time, bool) {
	switch {
	case s.LastPoll.IsZero():
		return now, false
	case s.LastPoll.After(now):
		return now, true
	case s.LastPoll.Before(now.Add(-2 * p.MaxGap)):
		return now.Add(-2 * p.MaxGap), true
	}
	return s.LastPoll, true
}

// term is a share of the Site's request rate at price c: clamp(a/c, lo,
// hi) * scale polls per hour.
type term struct{ a, lo, hi, scale float64 }

// appendTerms adds a Series' average request rate over its rhythm's
// period: the polls the off-schedule rate asks for, and each slot's window.
func appendTerms(terms []term, p Planner, s *Series, rh *Rhythm) []term {
	sw := readerWeight(s.Readers)
	terms = append(terms, term{a: sw * math.Sqrt(rh.OffRate), lo: 1 / p.MaxGap.Hours(), hi: 1 / p.MinGap.Hours(), scale: 1})
	return appendSlotTerms(terms, p, s, rh)
}

// appendSlotTerms adds the polls of each of the rhythm's slots' windows.
func appendSlotTerms(terms []term, p Planner, s *Series, rh *Rhythm) []term {
	sw := readerWeight(s.Readers)
	for _, sl := range rh.Slots {
		sigma := sl.Spread.Hours()
		// Polls per occurrence: the integral of sw*sqrt(h) over the window,
		// about half of it when the release comes, all of it when the
		// period is skipped.
		a := 2.24 * (1 - sl.Hit/2) * sw * math.Sqrt(sl.Hit*sigma)
		// A slot's window gets at least one poll; an irregular Series'
		// hour of the day is not an expected release, and owes its day's
		// window only its share of a poll: priced at one, a Site of many
		// such Series had a floor above its budget, a price no poll could
		// meet, and sat idle (bench scale, ADR 0034).
		lo := 1.0
		if rh.Kind == KindIrregular {
			lo = sl.Hit
		}
		terms = append(terms, term{a: a, lo: lo, hi: math.Max(1, window(sl.Spread).Hours()/p.MinGap.Hours()), scale: 1 / rh.Period.Hours()})
	}
	return terms
}

// price finds c, the constant of the square-root rule: a Series whose
// release hazard is h (per hour) and which w Readers hold is polled every
// c/(readerWeight(w)*sqrt(h)) hours. With readerWeight = sqrt(w) that
// spacing would minimise the Reader-weighted mean detection delay for a
// given number of polls; readerExponent leans it towards the median.
//
// c is chosen so that the Site's projected rate fills the target, and
// never below what polls a lone Reader's weekly Series once per Interval:
// a large budget is not spent for its own sake. In a Site's busiest hour
// (many windows at once) the windows want more than the budget, and what
// is dropped is the least valuable: rarely a window.
func (p Planner) price(fixed, target float64, terms []term) float64 {
	floor := p.Interval.Hours() * math.Sqrt(1.0/168)
	// In x = 1/c the projected rate is piecewise linear and increasing,
	// so Newton's method, kept inside a bracket, lands in a few passes.
	rate := func(x float64) (d, slope float64) {
		d = fixed
		for _, t := range terms {
			v := t.a * x
			switch {
			case v <= t.lo:
				v = t.lo
			case v >= t.hi:
				v = t.hi
			default:
				slope += t.a * t.scale
			}
			d += v * t.scale
		}
		return d, slope
	}
	xlo, xhi := 0.0, 1/floor
	if d, _ := rate(xhi); d <= target {
		return floor
	}
	sum := 0.0
	for _, t := range terms {
		sum += t.a * t.scale
	}
	x := xhi / 2
	if target > fixed && sum > 0 {
		x = min((target-fixed)/sum, xhi/2)
	}
	for range 60 {
		d, slope := rate(x)
		if math.Abs(d-target) <= 0.002*target {
			break
		}
		if d > target {
			xhi = x
		} else {
			xlo = x
		}
		next := (xlo + xhi) / 2
		if slope > 0 {
			if n := x + (target-d)/slope; n > xlo && n < xhi {
				next = n
			}
		}
		x = next
	}
	if x <= 0 {
		return floor * 1e6
	}
	return 1 / x
}

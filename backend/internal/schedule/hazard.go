package schedule

import (
	"math"
	"slices"
	"time"
)

// A slot's window opens 3 spreads plus earlyMargin before its centre and
// closes 3 spreads plus lateMargin after it. The early side is padded
// because opening late costs a whole window's latency while opening early
// costs a few polls; the late side because Sites publish late more often
// than early.
const (
	earlyMargin = 15 * time.Minute
	lateMargin  = 30 * time.Minute
	sigmas      = 3
)

func windowBefore(spread time.Duration) time.Duration { return sigmas*spread + earlyMargin }
func windowAfter(spread time.Duration) time.Duration  { return sigmas*spread + lateMargin }
func window(spread time.Duration) time.Duration {
	return windowBefore(spread) + windowAfter(spread)
}

// The model works in Unix nanoseconds and hours as float64: it runs for
// every Series on every Plan, and time.Time arithmetic dominated its cost.
const nsPerHour = float64(time.Hour)

// readerExponent weighs Readers a little more than the square-root rule
// (0.5), which minimises the Reader-weighted mean delay. The goal is the
// Reader-weighted median and p90 instead; a sweep of `lectern simulate`
// put 0.7 where both hold on every mix tried, 0.5 missing the median when
// half the Series are irregular and 0.8 the p90. See ADR 0013.
const readerExponent = 0.7

// readerWeight is how much a Series' Readers raise its poll rate.
func readerWeight(readers int) float64 {
	return math.Pow(float64(max(readers, 1)), readerExponent)
}

// occurrence is one expected release of a slot that has not been seen yet.
type occurrence struct {
	center, start, end int64
	sigma              float64 // nanoseconds
	// qn is the slot's hit rate conditioned on nothing having been seen by
	// the last poll: a release that is late becomes more likely by the
	// minute, until the window closes and the week counts as skipped.
	qn float64
}

// hazard is the occurrence's release rate per hour at t.
func (o *occurrence) hazard(t int64) float64 {
	z := float64(t-o.center) / o.sigma
	return o.qn * math.Exp(-z*z/2) / (o.sigma / nsPerHour * math.Sqrt2 * math.SqrtPi)
}

func (o *occurrence) cdf(t int64) float64 {
	return 0.5 * math.Erfc(-float64(t-o.center)/o.sigma/math.Sqrt2)
}

// model is one Series' release hazard (releases per hour) from its last
// poll on: the off-schedule rate, a burst after the last release, and the
// pending occurrences of its slots.
type model struct {
	// w is readerWeight of the Readers holding the Series: polls come at
	// w*sqrt(hazard)/c per hour.
	w        float64
	last     int64 // the last poll
	off      float64
	burst    float64
	burstEnd int64
	// burstFade is the last release's interval (After, Seen] in ns: a
	// second chapter up to BurstSpan after a release a slow poll found
	// may already have come with it, so the burst's rate fades over its
	// last burstFade (burstRate).
	burstFade int64
	occ       []occurrence
	minGap    int64
	stepCap   int64
	finish    int64
	// A renewal (Rhythm.Gap): the off-schedule rate is shaped by the time
	// since lastRel, the middle of the last release's interval.
	gapMu, gapSigma float64 // nanoseconds; zero: no renewal
	lastRel         int64
}

// candidate is an expected release considered by build.
type candidate struct {
	center int64
	slot   int
}

// build sets m up for Series s last polled at l. Its occurrences are
// appended to *occ, and m.occ is their stretch of it.
func (m *model) build(p Planner, s *Series, l int64, rh *Rhythm, slip float64, scratch *[]candidate, occ *[]occurrence) {
	*m = model{w: readerWeight(s.Readers), last: l, off: rh.OffRate, minGap: int64(p.MinGap), stepCap: int64(5 * time.Minute), finish: l + int64(p.MaxGap)}
	var lastSeen, lastAfter int64 = math.MinInt64, math.MinInt64
	if n := len(s.Releases); n > 0 && !s.Releases[n-1].Seen.Before(unixEpoch) {
		lastSeen = s.Releases[n-1].Seen.UnixNano()
		if a := s.Releases[n-1].After; !a.IsZero() && !a.Before(unixEpoch) {
			lastAfter = a.UnixNano()
		}
	}
	if mu, sigma, lastRel, ok := renewalOf(s, rh); ok && lastSeen != math.MinInt64 {
		m.gapMu, m.gapSigma, m.lastRel = mu, sigma, lastRel
		m.stepCap = max(m.stepCap, int64(rh.GapSpread/8))
	}
	if lastSeen != math.MinInt64 && lastSeen+int64(BurstSpan) > l {
		m.burst = rh.Burst / BurstSpan.Hours()
		m.burstEnd = lastSeen + int64(BurstSpan)
		if lastAfter != math.MinInt64 && lastAfter < lastSeen {
			m.burstFade = lastSeen - lastAfter
		}
	}
	if len(rh.Slots) == 0 || rh.Period <= 0 {
		return
	}
	// Every occurrence whose window could touch [l, l+MaxGap], plus one
	// period before, so each has a predecessor to compare with.
	cands := (*scratch)[:0]
	period := int64(rh.Period)
	lo := l - period - int64(2*maxSpread+lateMargin)
	hi := m.finish + int64(2*maxSpread+earlyMargin)
	ref := refMonday.UnixNano()
	for i, sl := range rh.Slots {
		base := ref + int64(sl.Offset)
		c := base + floorDiv(lo-base, period)*period
		for ; c < hi; c += period {
			if c >= lo {
				cands = append(cands, candidate{center: c, slot: i})
			}
		}
	}
	if len(rh.Slots) > 1 {
		slices.SortFunc(cands, func(a, b candidate) int { return compareInt64(a.center, b.center) })
	}
	*scratch = cands
	from := len(*occ)
	for j := 1; j < len(cands); j++ {
		cd := cands[j]
		sl := rh.Slots[cd.slot]
		start, end := cd.center-int64(windowBefore(sl.Spread)), cd.center+int64(windowAfter(sl.Spread))
		if end <= l || start >= m.finish {
			continue
		}
		// Seen since the window opened, or since halfway from the previous
		// expected release (an early chapter): this occurrence is done.
		mid := cands[j-1].center + (cd.center-cands[j-1].center)/2
		if lastSeen >= min(start, mid) {
			continue
		}
		o := occurrence{center: cd.center, start: start, end: end, sigma: float64(sl.Spread)}
		q := sl.Hit
		if l > start {
			q = q / (1 - q*o.cdf(l))
		}
		o.qn = q
		*occ = append(*occ, o)
		m.stepCap = min(m.stepCap, int64(sl.Spread/4))
	}
	// A weekly window that closed by the last poll with nothing seen since
	// it opened: the chapter may come a day late (slip.go).
	for j := 0; slip > 0 && rh.Period == week && j < len(cands); j++ {
		cd := cands[j]
		sl := rh.Slots[cd.slot]
		start, end := cd.center-int64(windowBefore(sl.Spread)), cd.center+int64(windowAfter(sl.Spread))
		lateEnd := end + int64(day)
		if end > l || lateEnd <= l || lastSeen >= start {
			continue
		}
		o := occurrence{center: cd.center + int64(day), start: start + int64(day), end: lateEnd, sigma: float64(sl.Spread)}
		q := min(slipMax, slip/(1-min(sl.Hit, 0.99)))
		if l > o.start {
			q = q / (1 - q*o.cdf(l))
		}
		o.qn = q
		*occ = append(*occ, o)
		m.stepCap = min(m.stepCap, int64(sl.Spread/4))
	}
	m.occ = (*occ)[from:len(*occ):len(*occ)]
}

var unixEpoch = time.Unix(0, 0)

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// hazard at t: the total, and the part that expected releases (open
// windows) contribute. A possible second chapter after a release is
// counted with the off-schedule rate: it is not an expected release.
func (m *model) hazard(t int64) (total, windowed float64) {
	for i := range m.occ {
		o := &m.occ[i]
		if t >= o.start && t < o.end {
			windowed += o.hazard(t)
		}
	}
	total = m.off*m.shape(t) + windowed
	if t < m.burstEnd {
		total += m.burstRate(t)
	}
	return total, windowed
}

// The renewal shape is kept within [renewalLo, renewalHi] times the
// off-schedule rate: a little before the gap is due the Series is still
// checked (mass releases, a changed pace), and a long-overdue one is not
// polled without end.
const (
	renewalLo   = 0.15
	renewalHi   = 6
	renewalOver = 3 // spreads past the gap
	// renewalPriceHi caps the shape a renewal is priced at (planner.go).
	renewalPriceHi = 1.5
)

// renewalOf is the renewal a Series' model shapes its off-schedule rate
// with: the gap's mean and spread and the last release (ns); false when
// its rhythm has none.
func renewalOf(s *Series, rh *Rhythm) (mu, sigma float64, lastRel int64, ok bool) {
	n := len(s.Releases)
	if rh.Gap <= 0 || rh.GapSpread <= 0 || len(rh.Slots) > 0 || n == 0 || s.Releases[n-1].Seen.Before(unixEpoch) {
		return 0, 0, 0, false
	}
	mid, half := s.Releases[n-1].estimate()
	// The gap runs from the last release's middle, which is known only
	// within its interval: a release a safety poll found hours late
	// widens the next one's spread (uniform: half²/3).
	sp, h := float64(rh.GapSpread), float64(half)
	return float64(rh.Gap), math.Sqrt(sp*sp + h*h/3), mid.UnixNano(), true
}

// shape is the renewal's hazard at t relative to the mean rate: the
// hazard of a Gaussian gap, f/S, times the mean gap; 1 without a renewal.
func (m *model) shape(t int64) float64 {
	if m.gapSigma == 0 {
		return 1
	}
	return renewalShape(m.gapMu, m.gapSigma, t-m.lastRel)
}

func renewalShape(mu, sigma float64, since int64) float64 {
	z := (float64(since) - mu) / sigma
	if z > renewalOver {
		// Far past due: the pace is broken (a hiatus), back to the rate.
		return 1
	}
	f := math.Exp(-z*z/2) / (math.Sqrt2 * math.SqrtPi)
	surv := 0.5 * math.Erfc(z/math.Sqrt2)
	r := float64(renewalHi)
	if surv > 1e-9 {
		r = min(renewalHi, f/surv*mu/sigma)
	}
	return max(renewalLo, r)
}

// burstRate is the burst's rate at t, before burstEnd. A second chapter
// comes up to BurstSpan after its release, which a poll found at Seen and
// which happened uniformly in (After, Seen] (width f): at Seen+x, the
// share of the releases that can still be followed is min(f, BurstSpan-x)/f.
// A release seen within minutes keeps the full rate for BurstSpan; one a
// 4-hour safety poll found expects its second chapter mostly already seen
// with it, and its rate fades from 3/4 to zero (a fixed rate from Seen
// spent a slow Site's polls on seconds chapters long seen: novels at 0.1).
func (m *model) burstRate(t int64) float64 {
	left := m.burstEnd - t
	if m.burstFade <= left {
		return m.burst
	}
	return m.burst * float64(left) / float64(m.burstFade)
}

// burstBefore is the burst's expected releases from its start to t, within
// its span.
func (m *model) burstBefore(t int64) float64 {
	start, fade := m.burstEnd-int64(BurstSpan), m.burstEnd-m.burstFade
	flat := float64(min(t, max(fade, start))-start) / nsPerHour
	h := m.burst * flat
	if a := max(fade, start); t > a {
		// The rate falls linearly to zero at burstEnd.
		la, lt := float64(m.burstEnd-a), float64(m.burstEnd-t)
		h += m.burst / float64(m.burstFade) * (la*la - lt*lt) / 2 / nsPerHour
	}
	return h
}

// boundary is the next instant after t at which the hazard's shape changes
// (a window opens or closes, the burst ends), or finish; inWindow says
// whether a window is open at t (else the hazard is constant until next).
func (m *model) boundary(t int64) (next int64, inWindow bool) {
	next = m.finish
	if t < m.burstEnd {
		if fade := m.burstEnd - m.burstFade; t < fade {
			next = min(next, fade)
		} else {
			inWindow = true // the fading rate is stepped through
			next = min(next, m.burstEnd)
		}
	}
	if m.gapSigma != 0 {
		inWindow = true // the shaped rate is stepped through, as a window
	}
	for i := range m.occ {
		o := &m.occ[i]
		switch {
		case t < o.start:
			next = min(next, o.start)
		case t < o.end:
			inWindow = true
			next = min(next, o.end)
		}
	}
	return next, inWindow
}

// next is the poll after the last one, l: the time at which the integral
// of w*sqrt(h)/c from l reaches one poll, kept within [l+MinGap,
// l+MaxGap]. inWindow says whether an expected release (not the
// off-schedule rate) is what brings the poll there.
func (m *model) next(c float64) (int64, bool) {
	l := m.last
	acc := 0.0
	t := l
	for t < m.finish {
		nb, open := m.boundary(t)
		if !open {
			h, _ := m.hazard(t)
			rate := m.w * math.Sqrt(h) / c
			span := float64(nb-t) / nsPerHour
			if rate > 0 && acc+rate*span >= 1 {
				return m.clamp(l, t+int64((1-acc)/rate*nsPerHour))
			}
			acc += rate * span
			t = nb
			continue
		}
		step := min(m.stepCap, nb-t)
		h, _ := m.hazard(t + step/2)
		rate := m.w * math.Sqrt(h) / c
		if d := rate * float64(step) / nsPerHour; acc+d >= 1 {
			return m.clamp(l, t+int64((1-acc)/rate*nsPerHour))
		} else {
			acc += d
		}
		t += step
	}
	return m.finish, false
}

func (m *model) clamp(l, t int64) (int64, bool) {
	t = max(t, l+m.minGap)
	if t >= m.finish {
		return m.finish, false
	}
	total, windowed := m.hazard(t)
	return t, windowed > total-windowed
}

// cumulative is the expected number of releases in (l, t], l the last
// poll: the value of a poll at t is the chance that one is waiting.
func (m *model) cumulative(t int64) float64 {
	l := m.last
	if t <= l {
		return 0
	}
	var h float64
	if m.gapSigma == 0 {
		h = m.off * float64(t-l) / nsPerHour
	} else {
		// Midpoint steps of the shaped rate.
		step := max(int64(m.gapSigma/8), int64(5*time.Minute))
		for a := l; a < t; a += step {
			b := min(a+step, t)
			h += m.off * m.shape(a+(b-a)/2) * float64(b-a) / nsPerHour
		}
	}
	if m.burst > 0 {
		if a, b := max(l, m.burstEnd-int64(BurstSpan)), min(t, m.burstEnd); b > a {
			h += m.burstBefore(b) - m.burstBefore(a)
		}
	}
	for i := range m.occ {
		o := &m.occ[i]
		if a, b := max(l, o.start), min(t, o.end); b > a {
			h += o.qn * (o.cdf(b) - o.cdf(a))
		}
	}
	return h
}

func hours(h float64) time.Duration { return time.Duration(h * float64(time.Hour)) }

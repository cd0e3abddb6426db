package schedule

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// The simulator's adaptive policy over one or more Sites, with or without
// listings: each Site is planned by the production planner (Planner.plan)
// every Horizon within its own budget; with listings, each Site's listing
// is read every PlanListing period out of that budget and shows the Site's last
// cfg.Listing updates, held Series or not.

// newRecordedTrace is the trace of cfg.Trace: its span runs from the day of
// its first release to the day after its last; the first cfg.History (half
// when zero) is history.
func newRecordedTrace(cfg SimConfig) *trace {
	rec := cfg.Trace
	start := rec.First.Truncate(day)
	end := rec.Last.Truncate(day).Add(day)
	history := cfg.History
	if history == 0 {
		history = end.Sub(start) / 2
	}
	t := &trace{
		cfg:       cfg,
		start:     start,
		half:      start.Add(history),
		end:       end,
		rrSpacing: time.Duration(float64(time.Hour) / cfg.Budget),
	}
	siteIndex := map[string]int{}
	t.series = make([]simSeries, len(rec.Series))
	for i, rs := range rec.Series {
		k, ok := siteIndex[rs.Site]
		if !ok {
			k = len(t.sites)
			siteIndex[rs.Site] = k
			t.sites = append(t.sites, simSite{name: rs.Site})
		}
		s := &t.series[i]
		s.site, s.readers, s.held = k, rs.Readers, rs.Readers > 0
		s.pattern = Irregular
		if len(rs.Releases) == 0 {
			s.pattern = Dormant
		}
		s.releases = make([]simRelease, len(rs.Releases))
		for j, at := range rs.Releases {
			s.releases[j] = simRelease{at: at, tag: random}
		}
		s.measuredFrom, _ = slices.BinarySearchFunc(s.releases, t.half, func(a simRelease, b time.Time) int { return a.at.Compare(b) })
	}
	t.index()
	return t
}

// simListing is one Site's listing as the simulated Poll knows it.
type simListing struct {
	plan     ListingBudget
	confirms []time.Time // confirming polls made at once, the last hour's
	reserves []reserveAt
	next     time.Time // the next read
	lastRead time.Time
	good     int         // reads in a row without overflow
	fallback time.Time   // per-Series planning until then (an overflow)
	reads    []time.Time // reads of the last day, and what each showed new (of held Series)
	fresh    []int
	freshH   []int
}

// listingFallback is how long a Site whose listing overflowed (its reach
// fell short of the time since the last read) is planned Series by Series:
// the releases that scrolled past are found by their Series' own windows.
const listingFallback = time.Hour

// rates are the releases per hour the listing's reads of the last day
// showed, of every Series and of held ones.
func (l *simListing) rates(now time.Time) (all, held float64) {
	cut := 0
	for cut < len(l.reads) && now.Sub(l.reads[cut]) > day {
		cut++
	}
	l.reads, l.fresh, l.freshH = l.reads[cut:], l.fresh[cut:], l.freshH[cut:]
	if len(l.reads) < 2 || now.Sub(l.reads[0]) < time.Hour {
		return 0, 0
	}
	n, h := 0, 0
	for j := 1; j < len(l.reads); j++ {
		n += l.fresh[j]
		h += l.freshH[j]
	}
	hours := now.Sub(l.reads[0]).Hours()
	return float64(n) / hours, float64(h) / hours
}

// reserve is the most the listing's plans of the last hour reserved: an
// hour may still hold the reads and confirms of a larger plan, so the
// Series' polls get only what no plan of the hour took.
func (l *simListing) reserve(now time.Time) int {
	l.reserves = append(l.reserves, reserveAt{now, l.plan.Reserve})
	cut := 0
	for cut < len(l.reserves) && now.Sub(l.reserves[cut].at) > time.Hour {
		cut++
	}
	l.reserves = l.reserves[cut:]
	most := 0
	for _, r := range l.reserves {
		most = max(most, r.n)
	}
	return most
}

type reserveAt struct {
	at time.Time
	n  int
}

// mayConfirm reports whether a confirming poll at t fits the hour's
// confirms, and counts it.
func (l *simListing) mayConfirm(t time.Time) bool {
	cut := 0
	for cut < len(l.confirms) && t.Sub(l.confirms[cut]) >= time.Hour {
		cut++
	}
	l.confirms = l.confirms[cut:]
	if len(l.confirms) >= l.plan.Confirms {
		return false
	}
	l.confirms = append(l.confirms, t)
	return true
}

type simPoll struct {
	at     time.Time
	i      int // Series index; -1: the listing
	reason string
}

func (t *trace) adaptive(ctx context.Context) (PolicyResult, error) {
	p, err := t.cfg.Planner.withDefaults()
	if err != nil {
		return PolicyResult{}, err
	}
	n := len(t.series)
	series := make([]Series, n)
	rhythms := make([]Rhythm, n)
	estimated := make([]time.Time, n)
	dirty := make([]bool, n)
	next := make([]int, n) // first release not yet seen
	for i := range series {
		if !t.series[i].held {
			continue
		}
		series[i] = t.history(i)
		series[i].Rhythm = &rhythms[i]
		dirty[i] = true
		s := &t.series[i]
		for next[i] < len(s.releases) && !t.rrSeen(i, s.releases[next[i]].at).After(series[i].LastPoll) {
			next[i]++
		}
	}
	K := t.cfg.Listing
	type siteRun struct {
		held    []int // held members
		in      []Series
		buf     buffers
		dec     []Decision
		listing simListing
		times   []int64
	}
	runs := make([]siteRun, len(t.sites))
	for k := range t.sites {
		for _, i := range t.sites[k].members {
			if t.series[i].held {
				runs[k].held = append(runs[k].held, i)
			}
		}
		if K > 0 {
			runs[k].listing.plan = p.PlanListing(t.sites[k].perHour, t.sites[k].held, 0, K)
			runs[k].listing.next = t.half
		}
	}
	var (
		samples      []sample
		polls        [numPatterns]int
		listingPolls int
		unseen       = 0
		reasons      = map[string]int{}
		due          []simPoll
	)
	for i := range t.series {
		if t.series[i].held {
			unseen += len(t.series[i].releases) - t.series[i].measuredFrom
		}
	}
	pollSeries := func(run *siteRun, pl simPoll) {
		s, sr := &t.series[pl.i], &series[pl.i]
		if pl.at.Before(t.end) {
			polls[s.pattern]++
			run.times = append(run.times, pl.at.UnixNano())
			reasons[pl.reason]++
		}
		found := false
		for next[pl.i] < len(s.releases) && !s.releases[next[pl.i]].at.After(pl.at) {
			if rel := s.releases[next[pl.i]]; next[pl.i] >= s.measuredFrom {
				samples = append(samples, sample{latency: pl.at.Sub(rel.at), weight: float64(s.readers), pattern: s.pattern, tag: rel.tag, reason: pl.reason})
				unseen--
			}
			next[pl.i]++
			found = true
		}
		if found {
			sr.Releases = append(sr.Releases, Release{Seen: pl.at, After: sr.LastPoll})
			dirty[pl.i] = true
		}
		sr.LastPoll = pl.at
		sr.ListingNewer = false
	}
	// readListing is a read of site k's listing at tr: it flags the held
	// Series it shows with an unseen release and returns the ones to
	// confirm at once.
	readListing := func(k int, tr time.Time) []int {
		st, run := &t.sites[k], &runs[k]
		l := &run.listing
		if tr.Before(t.end) {
			listingPolls++
			run.times = append(run.times, tr.UnixNano())
			reasons["listing read"]++
		}
		j, _ := slices.BinarySearchFunc(st.releases, tr, func(a siteRelease, b time.Time) int {
			if !a.at.After(b) {
				return -1
			}
			return 1
		})
		window := st.releases[max(0, j-K):j]
		fresh, freshH := 0, 0
		for _, r := range window {
			if r.at.After(l.lastRead) {
				fresh++
				if t.series[r.i].held {
					freshH++
				}
			}
		}
		overflow := !l.lastRead.IsZero() && j > K && window[0].at.After(l.lastRead)
		if overflow {
			l.good = 0
			l.fallback = tr.Add(listingFallback)
		} else {
			l.good++
		}
		l.reads = append(l.reads, tr)
		l.fresh = append(l.fresh, fresh)
		l.freshH = append(l.freshH, freshH)
		l.lastRead = tr
		var newer []int
		for _, r := range window {
			i := r.i
			s := &t.series[i]
			if !s.held || series[i].ListingNewer || next[i] >= len(s.releases) || s.releases[next[i]].at.After(tr) || series[i].LastPoll.IsZero() {
				continue
			}
			series[i].ListingNewer = true
			newer = append(newer, i)
		}
		slices.SortStableFunc(newer, func(a, b int) int { return cmp.Compare(t.series[b].readers, t.series[a].readers) })
		return newer
	}

	for now := t.half; ; now = now.Add(p.Horizon) {
		if !now.Before(t.end) && (unseen == 0 || !now.Before(t.end.Add(drain))) {
			break
		}
		if err := ctx.Err(); err != nil {
			return PolicyResult{}, fmt.Errorf("simulate at %s: %w", now.Format(time.RFC3339), err)
		}
		end := now.Add(p.Horizon)
		for k := range t.sites {
			run := &runs[k]
			if len(run.held) == 0 {
				continue
			}
			l := &run.listing
			perHour := t.sites[k].perHour
			healthy := false
			var period time.Duration
			if K > 0 {
				all, _ := l.rates(now)
				l.plan = p.PlanListing(perHour, t.sites[k].held, all, K)
				perHour = max(1, perHour-l.reserve(now))
				healthy = l.good >= ListingTrustReads && !now.Before(l.fallback)
				if healthy {
					period = l.plan.Period
				}
			}
			run.in = run.in[:0]
			for _, i := range run.held {
				if dirty[i] || now.Sub(estimated[i]) >= day {
					rhythms[i] = Estimate(series[i].Since, now, series[i].Releases)
					estimated[i], dirty[i] = now, false
				}
				series[i].Listed = healthy
				run.in = append(run.in, series[i])
			}
			run.dec, err = p.plan(now, Site{Name: t.sites[k].name, PerHour: perHour, ListingPeriod: period}, run.in, &run.buf, run.dec)
			if err != nil {
				return PolicyResult{}, fmt.Errorf("simulate %s at %s: %w", t.sites[k].name, now.Format(time.RFC3339), err)
			}
			due = due[:0]
			for j, d := range run.dec {
				if d.Due {
					due = append(due, simPoll{at: d.At, i: run.held[j], reason: d.Reason})
				}
			}
			if K > 0 {
				for ; l.next.Before(end); l.next = l.next.Add(l.plan.Period) {
					due = append(due, simPoll{at: l.next, i: -1})
				}
			}
			slices.SortFunc(due, func(a, b simPoll) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.i, b.i)) })
			for _, pl := range due {
				if pl.i >= 0 {
					pollSeries(run, pl)
					continue
				}
				for c, i := range readListing(k, pl.at) {
					at := pl.at.Add(time.Duration(c+1) * time.Second)
					if !run.listing.mayConfirm(at) {
						break // the rest go first at the next plan
					}
					pollSeries(run, simPoll{at: at, i: i, reason: ReasonListing})
				}
			}
		}
	}
	// What is never seen counts as seen at the end of the drain.
	for i := range t.series {
		s := &t.series[i]
		if !s.held {
			continue
		}
		for j := max(next[i], s.measuredFrom); j < len(s.releases); j++ {
			samples = append(samples, sample{latency: t.end.Add(drain).Sub(s.releases[j].at), weight: float64(s.readers), pattern: s.pattern, tag: s.releases[j].tag})
		}
	}
	res := t.summarize(samples, polls, reasons)
	res.Undetected = unseen
	res.ListingPolls = listingPolls
	res.Polls += listingPolls
	held := 0
	for k := range t.sites {
		held += t.sites[k].held
		run := &runs[k]
		// Only the measured half counts, as for the polls.
		times := run.times[:0]
		for _, x := range run.times {
			if x >= t.half.UnixNano() {
				times = append(times, x)
			}
		}
		slices.Sort(times)
		mh := maxPerHourWindow(times)
		res.MaxHour = max(res.MaxHour, mh)
		if mh > t.sites[k].perHour {
			res.OverBudget++
		}
	}
	res.PerSeriesHour = float64(res.Polls) / float64(max(held, 1)) / t.end.Sub(t.half).Hours()
	return res, nil
}

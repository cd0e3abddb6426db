package schedule

import (
	"math"
	"time"
)

// Listings (docs/adr/0028-site-listings.md). A Site's listing is one request
// that shows the newest chapter of every Series it updated lately. While a
// listing is healthy its Site is planned around it: the listing is polled
// every ListingPeriod out of the Site's budget, a held Series it shows with a
// newer chapter is polled at once (ReasonListing), and the Series it covers
// drop to a sparse safety poll (ReasonListed), but for the windows of their
// slots while the listing is read rarely (keepsWindows). A listing that
// fails, changes shape or overflows hands the Site back to per-Series
// planning: the caller stops setting Listed, and the plan is the one without
// listings.

// The reasons of a plan that uses a listing.
const (
	// ReasonListing: the Site's listing shows a chapter newer than the stored
	// Latest Chapter; the series poll confirms it and writes the facts.
	ReasonListing = "listing"
	// ReasonListed: the Series' Site has a healthy listing, which shows its
	// releases; the Series itself is polled only this rarely.
	ReasonListed = "safety check (listing covers it)"
)

// Listing settings. The listing is read as often as the Site's budget
// allows once the Series it covers have their safety polls and the releases
// it shows their confirming polls, never more often than ListingFloor (it is
// a page like any other, and the pacing gate spaces it), and often enough
// that entries cannot scroll out of its reach between two reads at
// listingScrollSafe times the release rate its reads measured (up to
// listingMostShare of the budget).
const (
	ListingFloor      = 2 * time.Minute
	listingMostShare  = 0.6
	listingScrollSafe = 4.0
	// listingUse is the share of the budget a listing plan spends; the rest
	// absorbs hints, Owner requests and releases that cluster.
	listingUse = 0.95
	// ListedGap is how often a Series covered by a healthy listing is still
	// polled: the listing could miss a Series (a slipped entry, a Site that
	// lists it under another key), and two days bound how long that lasts.
	ListedGap = 48 * time.Hour
	// ListingTrustReads is how many good reads in a row make a listing
	// healthy: two, so its release rate has been measured once.
	ListingTrustReads = 2
)

// ListingBudget is how a Site's budget is split while its listing is used.
type ListingBudget struct {
	// Period is how often the listing is read.
	Period time.Duration
	// Confirms are the series polls per hour a listing read may make at
	// once for the held Series it shows newer; more wait for the next plan,
	// where they go first.
	Confirms int
	// Reserve is what the listing takes of the budget per hour: its reads
	// in any hour (one more for an hour that catches one at each end) and
	// the confirms. The Series' own polls get the rest (SeriesBudget).
	Reserve int
}

// SeriesBudget is what a Site's Series' own polls get beside the listing:
// at least one per hour.
func (b ListingBudget) SeriesBudget(perHour int) int { return max(1, perHour-b.Reserve) }

// PlanListing (docs/adr/0029-listing-budget.md) splits budget perHour of a Site with held Series between its
// listing and its Series. rate is the releases per hour its reads showed
// (every Series; 0: not measured yet), entries how many entries one read
// shows (0: unknown).
//
// The Series' own polls keep what the covered Series' safety polls need
// and one more (a tenth of the budget at least, for hints and the Owner):
// whatever they keep beyond that goes unspent, since a covered Series asks
// for nothing but its safety poll (ADR 0029, third amendment); the
// listing's reads take half of the rest, at most one per
// ListingFloor and at most what polling every held Series once per
// Interval would cost, more when its reach asks for it; the confirming
// polls get what remains. Confirms are a cap, not a spend: in a quiet hour
// they are not made, and in a Site-wide drop they let the releases the
// listing shows be polled at once rather than at the next plan.
func (p Planner) PlanListing(perHour, held int, rate float64, entries int) ListingBudget {
	if perHour < 1 {
		return ListingBudget{Period: ListingFloor}
	}
	cover := float64(held) / ListedGap.Hours()
	series := max(math.Ceil(cover)+1, math.Ceil(0.1*float64(perHour)))
	rest := math.Floor(listingUse*float64(perHour)) - series
	reads := min(float64(time.Hour/ListingFloor), rest/2, p.perSeriesReads(held))
	if rate > 0 && entries > 0 {
		// The listing reaches entries/rate hours back; reading it
		// listingScrollSafe times within that leaves room for a burst.
		need := listingScrollSafe * rate / float64(entries)
		reads = max(reads, min(need, listingMostShare*float64(perHour)))
	}
	reads = max(reads, 1)
	b := ListingBudget{Period: max(ListingFloor, time.Duration(float64(time.Hour)/reads)).Round(time.Second)}
	n := int(math.Ceil(float64(time.Hour)/float64(b.Period))) + 1
	b.Confirms = max(0, int(rest)-n)
	b.Reserve = n + b.Confirms
	return b
}

// perSeriesReads is the most listing reads per hour worth making for held
// Series: what polling each of them once per Interval costs, the rate the
// price's floor gives a lone Reader's weekly Series. A listing is a way to
// ask less of a Site; at its floor (30 reads an hour) it asked a Site
// where the Reader holds one Series thirty times what that Series' own
// polls did (the demo, ADR 0029).
func (p Planner) perSeriesReads(held int) float64 {
	// Plan refuses invalid settings; here their defaults are enough.
	p, _ = p.withDefaults()
	return max(1, float64(held)*float64(time.Hour)/float64(p.Interval))
}

// listingWant is the poll a Series would like under its Site's listing; ok is
// false when the listing says nothing of it (the plan without listings
// decides). keep: the listing is read so rarely that a Series it covers
// keeps its windows (keepsWindows); m is then its windows alone.
func (p Planner) listingWant(now time.Time, s *Series, rh *Rhythm, m *model, c float64, keep bool) (want, bool) {
	switch {
	case s.ListingNewer:
		return want{at: now, reason: ReasonListing}, true
	case s.Listed && !s.LastPoll.IsZero():
		w := want{at: s.LastPoll.Add(ListedGap), reason: ReasonListed}
		if keepsWindows(keep, s, rh) {
			if next, in := m.next(c); in && next < w.at.UnixNano() {
				w = want{at: time.Unix(0, next).In(now.Location()), reason: ReasonWindow}
			}
		}
		return w, true
	}
	return want{}, false
}

// listedWindowsAbove: a listing read less often than this leaves the
// Series it covers the windows of their slots (keepsWindows). Read at its floor, a
// listing shows a release within minutes, as a window does, for one
// request for the whole Site; a small Site's listing is read as rarely as
// its Series' own polls would come (perSeriesReads, hourly for one Series)
// and a weekly Series found in its window within a minute or two waited
// for the next read (docs/adr/0029's second amendment).
const listedWindowsAbove = 10 * time.Minute

// keepsWindows reports whether a Series the listing covers keeps the
// windows of its slots: keep says the Site's listing is read less often
// than listedWindowsAbove, and the slots must be expected releases (a
// weekly or daily rhythm's, not an irregular Series' hour of the day).
// Such a Series is priced and polled by its windows alone, up to its
// ListedGap safety poll: the listing shows what comes off them.
func keepsWindows(keep bool, s *Series, rh *Rhythm) bool {
	return keep && s.Listed && !s.LastPoll.IsZero() &&
		(rh.Kind == KindWeekly || rh.Kind == KindDaily) && len(rh.Slots) > 0
}

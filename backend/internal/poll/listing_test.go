package poll

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/latest/latesttest"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The planner with a listing, on a real Postgres and River with a fake
// clock: the listing reads are poll_listing jobs the plan queues in the
// Site's budget; the test works them at their time with what the Site's
// listing would show then (its last listingK releases, a Series no Reader
// holds among them) and the polls as adaptiveSim does.

const listingK = 10

// listingSite is a fake Site whose listing body is lines "key|label",
// newest first; a challenge page is no listing.
func listingSite(t *testing.T, e *pollEnv) *latest.Site {
	t.Helper()
	name := "list"
	for n := siteSeq.Add(1); n > 0; n /= 26 {
		name += string(rune('a' + n%26))
	}
	s := latesttest.Site(name)
	s.Listing = &latest.Listing{Path: "/latest", Read: func(body []byte, _ *url.URL, _ time.Time) (latest.ListingPage, error) {
		if !strings.HasPrefix(string(body), "LISTING\n") {
			return latest.ListingPage{}, latest.Diagnose(body, latest.ProblemNotListingPage, "no LISTING header")
		}
		var lp latest.ListingPage
		for line := range strings.SplitSeq(strings.TrimPrefix(string(body), "LISTING\n"), "\n") {
			key, label, ok := strings.Cut(line, "|")
			if ok {
				lp.Updates = append(lp.Updates, latest.Update{Key: key, SeriesURL: "https://" + s.Hosts[0] + "/s/" + strings.TrimPrefix(key, s.Name+":"), Chapter: latest.Chapter{Label: label}})
			}
		}
		return lp, nil
	}}
	require.NoError(t, e.reg.SetAdded(append(e.reg.Added(), s)...))
	return s
}

type listingSim struct {
	*adaptiveSim
	l     *Listings
	reads []time.Time
	// unheld are releases of a Series no Reader holds, crowding the listing.
	unheld []time.Time
}

// pastWeeks is a weekly Series' history: seen at (from monday) in each of
// the seven weeks before.
func pastWeeks(monday time.Time, at time.Duration) []time.Time {
	var seen []time.Time
	for w := 7; w >= 1; w-- {
		seen = append(seen, monday.Add(at-time.Duration(w)*7*24*time.Hour))
	}
	return seen
}

func newListingSim(t *testing.T, start time.Time, budget int) *listingSim {
	t.Helper()
	s := newAdaptiveSim(t, start, 1) // its own Site is not used
	s.site = listingSite(t, s.e)
	budgets, err := NewBudgets(s.e.reg, map[string]int{s.site.Name: budget}, fetch.Paces{})
	require.NoError(t, err)
	s.a.Budgets, s.a.Listings = budgets, true
	ls := &listingSim{adaptiveSim: s}
	ls.l = &Listings{Store: s.e.st, Registry: s.e.reg, Policy: &fetch.Policy{Registry: s.e.reg, States: s.e.st}, Fetch: s.e.fetch,
		Now: func() time.Time { return s.now }, Logger: quietLogger()}
	return ls
}

// page is the Site's listing at: its last listingK releases, newest first,
// one entry per Series.
func (s *listingSim) page(at time.Time) latest.ListingPage {
	type entry struct {
		key, label string
		at         time.Time
	}
	var all []entry
	for key, rel := range s.releases {
		for i, r := range rel {
			if !r.After(at) {
				all = append(all, entry{key, fmt.Sprintf("Release %d", i+1), r})
			}
		}
	}
	for i, r := range s.unheld {
		if !r.After(at) {
			all = append(all, entry{s.site.Name + ":unheld", fmt.Sprintf("Chapter %d", i+1), r})
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return b.at.Compare(a.at) })
	var lp latest.ListingPage
	shown := map[string]bool{}
	for _, e := range all[:min(len(all), listingK)] {
		if !shown[e.key] {
			shown[e.key] = true
			lp.Updates = append(lp.Updates, latest.Update{Key: e.key, Chapter: latest.Chapter{Label: e.label}, At: e.at})
		}
		lp.Reach = e.at
	}
	return lp
}

// readsDue works the poll_listing jobs due by now at their time.
func (s *listingSim) readsDue() {
	s.t.Helper()
	ctx := context.Background()
	rows, err := s.e.st.Pool.Query(ctx, `
		SELECT id, scheduled_at, coalesce((args->>'confirms')::int, 0) FROM river_job
		WHERE kind = 'poll_listing' AND state IN ('scheduled', 'available') AND scheduled_at <= $1 ORDER BY scheduled_at, id`, s.now)
	require.NoError(s.t, err)
	type job struct {
		id       int64
		at       time.Time
		confirms int
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		return j, r.Scan(&j.id, &j.at, &j.confirms)
	})
	require.NoError(s.t, err)
	for _, j := range jobs {
		s.e.exec(`UPDATE river_job SET state = 'completed', attempt = 1, attempted_at = $2, finalized_at = $2 WHERE id = $1`, j.id, j.at)
		_, err := s.l.Record(ctx, s.e.client, s.site, s.page(j.at), j.confirms, j.at)
		require.NoError(s.t, err)
		s.reads = append(s.reads, j.at)
	}
}

func (s *listingSim) run(until time.Time) {
	s.t.Helper()
	for ; !s.now.After(until); s.now = s.now.Add(time.Minute) {
		_, err := s.a.Run(context.Background(), s.e.client)
		require.NoError(s.t, err)
		s.readsDue()
		s.pollDue()
	}
}

// busiestHour is the most requests (polls and listing reads) of the Site
// in any hour from from.
func (s *listingSim) busiestHour(from time.Time) int {
	var times []time.Time
	for _, p := range s.polls {
		if !p.at.Before(from) {
			times = append(times, p.at)
		}
	}
	for _, r := range s.reads {
		if !r.Before(from) {
			times = append(times, r)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	best, lo := 0, 0
	for hi := range times {
		for times[hi].Sub(times[lo]) >= time.Hour {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func TestListingFindsReleasesWithinOnePeriodWithinTheBudget(t *testing.T) {
	t.Parallel()
	monday := nextMonday(12)
	const budget = 60
	s := newListingSim(t, monday, budget)
	var keys []string
	for i := range 12 {
		// Weekly Series released on Tuesdays at spread hours; the listing
		// will find this week's releases whenever they come.
		seen := pastWeeks(monday, time.Duration(26+i)*time.Hour+25*time.Minute)
		keys = append(keys, s.series(fmt.Sprintf("w%d", i), 1+i%4, monday.Add(-8*7*24*time.Hour), monday.Add(-30*time.Minute), seen))
	}
	// This week: each released at an odd minute off its usual time, and the
	// unheld Series releases through the day.
	releases := map[string]time.Time{}
	for i, key := range keys {
		r := monday.Add(time.Duration(26+i)*time.Hour + time.Duration(7*i-30)*time.Minute)
		s.releases[key] = []time.Time{r}
		releases[key] = r
	}
	for h := 2; h < 36; h += 3 {
		s.unheld = append(s.unheld, monday.Add(time.Duration(h)*time.Hour))
	}
	s.run(monday.Add(40 * time.Hour))

	st, err := s.e.st.SiteListingOf(context.Background(), s.site.Name)
	require.NoError(t, err)
	require.Equal(t, store.ListingHealthy, st.State, "two good reads make the listing trusted: %+v", st)
	plan := s.a.Planner.PlanListing(budget, len(keys), st.Rate, st.Entries)
	require.NotEmpty(t, s.reads)
	for i := 1; i < len(s.reads); i++ {
		require.LessOrEqual(t, s.reads[i].Sub(s.reads[i-1]), 2*plan.Period, "the listing is read every period")
	}

	// Every release is polled, for reason "listing", within one listing
	// period of it (and a minute of the test's clock).
	for _, key := range keys {
		r := releases[key]
		found := s.firstPollFrom(key, r)
		require.NotNil(t, found, "%s released at %s is polled", key, r)
		require.Equal(t, schedule.ReasonListing, found.reason, "%s: found by %+v", key, *found)
		require.LessOrEqual(t, found.at.Sub(r), plan.Period+time.Minute, "%s found %s after its release", key, found.at.Sub(r))
		require.Equal(t, 1, s.seen[key])
	}
	// Covered Series drop to the sparse safety poll and say so.
	for _, key := range keys {
		at, reason := s.next(key)
		require.Equal(t, schedule.ReasonListed, reason, key)
		require.NotNil(t, at)
	}
	require.LessOrEqual(t, s.busiestHour(monday), budget, "no hour above the Site's budget, listing reads counted")

	// The listing fails (a challenge instead of the page): the Site is
	// planned Series by Series again at the next plan, and the Owner sees
	// why.
	listingURL, _ := s.site.ListingURL()
	s.e.fetch.set(listingURL, []byte(`<html><head><title>Just a moment...</title></head><body></body></html>`), nil)
	require.NoError(t, s.l.Read(context.Background(), s.e.client, s.site.Name, 0))
	st, err = s.e.st.SiteListingOf(context.Background(), s.site.Name)
	require.NoError(t, err)
	require.Equal(t, store.ListingFailing, st.State)
	require.Contains(t, st.Problem, latest.ProblemChallenge)
	s.now = s.now.Add(schedule.DefaultHorizon)
	s.e.exec(`UPDATE site_state SET paused_until = NULL WHERE site = $1`, s.site.Name)
	_, err = s.a.Run(context.Background(), s.e.client)
	require.NoError(t, err)
	for _, key := range keys {
		_, reason := s.next(key)
		require.NotEqual(t, schedule.ReasonListed, reason, "%s is planned on its own once the listing fails", key)
	}
	console := &Console{Store: s.e.st, Registry: s.e.reg, Budgets: s.a.Budgets, Listings: true, Now: func() time.Time { return s.now }}
	status, err := console.Status(context.Background(), 5)
	require.NoError(t, err)
	i := slices.IndexFunc(status.Sites, func(ss SiteStatus) bool { return ss.Site.Name == s.site.Name })
	require.GreaterOrEqual(t, i, 0)
	l := status.Sites[i].Listing
	require.NotNil(t, l)
	require.Equal(t, store.ListingFailing, l.State)
	require.False(t, l.InUse)
	require.Contains(t, l.Problem, latest.ProblemChallenge)
}

// A listing entry the series page disagrees with (the page lags) asks for
// one confirming poll, not one per read; an entry of a Series no Reader
// holds marks nothing.
func TestListingMarksOncePerEntry(t *testing.T) {
	t.Parallel()
	monday := nextMonday(12)
	s := newListingSim(t, monday, 60)
	key := s.series("lag", 2, monday.Add(-8*7*24*time.Hour), monday.Add(-time.Hour), nil)
	lp := latest.ListingPage{Updates: []latest.Update{
		{Key: key, Chapter: latest.Chapter{Label: "Chapter 9"}},
		{Key: s.site.Name + ":nobody", Chapter: latest.Chapter{Label: "Chapter 3"}},
	}}
	ctx := context.Background()
	out, err := s.l.Record(ctx, s.e.client, s.site, lp, 5, s.now)
	require.NoError(t, err)
	require.Equal(t, []string{key}, out.Newer)
	require.Equal(t, []string{key}, out.Confirmed, "queued at once within the hour's confirms")
	s.now = s.now.Add(2 * time.Minute)
	out, err = s.l.Record(ctx, s.e.client, s.site, lp, 5, s.now)
	require.NoError(t, err)
	require.Empty(t, out.Newer, "the same entry again asks for nothing")
	lp.Updates[0].Chapter.Label = "Chapter 10"
	out, err = s.l.Record(ctx, s.e.client, s.site, lp, 5, s.now)
	require.NoError(t, err)
	require.Equal(t, []string{key}, out.Newer, "a changed entry asks again")
}

// TestListingConfirmsAgainWhenTheSeriesPageLags: a confirming poll that ran
// and still read the older chapter (the series page cached behind the
// listing) is asked again after a delay, a bounded number of times, not
// left to the covered Series' safety poll two days later.
func TestListingConfirmsAgainWhenTheSeriesPageLags(t *testing.T) {
	t.Parallel()
	monday := nextMonday(12)
	s := newListingSim(t, monday, 60)
	key := s.series("cached", 2, monday.Add(-8*7*24*time.Hour), monday.Add(-time.Hour), nil)
	lp := latest.ListingPage{Updates: []latest.Update{{Key: key, Chapter: latest.Chapter{Label: "Chapter 9"}}}}
	ctx := context.Background()
	record := func() ListingOutcome {
		t.Helper()
		out, err := s.l.Record(ctx, s.e.client, s.site, lp, 50, s.now)
		require.NoError(t, err)
		return out
	}
	// The confirming poll ran a minute after the mark and found the stored
	// chapter unchanged.
	missed := func() {
		t.Helper()
		s.now = s.now.Add(time.Minute)
		s.e.exec(`UPDATE series SET last_poll_at = $2 WHERE key = $1`, key, s.now)
	}
	require.Equal(t, []string{key}, record().Newer, "the first read marks it")
	require.Empty(t, record().Newer, "not again before its poll has run")
	asked := 1
	for _, delay := range listingReconfirm {
		missed()
		s.now = s.now.Add(delay - time.Second)
		require.Empty(t, record().Newer, "not before %v after the poll that missed", delay)
		s.now = s.now.Add(time.Second)
		out := record()
		require.Equal(t, []string{key}, out.Newer, "again %v after the poll that missed", delay)
		require.Equal(t, []string{key}, out.Confirmed)
		asked++
	}
	missed()
	s.now = s.now.Add(24 * time.Hour)
	require.Empty(t, record().Newer, "after %d confirming polls the Series waits for its safety poll", asked)
	require.Equal(t, 1+len(listingReconfirm), asked)

	// Once the series page agrees (the stored chapter is the listed one),
	// nothing is asked, and a later chapter starts over at one try.
	s.e.exec(`UPDATE series SET latest_label = 'Chapter 9' WHERE key = $1`, key)
	require.Empty(t, record().Newer)
	lp.Updates[0].Chapter.Label = "Chapter 10"
	require.Equal(t, []string{key}, record().Newer)
	var tries int
	require.NoError(t, s.e.st.Pool.QueryRow(ctx, `SELECT tries FROM listing_marks WHERE series_key = $1`, key).Scan(&tries))
	require.Equal(t, 1, tries)
}

// A Reader's three weekly Series on a Site paced at a request a second: the
// listing is read only three times an hour (what the Series' own polls
// would cost, ADR 0029), so the Series it covers keep their windows and a
// release on time is found by its window's polls, not by the next read
// (ADR 0029's second amendment). The listing still covers the rest.
func TestASlowListingLeavesTheWindows(t *testing.T) {
	t.Parallel()
	monday := nextMonday(12)
	const budget = 3600
	s := newListingSim(t, monday, budget)
	var keys []string
	for i := range 3 {
		hour := time.Duration(26+i) * time.Hour // Tuesdays 14:00, 15:00, 16:00
		key := s.series(fmt.Sprintf("k%d", i), 1, monday.Add(-8*7*24*time.Hour), monday.Add(-30*time.Minute), pastWeeks(monday, hour+20*time.Minute))
		keys = append(keys, key)
		s.releases[key] = []time.Time{monday.Add(hour + 5*time.Minute)}
	}
	// A fourth, usually on Tuesdays at 17:00, comes out on Monday at 20:00,
	// far from its window.
	early := s.series("early", 1, monday.Add(-8*7*24*time.Hour), monday.Add(-30*time.Minute), pastWeeks(monday, 29*time.Hour+20*time.Minute))
	s.releases[early] = []time.Time{monday.Add(8 * time.Hour)}
	s.run(monday.Add(30 * time.Hour))

	st, err := s.e.st.SiteListingOf(context.Background(), s.site.Name)
	require.NoError(t, err)
	require.Equal(t, store.ListingHealthy, st.State)
	plan := s.a.Planner.PlanListing(budget, len(keys)+1, st.Rate, st.Entries)
	require.Equal(t, 15*time.Minute, plan.Period, "read as often as polling each Series hourly would cost")
	r := s.releases[early][0]
	found := s.firstPollFrom(early, r)
	require.NotNil(t, found)
	require.Equal(t, schedule.ReasonListing, found.reason, "off its window, the listing finds it: %+v", *found)
	require.LessOrEqual(t, found.at.Sub(r), plan.Period+time.Minute)
	require.Empty(t, s.pollsOf(early, monday.Add(2*time.Hour), r), "no off-schedule polls of its own before it")
	for _, key := range keys {
		r := s.releases[key][0]
		found := s.firstPollFrom(key, r)
		require.NotNil(t, found, "%s released at %s is polled", key, r)
		require.Equal(t, schedule.ReasonWindow, found.reason, "%s: found by %+v", key, *found)
		require.Less(t, found.at.Sub(r), plan.Period, "%s: found by its window before the next read could show it", key)
	}
}

// TestListingPlanFigures measures, through the production plan on Postgres
// with a fake clock, a Site of 60 weekly Series (releases spread over the
// day) at a budget of 120 an hour, and a Reader's 3 Series on a Site paced
// at a request a second, with its listing and without: requests per hour
// (listing reads counted) and the median and worst detection delay. A
// figure, not a check: it runs only with LECTERN_FIGURES=1.
//
//	LECTERN_FIGURES=1 go test -run ListingPlanFigures -v ./backend/internal/poll/
func TestListingPlanFigures(t *testing.T) {
	if os.Getenv("LECTERN_FIGURES") == "" {
		t.Skip("a figure: set LECTERN_FIGURES=1")
	}
	for _, c := range []struct{ n, budget int }{{60, 120}, {3, 3600}} {
		for _, on := range []bool{true, false} {
			listingFigure(t, c.n, c.budget, on)
		}
	}
}

func listingFigure(t *testing.T, count, budget int, on bool) {
	monday := nextMonday(12)
	s := newListingSim(t, monday, budget)
	s.a.Listings = on
	var keys []string
	for i := range count {
		hour := time.Duration(24+i%24) * time.Hour
		key := s.series(fmt.Sprintf("f%d", i), 1+i%5, monday.Add(-8*7*24*time.Hour), monday.Add(-30*time.Minute), pastWeeks(monday, hour+20*time.Minute))
		keys = append(keys, key)
		s.releases[key] = []time.Time{monday.Add(hour + time.Duration(i%30-15)*time.Minute)}
	}
	from := monday.Add(6 * time.Hour)
	s.run(monday.Add(54 * time.Hour))
	var delays []time.Duration
	for _, key := range keys {
		r := s.releases[key][0]
		if p := s.firstPollFrom(key, r); p != nil {
			delays = append(delays, p.at.Sub(r))
		}
	}
	slices.Sort(delays)
	n := 0
	for _, p := range s.polls {
		if !p.at.Before(from) {
			n++
		}
	}
	reads := 0
	for _, r := range s.reads {
		if !r.Before(from) {
			reads++
		}
	}
	hours := s.now.Sub(from).Hours()
	t.Logf("%d Series, listing %v: %.1f requests/h (%.1f listing reads/h), %d of %d releases found, median %v, worst %v, busiest hour %d of %d",
		count, on, float64(n+reads)/hours, float64(reads)/hours, len(delays), count, delays[len(delays)/2], delays[len(delays)-1], s.busiestHour(from), budget)
}

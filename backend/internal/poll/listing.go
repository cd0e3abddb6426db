package poll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Listings (docs/adr/0028-site-listings.md). Under the adaptive policy with
// POLL_LISTINGS on, the plan of a Site whose registry entry has a listing
// queues a poll_listing job every schedule.PlanListing period, out of the
// Site's budget; the read marks the held Series it shows with a chapter
// newer than the stored Latest Chapter and queues the first of them at once
// (reason "listing"); the plan polls the rest first, and drops the Series a
// healthy listing covers to a safety poll every schedule.ListedGap. A
// listing entry never writes a Series fact: the series poll does. A listing
// that fails, is refused, changes shape or overflows hands its Site back to
// per-Series planning at the next plan; the Owner sees its state and why
// (Console, admin status, the console's Sites page).

// ListingRetry is how often a failing listing is tried again.
const ListingRetry = time.Hour

// listingFallback is how long a Site whose listing overflowed (entries
// scrolled out of it between two reads) is planned Series by Series: the
// releases it missed are found by their Series' own windows.
const listingFallback = time.Hour

// ListingArgs is the poll_listing job: read a Site's listing once.
type ListingArgs struct {
	Site string `json:"site" river:"unique"`
	// At is the read's planned time: a horizon may plan several reads of
	// one Site, each its own job.
	At time.Time `json:"at,omitzero" river:"unique"`
	// Confirms is how many confirming polls the plan that queued the read
	// allows per hour (schedule.ListingBudget.Confirms).
	Confirms int `json:"confirms,omitempty"`
}

// Kind is River's job kind.
func (ListingArgs) Kind() string { return riverjob.PollListing }

// InsertOpts: one read in flight per Site, never retried (the next period's
// read is the retry).
func (ListingArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, Priority: PriorityScheduled, UniqueOpts: riverjob.UniqueInFlight()}
}

// Listings reads Sites' listings and records what they show.
type Listings struct {
	Store    *store.Store
	Registry *latest.Registry
	Policy   *fetch.Policy
	Fetch    fetch.Fetcher
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

func (l *Listings) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Listings) log() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

// Read fetches the Site's listing and records it; client queues the
// confirming polls. Whatever the Site answers is recorded on the listing:
// only a failure to record is an error.
func (l *Listings) Read(ctx context.Context, client *river.Client[pgx.Tx], name string, confirms int) error {
	site, ok := l.Registry.Lookup(name)
	if !ok || site.Listing == nil {
		return nil
	}
	log := l.log().With("site", name)
	if l.Policy != nil {
		hold, err := l.Policy.Hold(ctx, name)
		if err != nil {
			return fmt.Errorf("listing of %s: %w", name, err)
		}
		if hold.Held() {
			// The Site is paused or backing off: no read, and the plan,
			// which plans no Series of a held Site either, queues the next.
			log.InfoContext(ctx, "listing read skipped: "+hold.String())
			return nil
		}
	}
	listingURL, _ := site.ListingURL()
	page, err := l.Fetch.FetchSeries(ctx, site, listingURL, fetch.Conditional{})
	now := l.now()
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return nil
		}
		var se *fetch.StatusError
		if errors.As(err, &se) && se.Refused() {
			problem := fmt.Sprintf("http_%d: %s", se.Status, fetch.Describe(err))
			return l.fail(ctx, log, site, problem, true, now)
		}
		return l.fail(ctx, log, site, "fetch: "+fetch.Describe(err), false, now)
	}
	pu, _ := url.Parse(listingURL)
	lp, err := site.Listing.Read(page.Body, pu, now)
	if err != nil {
		return l.fail(ctx, log, site, problemText(err), latest.IsBackoffProblem(err), now)
	}
	if err := l.Store.SiteAnswered(ctx, name); err != nil {
		return err
	}
	_, err = l.Record(ctx, client, site, lp, confirms, now)
	return err
}

// fail records a failed read: the Site goes back to per-Series planning and
// the listing is tried again in ListingRetry. A refusal (a challenge, a
// 403/429) also backs the Site off, as a refused poll does.
func (l *Listings) fail(ctx context.Context, log *slog.Logger, site *latest.Site, problem string, refused bool, now time.Time) error {
	st, err := l.Store.SiteListingOf(ctx, site.Name)
	if err != nil {
		return err
	}
	st.State, st.Problem, st.GoodReads, st.ReadAt = store.ListingFailing, problem, 0, &now
	next := now.Add(ListingRetry)
	st.NextAt = &next
	if err := l.Store.SaveSiteListing(ctx, st); err != nil {
		return err
	}
	log.WarnContext(ctx, "listing failed: planning the Site Series by Series", "problem", problem, "retry_at", next)
	if refused {
		if _, err := l.Store.BackOffSite(ctx, site.Name, "listing: "+problem, func(n int) time.Duration { return fetch.BackoffPause(n, 0) }); err != nil {
			return err
		}
	}
	return nil
}

// ListingOutcome is what one read found.
type ListingOutcome struct {
	// Newer are the held Series shown with a newer chapter (marked);
	// Confirmed those of them queued at once.
	Newer, Confirmed []string
	Fresh            int
	Overflowed       bool
}

// Record records a good read of site's listing at now: its measure, the
// marks on held Series it shows newer, and up to confirms confirming polls
// per hour queued at once through client (nil: none).
func (l *Listings) Record(ctx context.Context, client *river.Client[pgx.Tx], site *latest.Site, lp latest.ListingPage,
	confirms int, now time.Time) (ListingOutcome, error) {
	var out ListingOutcome
	st, err := l.Store.SiteListingOf(ctx, site.Name)
	if err != nil {
		return out, err
	}
	prev := make(map[string]bool, len(st.Seen))
	for _, s := range st.Seen {
		prev[s] = true
	}
	seen := make([]string, 0, len(lp.Updates))
	keys := make([]string, 0, len(lp.Updates))
	overlap := false
	for _, u := range lp.Updates {
		id := u.Key + "|" + u.Chapter.Label
		seen = append(seen, id)
		keys = append(keys, u.Key)
		if prev[id] {
			overlap = true
		} else {
			out.Fresh++
		}
	}
	if st.ReadAt == nil || st.State == store.ListingFailing {
		out.Fresh = 0 // a first read measures nothing
	}
	// Entries scrolled out between two reads: the oldest entry is newer
	// than the last read, or, for a listing without times, no entry of
	// the last read is left.
	out.Overflowed = st.OKAt != nil && st.State != store.ListingFailing && len(lp.Updates) > 0 &&
		(!lp.Reach.IsZero() && lp.Reach.After(*st.OKAt) || lp.Reach.IsZero() && len(st.Seen) > 0 && !overlap)
	st.Reads = append(st.Reads, store.ListingRead{At: now, Fresh: out.Fresh})
	st.Reads = slices.DeleteFunc(st.Reads, func(r store.ListingRead) bool { return now.Sub(r.At) > 24*time.Hour })
	if span := now.Sub(st.Reads[0].At); span >= time.Hour && len(st.Reads) > 1 {
		n := 0
		for _, r := range st.Reads[1:] {
			n += r.Fresh
		}
		st.Rate = float64(n) / span.Hours()
	}
	st.Seen, st.Entries, st.ReadAt, st.OKAt, st.Problem = seen, len(lp.Updates), &now, &now, ""
	if out.Overflowed {
		until := now.Add(listingFallback)
		st.State, st.GoodReads, st.FallbackUntil = store.ListingOverflowed, 0, &until
		st.Problem = fmt.Sprintf("overflowed: none of the %d entries read at %s is left; planning Series by Series until %s",
			len(prev), st.Reads[max(0, len(st.Reads)-2)].At.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	} else {
		st.GoodReads++
		st.State = store.ListingNew
		if st.GoodReads >= schedule.ListingTrustReads {
			st.State = store.ListingHealthy
		}
	}

	targets, err := l.Store.ListingTargets(ctx, site.Name, keys)
	if err != nil {
		return out, err
	}
	var marks []store.ListingMark
	for _, u := range lp.Updates {
		t, held := targets[u.Key]
		label := strings.Join(strings.Fields(u.Chapter.Label), " ")
		if !held || !u.NewerThan(t.LatestLabel, t.LatestNumber) {
			continue
		}
		tries := 1
		if label == t.MarkLabel {
			// Already marked for this entry: one confirming poll per change,
			// however many reads show it, unless that poll ran and still
			// read the older chapter.
			if !confirmAgain(t, now) {
				continue
			}
			tries = t.MarkTries + 1
			l.log().InfoContext(ctx, "listing: the series page still shows an older chapter: confirming again",
				"series", u.Key, "site", site.Name, "listed", label, "stored", t.LatestLabel, "try", tries)
		}
		marks = append(marks, store.ListingMark{Key: u.Key, Label: label, At: now, Tries: tries})
		out.Newer = append(out.Newer, u.Key)
	}
	if err := l.Store.MarkListing(ctx, marks); err != nil {
		return out, err
	}
	st.Confirms = slices.DeleteFunc(st.Confirms, func(at time.Time) bool { return now.Sub(at) >= time.Hour })
	if client != nil {
		var params []river.InsertManyParams
		for _, key := range out.Newer {
			if len(st.Confirms) >= confirms {
				break // the rest go first at the next plan
			}
			params = append(params, river.InsertManyParams{Args: PollArgs{Key: key, Reason: schedule.ReasonListing},
				InsertOpts: &river.InsertOpts{ScheduledAt: now, Priority: PriorityHint, UniqueOpts: riverjob.UniqueInFlight()}})
			st.Confirms = append(st.Confirms, now)
			out.Confirmed = append(out.Confirmed, key)
		}
		if len(params) > 0 {
			if _, err := client.InsertMany(ctx, params); err != nil {
				return out, fmt.Errorf("listing of %s: confirming polls: %w", site.Name, err)
			}
		}
	}
	if err := l.Store.SaveSiteListing(ctx, st); err != nil {
		return out, err
	}
	l.log().InfoContext(ctx, "listing read", "site", site.Name, "entries", len(lp.Updates), "fresh", out.Fresh,
		"newer", len(out.Newer), "confirmed", len(out.Confirmed), "state", st.State, "rate_per_hour", st.Rate)
	return out, nil
}

// listingReconfirm spaces the further confirming polls one listing entry
// asks for when its confirming poll still read the older chapter (the
// series page is cached behind the listing, or the Site publishes the
// listing first): each delay counts from the poll that missed. After the
// last, the covered Series waits for its safety poll, so an entry the
// series page never agrees with costs at most 1+len of these polls.
var listingReconfirm = [...]time.Duration{10 * time.Minute, 30 * time.Minute, 90 * time.Minute}

// confirmAgain says whether a Series already marked for an entry that still
// shows newer asks for another confirming poll at now.
func confirmAgain(t store.ListingTarget, now time.Time) bool {
	if t.MarkAt == nil || t.LastPollAt == nil || !t.LastPollAt.After(*t.MarkAt) {
		return false // the mark's poll has not run yet
	}
	i := max(t.MarkTries, 1) - 1
	return i < len(listingReconfirm) && now.Sub(*t.LastPollAt) >= listingReconfirm[i]
}

// ListingWorker runs poll_listing jobs.
type ListingWorker struct {
	river.WorkerDefaults[ListingArgs]
	Listings *Listings
}

// Work implements river.Worker.
func (w *ListingWorker) Work(ctx context.Context, job *river.Job[ListingArgs]) error {
	return w.Listings.Read(ctx, river.ClientFromContext[pgx.Tx](ctx), job.Args.Site, job.Args.Confirms)
}

// Timeout implements river.Worker: a listing is one page.
func (w *ListingWorker) Timeout(*river.Job[ListingArgs]) time.Duration { return 3 * time.Minute }

// listingPlan applies a Site's listing to one plan of the horizon from
// start: it queues the listing's read when it falls in the horizon, marks
// the Series the listing showed newer (ListingNewer) and, while the listing
// is healthy, the ones it covers (Listed), and returns what is left of
// budget for the Series' own polls. Without a listing (POLL_LISTINGS off,
// or none in the Site's entry) the plan is the per-Series one.
func (a *Adaptive) listingPlan(ctx context.Context, client *river.Client[pgx.Tx], site *latest.Site, start time.Time,
	budget int, in *planInput, held int) (int, error) {
	if !a.Listings || site.Listing == nil {
		return budget, nil
	}
	st, err := a.Store.SiteListingOf(ctx, site.Name)
	if err != nil {
		return budget, err
	}
	plan := a.Planner.PlanListing(budget, held, st.Rate, st.Entries)
	end := start.Add(a.horizon())
	next := start
	if st.NextAt != nil && st.NextAt.After(start) {
		next = *st.NextAt
	}
	if next.Before(end) {
		period := plan.Period
		if st.State == store.ListingFailing {
			period = ListingRetry
		}
		// Every read that falls in the horizon: a period shorter than the
		// horizon means more than one.
		for ; next.Before(end); next = next.Add(period) {
			_, err := client.Insert(ctx, ListingArgs{Site: site.Name, At: next, Confirms: plan.Confirms}, &river.InsertOpts{ScheduledAt: next})
			if err != nil {
				return budget, fmt.Errorf("queue the listing read of %s: %w", site.Name, err)
			}
		}
		if err := a.Store.SetListingNext(ctx, site.Name, next); err != nil {
			return budget, err
		}
	}
	marks, err := a.Store.ListingMarks(ctx, site.Name)
	if err != nil {
		return budget, err
	}
	healthy := st.State == store.ListingHealthy && st.GoodReads >= schedule.ListingTrustReads &&
		(st.FallbackUntil == nil || !start.Before(*st.FallbackUntil))
	for j := range in.series {
		s := &in.series[j]
		if at, ok := marks[s.Key]; ok && (s.LastPoll.IsZero() || at.After(s.LastPoll)) {
			s.ListingNewer = true
		}
		s.Listed = healthy
	}
	for j := range in.queued {
		// Priced as the planned ones are (schedule.Site.Queued).
		in.queued[j].Listed = healthy
	}
	if healthy {
		in.listingPeriod = plan.Period
	}
	reserve := plan.Reserve
	if st.State == store.ListingFailing {
		// Tried again hourly: two reads in an hour at most.
		reserve = 2
	}
	// An hour may still hold the reads and confirms of a larger plan: the
	// Series' polls get only what no plan of the hour gave the listing.
	if err := a.Store.SetListingReserve(ctx, site.Name, reserve, start); err != nil {
		return budget, err
	}
	most, err := a.Store.ListingReserve(ctx, site.Name, start)
	if err != nil {
		return budget, err
	}
	return max(1, budget-max(reserve, most)), nil
}

package poll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/riverqueue/river"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/browser"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// ProblemNoBrowser names a poll skipped because its Site is read only in a
// browser and none is configured.
const ProblemNoBrowser = "no_browser"

// CoverQueue queues the Cover job; cover.Queue implements it.
type CoverQueue interface {
	QueueCover(ctx context.Context, args cover.FetchArgs) error
}

// Poller polls one Series: fetch its page, ask the registry, store what
// changed, hand a missing Cover to the Cover job. PollWorker runs it on
// River.
type Poller struct {
	Store    *store.Store
	Registry *latest.Registry
	// Policy decides back-off and snoozes, as for the Cover job and the
	// Archive.
	Policy *fetch.Policy
	Fetch  fetch.Fetcher
	// Covers is nil when Covers are not acquired.
	Covers CoverQueue
	// Archive, when set, is handed the chapters a poll finds listed after
	// the previous Latest Chapter, so Bookmarks that keep archiving get them
	// archived; it queues them in the poll's own transaction.
	Archive Follower
	// Interval is POLL_INTERVAL, for the forecast of the next poll.
	Interval time.Duration
	// Adaptive: the adaptive plan decides each Series' next poll, so a poll
	// forecasts none; the Series is planned again within minutes.
	Adaptive bool
	Logger   *slog.Logger
}

// Follower queues the archiving of new chapters for the Bookmarks that keep
// archiving their Series (package archive).
type Follower interface {
	// Followed reports whether any Reader keeps archiving the Series.
	Followed(ctx context.Context, key string) (bool, error)
	// QueueFollow queues the chapters inside tx, the poll's transaction.
	QueueFollow(ctx context.Context, tx *store.Store, key string, chapters []latest.Chapter) error
}

func (p *Poller) log() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

// Poll polls the Series named key. scheduledAt is when the poll was planned
// (the River job's scheduled time), from which the next poll is forecast.
//
// It returns nil when the poll is done, whatever the Site said (the outcome
// is on the Series); a river.JobSnooze error while the Site backs off, so
// the job waits without burning an attempt; and any other error for a
// failure worth retrying soon (the network, a 5xx, a lost browser).
func (p *Poller) Poll(ctx context.Context, key string, scheduledAt time.Time) error {
	var sawRefetch bool
	err := p.poll(ctx, key, scheduledAt, &sawRefetch)
	if err != nil || sawRefetch {
		// A refetch this poll saw is consumed or left for the next poll:
		// never poll again at once for it, or a failing Site would loop.
		return err
	}
	// The Owner may ask for a fresh Cover while this poll runs: River keeps
	// one poll per Series in flight, so their request found this one and
	// queued nothing. If the mark appeared after this poll read the Series,
	// run once more at once rather than leave it to the next planned poll.
	ser, rerr := p.Store.SeriesByKey(ctx, key)
	if rerr == nil && ser.CoverRefetchAt != nil {
		p.log().InfoContext(ctx, "Cover refetch asked during the poll: polling again", "series", key, "site", ser.Site)
		return river.JobSnooze(0)
	}
	return nil
}

func (p *Poller) poll(ctx context.Context, key string, scheduledAt time.Time, sawRefetch *bool) error {
	log := p.log().With("series", key)
	ser, err := p.Store.SeriesByKey(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		site, _, _ := latest.SplitKey(key)
		log.WarnContext(ctx, "poll of a Series that does not exist", "site", site)
		return nil
	}
	if err != nil {
		return fmt.Errorf("poll %s: %w", key, err)
	}
	log = log.With("site", ser.Site)
	site, ok := p.Registry.Lookup(ser.Site)
	if !ok {
		log.ErrorContext(ctx, "poll of a Series on an unknown Site")
		_, err := p.Store.RecordPoll(ctx, key, store.PollResult{Status: store.PollFailed, Failed: true,
			Problem: "unknown_site: " + ser.Site + " is not in the Site registry"})
		return err
	}
	hold, err := p.Policy.Hold(ctx, site.Name)
	if err != nil {
		return fmt.Errorf("poll %s: %w", key, err)
	}
	if hold.Held() {
		log.InfoContext(ctx, "poll snoozed: "+hold.String())
		return river.JobSnooze(p.Policy.HoldSnooze(hold))
	}

	refetch := ser.CoverRefetchAt != nil
	*sawRefetch = refetch
	var cond fetch.Conditional
	// A Series without a Cover needs the body to retry its Cover, and a
	// refetch needs a fresh one: only otherwise may the Site answer 304.
	if ser.CoverAddress != "" && !refetch && ser.LatestLabel != "" {
		cond = fetch.Conditional{ETag: ser.PollETag, LastModified: ser.PollLastModified}
	}
	start := time.Now()
	page, fromFeed, err := p.fetchSeries(ctx, log, site, ser, refetch, cond)
	took := max(time.Since(start)-page.Waited, 0)
	next := p.forecast(scheduledAt)
	if err != nil {
		return p.failed(ctx, log, site, key, err, took, next)
	}
	if page.NotModified {
		if _, err := p.Store.RecordPoll(ctx, key, p.withNext(store.PollResult{Status: store.PollNotModified, Success: true,
			Duration: took}, next)); err != nil {
			return err
		}
		log.DebugContext(ctx, "poll: not modified", "ms", took.Milliseconds())
		return p.Store.SiteAnswered(ctx, site.Name)
	}
	return p.answered(ctx, log, site, ser, page, took, next, refetch, fromFeed)
}

// fetchSeries fetches what the poll reads: the Site's lighter feed when it
// has one (PollURL) and the Series needs nothing only the series page gives
// (a first Latest Chapter, a Cover, a refetch), otherwise the series page.
// A feed that fails or names no Latest Chapter is followed by the series
// page, so a Site whose feed is down is still polled; a refusal is not,
// since the series page would be refused too.
//
// fromFeed says the body is the feed's, which answers the Latest Chapter
// but not what only the series page names (tracker ids).
func (p *Poller) fetchSeries(ctx context.Context, log *slog.Logger, site *latest.Site, ser store.Series, refetch bool,
	cond fetch.Conditional) (page fetch.Page, fromFeed bool, err error) {
	if site.PollURL == nil || ser.CoverAddress == "" || refetch || ser.LatestLabel == "" {
		page, err = p.Fetch.FetchSeries(ctx, site, ser.SeriesURL, cond)
		return page, false, err
	}
	feedURL, ok := site.PollURL(ser.SeriesURL)
	if !ok {
		page, err = p.Fetch.FetchSeries(ctx, site, ser.SeriesURL, cond)
		return page, false, err
	}
	page, err = p.Fetch.FetchSeries(ctx, site, feedURL, cond)
	var se *fetch.StatusError
	switch {
	case err == nil && page.NotModified:
		return page, true, nil
	case err == nil:
		pu, _ := url.Parse(feedURL)
		_, lerr := site.Latest(page.Body, pu)
		if lerr == nil || latest.IsBackoffProblem(lerr) {
			return page, true, nil
		}
		log.InfoContext(ctx, "poll: the feed names no Latest Chapter: reading the series page", "problem", problemText(lerr))
	case errors.As(err, &se) && se.Refused(), errors.Is(err, fetch.ErrPaused), errors.Is(err, context.Canceled):
		return page, true, err
	default:
		log.InfoContext(ctx, "poll: the feed failed: reading the series page", "err", err)
	}
	waited := page.Waited
	page, err = p.Fetch.FetchSeries(ctx, site, ser.SeriesURL, fetch.Conditional{})
	page.Waited += waited
	return page, false, err
}

// forecast is the next poll after one planned at scheduledAt: an interval
// later, so polls keep their place in the cycle instead of drifting by the
// queue's latency; but at least half an interval from now, after a poll
// that ran late.
func (p *Poller) forecast(scheduledAt time.Time) time.Time {
	interval := p.Interval
	if interval <= 0 {
		interval = time.Hour
	}
	now := time.Now()
	next := scheduledAt.Add(interval)
	if scheduledAt.IsZero() || next.Before(now.Add(interval/2)) {
		next = now.Add(interval)
	}
	return next
}

// withNext adds the next poll to a poll's outcome: the interval policy's
// forecast, or, under the adaptive policy, none until the plan decides.
func (p *Poller) withNext(res store.PollResult, next time.Time) store.PollResult {
	if p.Adaptive {
		res.Unplanned = true
		return res
	}
	res.NextPollAt, res.NextPollReason = &next, ReasonInterval
	return res
}

func (p *Poller) failed(ctx context.Context, log *slog.Logger, site *latest.Site, key string, err error, took time.Duration, next time.Time) error {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		// Shutting down: the job runs again at the next start, unharmed.
		return river.JobSnooze(0)
	}
	if errors.Is(err, fetch.ErrPaused) {
		// The Owner paused the Site while this poll ran: it waits, with its
		// attempts, as when the pause came first.
		log.InfoContext(ctx, "poll snoozed: paused by the Owner", "err", err)
		return river.JobSnooze(p.Policy.HoldSnooze(fetch.Hold{Site: true}))
	}
	var se *fetch.StatusError
	switch {
	case errors.Is(err, fetch.ErrNoBrowser), errors.Is(err, browser.ErrNoBrowser):
		problem := ProblemNoBrowser + ": " + site.Name + " is read only in a browser and no browser is configured (BROWSER_URL or BROWSER_PATH)"
		log.InfoContext(ctx, "poll skipped: no browser configured")
		if _, err := p.Store.RecordPoll(ctx, key, p.withNext(store.PollResult{Status: store.PollSkipped, Problem: problem}, next)); err != nil {
			return err
		}
		return p.Store.SiteProblem(ctx, site.Name, problem)
	case errors.As(err, &se) && se.Refused():
		problem := fmt.Sprintf("http_%d: %s", se.Status, fetch.Describe(err))
		if named := latest.Diagnose(se.Body, "", ""); named.Code == latest.ProblemChallenge || named.Code == latest.ProblemAccessDenied {
			problem = fmt.Sprintf("%s: %d %s", named.Code, se.Status, named.Detail)
		}
		return p.backOff(ctx, log, site, key, problem, se.RetryAfter, len(se.Body), took)
	case errors.Is(err, browser.ErrChallenge):
		return p.backOff(ctx, log, site, key, latest.ProblemChallenge+": "+err.Error(), 0, 0, took)
	}

	// The problem is for people (the Series page, the console): words, with
	// the raw error in the log line below.
	res := store.PollResult{Status: store.PollFailed, Failed: true, Problem: "fetch: " + fetch.Describe(err), Duration: took}
	retry := true
	switch {
	case errors.As(err, &se):
		res.Problem = fmt.Sprintf("http_%d: %s", se.Status, fetch.Describe(err))
		n := len(se.Body)
		res.BodyLen = &n
		// A 4xx other than a refusal (404, 410) will not change by retrying
		// now; a 5xx may.
		retry = se.Status >= 500
		if se.Status == http.StatusNotFound || se.Status == http.StatusGone {
			res.GoneWhy = fmt.Sprintf("the series page answers %d %s", se.Status, http.StatusText(se.Status))
		}
	case errors.Is(err, fetch.ErrForeignHost):
		retry = false
		res.GoneWhy = "the series page redirects off the Site"
	case errors.Is(err, browser.ErrHostPin), errors.Is(err, fetch.ErrTooLarge):
		retry = false
	}
	if !retry {
		res = p.withNext(res, next)
	}
	if _, rerr := p.Store.RecordPoll(ctx, key, res); rerr != nil {
		log.ErrorContext(ctx, "record failed poll", "err", rerr)
	}
	log.WarnContext(ctx, "poll failed", "problem", res.Problem, "err", err, "retry", retry, "ms", took.Milliseconds())
	if retry {
		return fmt.Errorf("poll %s: %w", key, err)
	}
	return nil
}

// backOff pauses the Site and snoozes the poll to the pause's end.
func (p *Poller) backOff(ctx context.Context, log *slog.Logger, site *latest.Site, key, problem string, retryAfter time.Duration, bodyLen int, took time.Duration) error {
	until, err := p.Store.BackOffSite(ctx, site.Name, problem, func(n int) time.Duration { return fetch.BackoffPause(n, retryAfter) })
	if err != nil {
		return err
	}
	res := store.PollResult{Status: store.PollBackedOff, Failed: true, Problem: problem, Duration: took}
	if bodyLen > 0 {
		res.BodyLen = &bodyLen
	}
	if _, err := p.Store.RecordPoll(ctx, key, res); err != nil {
		return err
	}
	log.WarnContext(ctx, "Site refused: backing off", "problem", problem, "until", until, "body_len", bodyLen)
	return river.JobSnooze(p.Policy.Snooze(until))
}

// answered asks the registry about a body and stores what it says.
func (p *Poller) answered(ctx context.Context, log *slog.Logger, site *latest.Site, ser store.Series, page fetch.Page, took time.Duration,
	next time.Time, refetch, fromFeed bool) error {
	key := ser.Key
	pu, err := url.Parse(page.URL)
	if err != nil || page.URL == "" {
		pu, _ = url.Parse(ser.SeriesURL)
	}
	// A Site that names its Latest Chapter in a further body (LatestOf)
	// fetches it here, through the same pinned, paced fetcher; a failure of
	// that fetch is the poll's, as if the series page had failed.
	pageURL := ""
	if pu != nil {
		pageURL = pu.String()
	}
	newest, lerr := site.LatestChapter(ctx, fetch.Pages(p.Fetch, site), pageURL, page.Body)
	if lerr != nil && latest.ProblemCode(lerr) == "" {
		return p.failed(ctx, log, site, key, lerr, took, next)
	}
	if lerr != nil && latest.IsBackoffProblem(lerr) {
		return p.backOff(ctx, log, site, key, problemText(lerr), 0, len(page.Body), took)
	}
	title, _ := site.Title(page.Body, pu)
	coverAddr, cerr := site.Cover(page.Body, pu)

	res := p.withNext(store.PollResult{Duration: took, Title: title}, next)
	if lerr == nil {
		res.Status, res.Success = store.PollOK, true
		res.Latest = &store.LatestChapter{Label: newest.Label, Number: newest.Number, URL: newest.URL, Locked: newest.Locked}
		res.ETag, res.LastModified = page.ETag, page.LastModified
	} else {
		n := len(page.Body)
		res.Status, res.Failed, res.Problem, res.BodyLen = store.PollProblem, true, problemText(lerr), &n
		if latest.ProblemCode(lerr) == latest.ProblemNotFound {
			res.GoneWhy = "the series page is the Site's not-found page"
		}
	}
	var listed []latest.Chapter
	if lerr == nil {
		listed = p.listedForFollowers(ctx, log, site, ser, page.Body, pu, newest)
	}
	var rec store.PollRecorded
	err = p.Store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if rec, err = tx.RecordPoll(ctx, key, res); err != nil || !rec.LatestChanged || p.Archive == nil {
			return err
		}
		// In the poll's transaction: the new Latest Chapter and the
		// archiving of what came with it commit together.
		return p.Archive.QueueFollow(ctx, tx, key, listedAfter(listed, rec.Previous, newest))
	})
	if err != nil {
		return err
	}
	switch {
	case lerr != nil:
		log.WarnContext(ctx, "poll: no Latest Chapter", "problem", res.Problem, "body_len", len(page.Body), "via", page.Via)
	case rec.LatestChanged:
		log.InfoContext(ctx, "poll: new Latest Chapter", "chapter", newest.Label, "ms", took.Milliseconds(), "via", page.Via)
	default:
		log.DebugContext(ctx, "poll: Latest Chapter unchanged", "ms", took.Milliseconds(), "via", page.Via)
	}
	if lerr == nil && site.Trackers != nil && !fromFeed {
		// Tracker ids are a courtesy of the page (a feed names none, which
		// is not their removal): a failure to keep them fails nothing else.
		if err := p.Store.SetSeriesTrackerIDs(ctx, key, site.Trackers(page.Body, pu)); err != nil {
			log.WarnContext(ctx, "poll: tracker ids not recorded", "err", err)
		}
	}
	if lerr == nil && site.AltTitles != nil && !fromFeed {
		// Alternative titles only feed the Works suggestions: like tracker
		// ids, a courtesy of the series page, never the poll's failure.
		if err := p.Store.SetAltTitles(ctx, key, site.AltTitles(page.Body, pu)); err != nil {
			log.WarnContext(ctx, "poll: alternative titles not recorded", "err", err)
		}
	}
	if lerr == nil || !isNotPage(lerr) {
		// The Site answered with its series page: it is not refusing us.
		if err := p.Store.SiteAnswered(ctx, site.Name); err != nil {
			return err
		}
	}
	p.handCover(ctx, log, site, ser, coverAddr, cerr, refetch)
	return nil
}

// listedForFollowers is the Site's chapter list, oldest first, when the poll
// found a new Latest Chapter of a Series some Reader keeps archiving: the
// series page's own list, or, when that does not reach back to the
// previous Latest Chapter and the Site lists its chapters elsewhere
// (ChapterList), the full list, fetched through the same paced fetcher.
// nil otherwise: nothing is archived from it.
func (p *Poller) listedForFollowers(ctx context.Context, log *slog.Logger, site *latest.Site, ser store.Series,
	body []byte, pu *url.URL, newest latest.Chapter) []latest.Chapter {
	prev := store.LatestChapter{Label: ser.LatestLabel, Number: ser.LatestNumber, URL: ser.LatestURL}
	if p.Archive == nil || prev.URL == "" || prev.URL == newest.URL && prev.Label == newest.Label {
		return nil
	}
	followed, err := p.Archive.Followed(ctx, ser.Key)
	if err != nil {
		log.WarnContext(ctx, "poll: followers not read: only the newest chapter is archived", "err", err)
		return nil
	}
	if !followed {
		return nil
	}
	listed, err := site.Chapters(body, pu)
	if err != nil {
		log.InfoContext(ctx, "poll: the series page lists no chapters to archive", "problem", problemText(err))
		listed = nil
	}
	if reaches(listed, prev) || site.ChapterList == nil {
		return listed
	}
	all, err := site.AllChapters(ctx, fetch.Pages(p.Fetch, site), pu.String(), body)
	if err != nil {
		log.WarnContext(ctx, "poll: full chapter list not read: archiving what the series page lists", "err", err)
		return listed
	}
	return all
}

// reaches reports whether a chapter list (oldest first) goes back as far as
// prev: it lists prev, or a chapter numbered at or below it.
func reaches(list []latest.Chapter, prev store.LatestChapter) bool {
	for _, c := range list {
		if c.URL == prev.URL || prev.Number != nil && c.Number != nil && *c.Number <= *prev.Number {
			return true
		}
	}
	return false
}

// listedAfter is what keep archiving takes from a poll that found newest
// after prev: every chapter listed after prev (by its place in the list, or,
// when the list no longer shows it, by number), and newest always. A Series
// without a previous Latest Chapter (its first poll) gives newest alone: a
// Reader keeps the chapters found from now on.
func listedAfter(list []latest.Chapter, prev store.LatestChapter, newest latest.Chapter) []latest.Chapter {
	var out []latest.Chapter
	if prev.URL != "" {
		at := slices.IndexFunc(list, func(c latest.Chapter) bool { return c.URL == prev.URL })
		switch {
		case at >= 0:
			out = slices.Clone(list[at+1:])
		case prev.Number != nil:
			for _, c := range list {
				if c.Number != nil && *c.Number > *prev.Number {
					out = append(out, c)
				}
			}
		}
	}
	if !slices.ContainsFunc(out, func(c latest.Chapter) bool { return c.URL == newest.URL }) {
		out = append(out, newest)
	}
	return out
}

// handCover queues the Cover job for a Series without a Cover (or one the
// Owner asked to refetch). Nothing here fails the poll: a Cover is cosmetic.
func (p *Poller) handCover(ctx context.Context, log *slog.Logger, site *latest.Site, ser store.Series, address string, cerr error, refetch bool) {
	if refetch {
		// The request is consumed by this poll whatever the page holds: a
		// failed refetch keeps the old Cover and is not retried on its own.
		if _, err := p.Store.TakeCoverRefetch(ctx, ser.Key); err != nil {
			log.WarnContext(ctx, "clear cover refetch request", "err", err)
		}
	}
	if p.Covers == nil || (ser.CoverAddress != "" && !refetch) {
		return
	}
	if cerr != nil || address == "" {
		if cerr != nil {
			log.DebugContext(ctx, "no Cover address on the page", "problem", problemText(cerr))
		}
		return
	}
	err := p.Covers.QueueCover(ctx, cover.FetchArgs{Key: ser.Key, Site: site.Name, Address: address, SeriesURL: ser.SeriesURL, Refetch: refetch})
	if err != nil {
		log.WarnContext(ctx, "Cover job not queued", "address", address, "err", err)
	}
}

func problemText(err error) string {
	var p *latest.Problem
	if errors.As(err, &p) {
		return p.Error()
	}
	return "error: " + err.Error()
}

func isNotPage(err error) bool {
	var p *latest.Problem
	return errors.As(err, &p) && p.NotPage()
}

// PollWorker runs poll_series jobs.
type PollWorker struct {
	river.WorkerDefaults[PollArgs]
	Poller *Poller
	// JobTimeout bounds one poll, pacing waits and a browser read included;
	// 0 means 3 minutes.
	JobTimeout time.Duration
}

// Work implements river.Worker.
func (w *PollWorker) Work(ctx context.Context, job *river.Job[PollArgs]) error {
	return w.Poller.Poll(ctx, job.Args.Key, job.ScheduledAt)
}

// Timeout implements river.Worker.
func (w *PollWorker) Timeout(*river.Job[PollArgs]) time.Duration {
	if w.JobTimeout > 0 {
		return w.JobTimeout
	}
	return 3 * time.Minute
}

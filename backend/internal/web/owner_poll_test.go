package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
	"github.com/lectern-reader/lectern/backend/internal/web"
)

// The Owner console's Poll pages (Sites, failing Series, queue) and the
// Poll's facts on the Series page, over the real router, a real Postgres
// and the real River client (insert-only: WORKERS is 0 in these tests, so
// the jobs an action queues stay for the test to read).

const evil = `<img src=x onerror=alert(1)>`

func (b *testBundle) exec(sql string, args ...any) {
	b.T.Helper()
	_, err := b.Store.Pool.Exec(context.Background(), sql, args...)
	require.NoError(b.T, err)
}

func (b *testBundle) str(sql string, args ...any) string {
	b.T.Helper()
	var s string
	require.NoError(b.T, b.Store.Pool.QueryRow(context.Background(), sql, args...).Scan(&s))
	return s
}

// failing makes a Series' last polls fail with a hostile problem, as a
// compromised page might make the Poll name it.
func (b *testBundle) failing(key string) {
	b.exec(`UPDATE series SET poll_failures = 3, poll_status = 'problem', poll_problem = $2, poll_body_len = 1234,
		last_poll_at = now() - interval '5 minutes', next_poll_at = now() + interval '55 minutes', next_poll_reason = 'not enough history'
		WHERE key = $1`, key, "not_series_page: "+evil)
}

func TestOwnerPollPagesAreTheOwners(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.Reader("olive", true)
	ann := b.Reader("ann", false)
	b.bookmark(ann.ID, soloURL, "Solo Leveling", "Chapter 3", "")
	b.bookmark(owner.ID, omniURL, "Omniscient Reader", "Chapter 1", "")
	b.setTitle(soloKey, evil)
	b.failing(soloKey)
	b.exec(`INSERT INTO site_state (site, paused_until, refusals, last_problem, last_problem_at)
		VALUES ('asura', now() + interval '2 hours', 2, $1, now())`, "challenge: 403 "+evil)
	b.exec(`UPDATE river_job SET state = 'discarded', attempt = 3, finalized_at = now(),
		errors = ARRAY[jsonb_build_object('at', now(), 'attempt', 3, 'error', $2::text)] WHERE args->>'key' = $1`, soloKey, "fetch: "+evil)

	oc, ac, anon := b.Browser(), b.Browser(), b.Browser()
	oc.SignIn("olive", password)
	ac.SignIn("ann", password)
	for _, tc := range []struct{ path, sel string }{
		{"/owner/sites", `[data-testid="site-row"][data-site="asura"]`},
		{"/owner/failing", `[data-testid="failing-row"]`},
		{"/owner/queue", `[data-testid="queue-row"][data-kind="poll_series"]`},
		{"/owner/queue?state=discarded", `[data-testid="job-row"]`},
	} {
		r := oc.Get(tc.path)
		require.Equal(t, http.StatusOK, r.Code, "%s: %s", tc.path, r.Body)
		requireSecurityHeaders(t, r.Header, tc.path)
		require.Equal(t, 1, r.Doc.Find(tc.sel).Length(), "%s lacks %s", tc.path, tc.sel)
		require.Equal(t, 1, r.Doc.Find(`nav[aria-label="Owner console"] a[aria-current="page"]`).Length(), tc.path)
		require.NotContains(t, r.Body, "<img src=x", tc.path)
		require.Zero(t, r.Doc.Find(`img[src="x"]`).Length(), tc.path)
		require.Contains(t, r.Body, "&lt;img src=x onerror=alert(1)&gt;", "%s shows the hostile text as text", tc.path)

		r = ac.Get(tc.path)
		require.Equal(t, http.StatusForbidden, r.Code, "a Reader: %s", tc.path)
		require.Contains(t, text(r, `[data-testid="error-message"]`), "Only the Owner")
		r = anon.Get(tc.path)
		require.Equal(t, http.StatusSeeOther, r.Code, tc.path)
		require.True(t, strings.HasPrefix(r.Location(), "/login?next="), r.Location())
	}

	// Sites: the back-off, the budget from the pace, what waits, why.
	r := oc.Get("/owner/sites")
	row := r.Doc.Find(`[data-testid="site-row"][data-site="asura"]`)
	require.Contains(t, strings.Join(strings.Fields(row.Find(`[data-testid="site-state"]`).Text()), " "), "backing off until")
	require.Contains(t, row.Find(`[data-testid="site-state"]`).Text(), "2 refusals")
	require.Equal(t, "challenge: 403 "+evil, row.Find(`[data-testid="site-problem"]`).Text())
	asura, _ := latest.Default().Lookup("asura")
	require.Equal(t, fmt.Sprintf("%d/h pace %s", time.Hour/asura.Pace, asura.Pace), strings.Join(strings.Fields(row.Find(`[data-testid="site-budget"]`).Text()), " "),
		"the budget follows the pace")
	require.Equal(t, "1", row.Find(`[data-testid="site-queued"]`).Text(), "omni's Acquisition waits")
	require.Equal(t, 1, row.Find(`[data-testid="resume"]`).Length())
	require.Zero(t, r.Doc.Find(`[data-site="demonic"] [data-testid="resume"]`).Length(), "nothing to resume")
	// A Site with a listing shows its state and why it is not used (this
	// server's configuration leaves POLL_LISTINGS off); one without shows
	// none.
	listing := r.Doc.Find(`[data-site="royalroad"] [data-testid="site-listing"]`)
	require.Equal(t, 1, listing.Length())
	require.Equal(t, poll.ListingOff, listing.AttrOr("data-listing", ""))
	require.Contains(t, listing.Text(), "POLL_LISTINGS is off")
	require.Equal(t, 1, r.Doc.Find(`[data-testid="site-row"][data-site="webtoons"]`).Length())
	require.Zero(t, r.Doc.Find(`[data-site="webtoons"] [data-testid="site-listing"]`).Length())
	require.Contains(t, text(r, `[data-testid="policy"]`), "adaptive")

	// Failing: the problem, the body length, the next poll and why.
	r = oc.Get("/owner/failing")
	row = r.Doc.Find(`[data-testid="failing-row"]`)
	require.Equal(t, soloKey, row.AttrOr("data-key", ""))
	require.Equal(t, evil, row.Find(`[data-testid="failing-title"]`).Text())
	require.Equal(t, "not_series_page: "+evil, row.Find(`[data-testid="failing-problem"]`).Text())
	require.Equal(t, "1,234 bytes", strings.TrimSpace(row.Find(`[data-testid="failing-body"]`).Text()))
	require.Regexp(t, `^in 5\d min · not enough history$`, strings.Join(strings.Fields(row.Find(`[data-testid="failing-next"]`).Text()), " "))

	// Queue: counts by kind and state, the failed job with its error.
	r = oc.Get("/owner/queue")
	counts := r.Doc.Find(`[data-testid="queue-row"][data-kind="poll_series"]`)
	require.Equal(t, "1", counts.Find(`[data-state="discarded"]`).Text())
	require.Equal(t, "1", counts.Find(`[data-state="available"]`).Text(), "omni's Acquisition")
	require.Equal(t, "fetch: "+evil, r.Doc.Find(`[data-testid="job-error"]`).Text())
	require.Equal(t, 1, r.Doc.Find(`[data-testid="job-row"] [data-testid="retry"]`).Length())
	require.Zero(t, r.Doc.Find(`[data-testid="job-row"] [data-testid="cancel"]`).Length(), "a discarded job is finished: retry only")
	r = oc.Get("/owner/queue?state=cancelled")
	require.Equal(t, 1, r.Doc.Find(`[data-testid="no-jobs"]`).Length())
}

func TestOwnerPollActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.Reader("olive", true)
	b.Reader("ann", false)
	b.bookmark(owner.ID, soloURL, "Solo Leveling", "Chapter 3", "")
	b.failing(soloKey)
	b.exec(`DELETE FROM river_job`) // the Acquisition ran
	b.exec(`INSERT INTO site_state (site, paused_until, refusals, last_problem) VALUES ('asura', now() + interval '1 hour', 1, 'http_429')`)
	oc, ac := b.Browser(), b.Browser()
	oc.SignIn("olive", password)
	ac.SignIn("ann", password)
	enc := url.PathEscape(soloKey)

	// Without the session's CSRF token, or as a Reader, nothing happens.
	readerToken := apptest.CSRF(t, ac.Get("/settings"))
	actions := []string{"/owner/sites/asura/resume", "/owner/series/" + enc + "/poll", "/owner/series/" + enc + "/cover/refetch",
		"/owner/jobs/1/retry", "/owner/jobs/1/cancel"}
	for _, path := range actions {
		r := oc.Post(path, url.Values{})
		require.Equal(t, http.StatusForbidden, r.Code, "no CSRF token: %s", path)
		require.Equal(t, 1, r.Doc.Find(`[data-testid="error-page"]`).Length(), path)
		r = ac.Post(path, url.Values{"csrf": {readerToken}})
		require.Equal(t, http.StatusForbidden, r.Code, "a Reader: %s", path)
	}
	require.Zero(t, b.Count(`SELECT count(*) FROM river_job`), "no refused form queued anything")
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM site_state WHERE paused_until > now()`))

	// Poll now, from the failing Series page: queued at once, said so.
	r := oc.PostForm("/owner/failing", "/owner/series/"+enc+"/poll", url.Values{"back": {"/owner/failing"}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/owner/failing?msg=poll-queued", r.Location())
	require.Equal(t, "Poll queued: it runs now.", text(oc.Get(r.Location()), `[data-testid="flash"]`))
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1 AND priority = $2 AND state = 'available'`,
		soloKey, poll.PriorityOwner))
	require.Equal(t, schedule.ReasonOwner, b.str(`SELECT next_poll_reason FROM series WHERE key = $1`, soloKey))

	// Refetch the Cover, from the Series page: back there.
	r = oc.PostForm("/series/"+soloKey, "/owner/series/"+enc+"/cover/refetch", url.Values{"back": {"/series/" + enc}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/series/"+enc+"?msg=cover-queued", r.Location())
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM series WHERE key = $1 AND cover_refetch_at IS NOT NULL`, soloKey))
	// A back elsewhere is not followed.
	r = oc.PostForm("/owner/failing", "/owner/series/"+enc+"/poll", url.Values{"back": {"https://evil.example/"}})
	require.Equal(t, "/owner/failing?msg=poll-queued", r.Location())

	require.Equal(t, http.StatusNotFound, oc.PostForm("/owner/failing", "/owner/series/asura:nobody/poll", nil).Code)
	require.Equal(t, http.StatusBadRequest, oc.PostForm("/owner/failing", "/owner/series/nobody/poll", nil).Code)

	// Resume: the back-off ends and the plan is asked to run.
	r = oc.PostForm("/owner/sites", "/owner/sites/asura/resume", nil)
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/owner/sites?msg=site-resumed", r.Location())
	require.Zero(t, b.Count(`SELECT count(*) FROM site_state WHERE paused_until > now()`))
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM river_job WHERE kind = 'plan_polls'`))
	require.Equal(t, http.StatusNotFound, oc.PostForm("/owner/sites", "/owner/sites/tapas/resume", nil).Code)

	// Retry and cancel through River: a discarded job runs again, a
	// retrying one is cancelled.
	id := func(state string) int64 {
		var id int64
		require.NoError(t, b.Store.Pool.QueryRow(context.Background(),
			`SELECT id FROM river_job WHERE kind = 'poll_series' ORDER BY id LIMIT 1`).Scan(&id))
		b.exec(`UPDATE river_job SET state = $2::text::river_job_state, attempt = 3, finalized_at = CASE WHEN $2::text = 'discarded' THEN now() END,
			scheduled_at = now() + interval '1 hour' WHERE id = $1`, id, state)
		return id
	}
	j := id("discarded")
	r = oc.PostForm("/owner/queue", fmt.Sprintf("/owner/jobs/%d/retry", j), url.Values{"back": {"/owner/queue?state=discarded"}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/owner/queue?msg=job-retried&state=discarded", r.Location())
	require.Equal(t, "available", b.str(`SELECT state::text FROM river_job WHERE id = $1`, j))
	j = id("retryable")
	page := oc.Get("/owner/queue")
	require.Equal(t, 1, page.Doc.Find(fmt.Sprintf(`[data-testid="job-row"][data-id="%d"] [data-testid="cancel"]`, j)).Length(), "a waiting retry can be cancelled")
	r = oc.Post(fmt.Sprintf("/owner/jobs/%d/cancel", j), url.Values{"csrf": {apptest.CSRF(t, page)}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "cancelled", b.str(`SELECT state::text FROM river_job WHERE id = $1`, j))
	require.Equal(t, http.StatusNotFound, oc.PostForm("/owner/queue", "/owner/jobs/999999/retry", nil).Code)
	require.Equal(t, http.StatusNotFound, oc.PostForm("/owner/queue", "/owner/jobs/-4/cancel", nil).Code)
}

// The Series page says how the Series is polled: the last poll and its
// problem with the body length, the next poll and its reason, the rhythm,
// and the Latest Chapter history, newest first.
func TestSeriesPageShowsThePoll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.Reader("olive", true)
	ann := b.Reader("ann", false)
	b.bookmark(ann.ID, soloURL, "Solo Leveling", "Chapter 3", "")
	b.bookmark(owner.ID, soloURL, "Solo Leveling", "Chapter 3", "")
	b.exec(`DELETE FROM river_job`) // the Acquisition ran

	now := time.Now().UTC().Truncate(time.Minute)
	created := now.Add(-10 * 7 * 24 * time.Hour)
	// The last poll is timed from the clock, not from now (a whole minute):
	// the page's "min ago" counts from when it renders.
	lastPoll := time.Now().Add(-20 * time.Minute).Truncate(time.Microsecond) // as stored
	b.exec(`UPDATE series SET created_at = $2, last_poll_at = $3, last_success_at = $3, poll_status = 'ok', poll_ms = 412 WHERE key = $1`,
		soloKey, created, lastPoll)
	b.exec(`INSERT INTO latest_chapter_history (series_key, label, url, first_seen_at) VALUES ($1, 'Chapter 100', $2, $3)`,
		soloKey, asuraChapter(soloURL, 100), created)
	// Releases every week at the same hour, the newest first seen an hour
	// and a half ago, one labelled as a hostile page might.
	for w := 8; w >= 0; w-- {
		seen := now.Add(-90*time.Minute - time.Duration(w)*7*24*time.Hour)
		label := fmt.Sprintf("Chapter %d", 109-w)
		if w == 0 {
			label = evil
		}
		b.exec(`INSERT INTO latest_chapter_history (series_key, label, url, first_seen_at, prev_poll_at) VALUES ($1, $2, $3, $4, $5)`,
			soloKey, label, asuraChapter(soloURL, 109-w), seen, seen.Add(-20*time.Minute))
	}
	budgets, err := poll.NewBudgets(latest.Default(), nil, fetch.Paces{})
	require.NoError(t, err)
	plan := &poll.Adaptive{Store: b.Store, Registry: latest.Default(), Planner: schedule.Planner{Interval: time.Hour}, Budgets: budgets}
	_, err = plan.Run(context.Background(), b.Server.River())
	require.NoError(t, err)
	reason := b.str(`SELECT next_poll_reason FROM series WHERE key = $1`, soloKey)
	require.NotEmpty(t, reason)

	ac, oc := b.Browser(), b.Browser()
	ac.SignIn("ann", password)
	oc.SignIn("olive", password)
	asked := time.Now()
	r := ac.Get("/series/" + soloKey)
	answered := time.Now()
	require.Equal(t, http.StatusOK, r.Code, r.Body)
	require.Equal(t, reason, text(r, `[data-testid="next-reason"]`), "the stored reason, on the page")
	require.Regexp(t, `^(in \d+ (min|h)|now) · `+reason+`$`, text(r, `[data-testid="next-poll"]`))
	// The page rendered between asked and answered ("20 min ago", or 21 if
	// a minute turned meanwhile).
	require.Contains(t, []string{web.Ago(asked, lastPoll) + " · ok in 412 ms", web.Ago(answered, lastPoll) + " · ok in 412 ms"},
		text(r, `[data-testid="last-poll"]`))
	wantRhythm := "weekly, " + now.Add(-100*time.Minute).Weekday().String() + "s ~" + now.Add(-100*time.Minute).Format("15:04") + " UTC"
	require.Equal(t, wantRhythm, text(r, `[data-testid="rhythm"]`))
	rows := texts(r, `[data-testid="history-row"] td:first-child`)
	require.Len(t, rows, 10)
	require.Equal(t, evil, rows[0], "newest first, hostile text as text")
	require.Equal(t, "Chapter 108", rows[1])
	require.Equal(t, "Chapter 100", rows[9])
	require.Contains(t, texts(r, `[data-testid="history-row"] td:last-child`)[9], "first found")
	require.NotContains(t, r.Body, "<img src=x")
	require.Contains(t, text(r, `[data-testid="readers"]`), "2 Readers hold this Series")
	require.Zero(t, r.Doc.Find(`[data-testid="poll-now"]`).Length(), "a Reader has no Owner controls")
	require.Zero(t, r.Doc.Find(`[data-testid="last-problem"]`).Length(), "no problem, no line")

	// A problem with its body length; the Owner's controls.
	b.failing(soloKey)
	r = oc.Get("/series/" + soloKey)
	require.Equal(t, "not_series_page: "+evil+" · body 1,234 bytes · 3 failed in a row", text(r, `[data-testid="last-problem"]`))
	require.Equal(t, "not enough history", text(r, `[data-testid="next-reason"]`))
	require.Equal(t, 1, r.Doc.Find(`[data-testid="owner-actions"] [data-testid="poll-now"]`).Length())
	require.Equal(t, "/owner/series/"+url.PathEscape(soloKey)+"/poll", r.Doc.Find(`[data-testid="poll-now"]`).AttrOr("formaction", ""))

	// Just polled under the adaptive policy: the next poll is being planned.
	b.exec(`UPDATE series SET next_poll_at = NULL, next_poll_reason = '' WHERE key = $1`, soloKey)
	require.Equal(t, "being planned", text(ac.Get("/series/"+soloKey), `[data-testid="next-poll"]`))
}

// The Owner console's controls of the Sites: each a CSRF-protected form
// through the same controls as the API. Pause a Site and all background
// work and resume them, change a Site's pace and budget; bad values are
// refused naming the mistake, and the page shows each Site's real state.
func TestOwnerSiteControlsFromTheConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Reader("olive", true)
	oc := b.Browser()
	oc.SignIn("olive", password)
	sites := func() apptest.Page {
		t.Helper()
		p := oc.Get("/owner/sites")
		require.Equal(t, http.StatusOK, p.Code, p.Body)
		return p
	}
	state := func(site string) string {
		t.Helper()
		return sites().Doc.Find(`[data-testid="site-row"][data-site="`+site+`"]`).AttrOr("data-state", "")
	}
	require.Equal(t, "healthy", state("demonic"))
	p := sites()
	require.Equal(t, 1, p.Doc.Find(`[data-site="demonic"] [data-testid="pause"]`).Length())
	require.Zero(t, p.Doc.Find(`[data-site="demonic"] [data-testid="resume"]`).Length(), "nothing to resume")
	require.Equal(t, 1, p.Doc.Find(`[data-testid="pause-all"]`).Length())

	// Pause: the Site shows as paused by the Owner, with a Resume.
	r := oc.PostForm("/owner/sites", "/owner/sites/demonic/pause", nil)
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/owner/sites?msg=site-paused", r.Location())
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM site_settings WHERE site = 'demonic' AND paused`))
	p = oc.Get(r.Location())
	require.Contains(t, text(p, `[data-testid="flash"]`), "Site paused")
	require.Equal(t, "paused", p.Doc.Find(`[data-site="demonic"]`).AttrOr("data-state", ""))
	require.Contains(t, text(p, `[data-site="demonic"] [data-testid="site-state"]`), "paused by the Owner")
	require.Equal(t, 1, p.Doc.Find(`[data-site="demonic"] [data-testid="resume"]`).Length())
	require.Zero(t, p.Doc.Find(`[data-site="demonic"] [data-testid="pause"]`).Length())
	require.Equal(t, "healthy", state("asura"), "the other Sites go on")

	// Pace and budget: a duration and a number, blank leaves one alone.
	r = oc.PostForm("/owner/sites", "/owner/sites/asura/settings", url.Values{"pace": {"2.5s"}, "budget": {"90"}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "/owner/sites?msg=site-changed", r.Location())
	require.Equal(t, "90/h set by the Owner", text(sites(), `[data-site="asura"] [data-testid="site-budget"]`))
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM site_settings WHERE site = 'asura' AND pace_ms = 2500 AND budget_per_hour = 90`))
	r = oc.PostForm("/owner/sites", "/owner/sites/asura/settings", url.Values{"pace": {""}, "budget": {"default"}})
	require.Equal(t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(t, "1440/h pace 2.5s", text(sites(), `[data-site="asura"] [data-testid="site-budget"]`), "the budget follows the Owner's pace")
	for _, tc := range []struct{ pace, budget, msg string }{
		{"soon", "", "The pace \"soon\" is not a duration"},
		{"", "0", "The budget must be from 1 to 3600000 polls per hour, not 0"},
		{"25h", "", "The pace must be from 0 to 24h0m0s"},
		{"", "", "Nothing to change"},
	} {
		r = oc.PostForm("/owner/sites", "/owner/sites/asura/settings", url.Values{"pace": {tc.pace}, "budget": {tc.budget}})
		require.Equal(t, http.StatusUnprocessableEntity, r.Code, "%+v: %s", tc, r.Body)
		require.Contains(t, text(r, `[data-testid="error-message"]`), tc.msg)
	}
	require.Equal(t, http.StatusNotFound, oc.PostForm("/owner/sites", "/owner/sites/tapas/settings", url.Values{"pace": {"1s"}}).Code)
	require.Equal(t, http.StatusNotFound, oc.PostForm("/owner/sites", "/owner/sites/tapas/pause", nil).Code)

	// All background work: paused and resumed; demonic's own pause stays.
	r = oc.PostForm("/owner/sites", "/owner/pause", nil)
	require.Equal(t, "/owner/sites?msg=all-paused", r.Location())
	p = sites()
	require.Equal(t, 1, p.Doc.Find(`[data-testid="resume-all"]`).Length())
	require.Equal(t, "paused", p.Doc.Find(`[data-site="asura"]`).AttrOr("data-state", ""))
	require.Contains(t, text(p, `[data-site="asura"] [data-testid="site-state"]`), "all background work is paused")
	r = oc.PostForm("/owner/sites", "/owner/resume", nil)
	require.Equal(t, "/owner/sites?msg=all-resumed", r.Location())
	require.Equal(t, "healthy", state("asura"))
	require.Equal(t, "paused", state("demonic"))

	r = oc.PostForm("/owner/sites", "/owner/sites/demonic/resume", nil)
	require.Equal(t, "/owner/sites?msg=site-resumed", r.Location())
	require.Equal(t, "healthy", state("demonic"))
}

// The Sites tab's last problem is what went wrong last: a back-off an hour
// ago gives way to the polls failing since, and a Site with only failing
// polls shows their problem, never "none".
func TestSitesTabShowsTheNewestProblem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.Reader("olive", true)
	b.bookmark(owner.ID, soloURL, "Solo Leveling", "Chapter 3", "")
	b.failing(soloKey)
	oc := b.Browser()
	oc.SignIn("olive", password)
	problem := func() string {
		r := oc.Get("/owner/sites")
		require.Equal(t, http.StatusOK, r.Code)
		return r.Doc.Find(`[data-testid="site-row"][data-site="asura"] [data-testid="site-problem"]`).Text()
	}
	require.Equal(t, "not_series_page: "+evil, problem(), "no back-off: the failing polls' problem")
	b.exec(`INSERT INTO site_state (site, paused_until, refusals, last_problem, last_problem_at)
		VALUES ('asura', now() - interval '50 minutes', 1, 'challenge: 403', now() - interval '1 hour')`)
	require.Equal(t, "not_series_page: "+evil, problem(), "the polls failed after the old back-off")
}

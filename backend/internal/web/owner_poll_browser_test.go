package web_test

import (
	"context"
	"fmt"
	"image/color"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
)

// The Owner console's Poll pages in real headless Chromium: Sites with a
// backed-off Site resumed by its button, the failing Series with "poll
// now", the queue with a failed job retried, and the Series page's poll
// facts; each page screenshotted at 1280 px and 390 px, with no CSP
// violation and no sideways scroll on the phone.
func TestBrowserOwnerPollConsole(t *testing.T) {
	b := setup(t)
	owner := b.Reader("olive", true)
	ann := b.Reader("ann", false)
	ctx := context.Background()

	now := time.Now().UTC().Truncate(time.Minute)
	seeds := []struct{ url, title string }{
		{soloURL, "Solo Leveling"},
		{omniURL, "Omniscient Reader"},
		{lockURL, "Blue Lock"},
		{"https://asurascans.com/comics/nano-machine-5e6f7a8b", "Nano Machine"},
		{slaveURL, "Shadow Slave"},
	}
	for _, s := range seeds {
		b.bookmark(owner.ID, s.url, s.title, "Chapter 1", "")
		b.bookmark(ann.ID, s.url, s.title, "Chapter 1", "")
	}
	b.storeCover(soloKey, coverPNG(t, color.RGBA{40, 60, 140, 255}, color.RGBA{180, 80, 200, 255}))
	b.exec(`DELETE FROM river_job`) // the Acquisitions ran
	for _, s := range seeds {
		ref, err := latest.Default().Resolve(s.url)
		require.NoError(t, err)
		b.setTitle(ref.Key, s.title)
	}
	// The Acquisitions found the Latest Chapters the Readers are on: no
	// Reader hint waits.
	b.exec(`UPDATE series SET hint_at = NULL, latest_label = 'Chapter 1', latest_at = now() - interval '3 days'`)

	// Solo Leveling: nine weeks of releases at this hour of this weekday.
	created := now.Add(-10 * 7 * 24 * time.Hour)
	b.exec(`UPDATE series SET created_at = $2, last_poll_at = $3, last_success_at = $3, poll_status = 'ok', poll_ms = 380 WHERE key = $1`,
		soloKey, created, now.Add(-12*time.Minute))
	b.exec(`INSERT INTO latest_chapter_history (series_key, label, url, first_seen_at) VALUES ($1, 'Chapter 170', $2, $3)`,
		soloKey, asuraChapter(soloURL, 170), created)
	for w := 8; w >= 0; w-- {
		seen := now.Add(-time.Duration(w)*7*24*time.Hour - 3*time.Hour)
		b.exec(`INSERT INTO latest_chapter_history (series_key, label, url, first_seen_at, prev_poll_at) VALUES ($1, $2, $3, $4, $5)`,
			soloKey, fmt.Sprintf("Chapter %d", 179-w), asuraChapter(soloURL, 179-w), seen, seen.Add(-15*time.Minute))
	}
	b.setLatest(soloKey, "Chapter 179", 179, asuraChapter(soloURL, 179), now.Add(-3*time.Hour))
	for _, key := range []string{omniKey, lockKey, "asura:nano-machine", slaveKey} {
		b.exec(`UPDATE series SET created_at = $2, last_poll_at = $3, last_success_at = $3, poll_status = 'ok' WHERE key = $1`,
			key, now.Add(-3*24*time.Hour), now.Add(-25*time.Minute))
	}
	budgets, err := poll.NewBudgets(latest.Default(), nil, fetch.Paces{})
	require.NoError(t, err)
	plan := &poll.Adaptive{Store: b.Store, Registry: latest.Default(), Planner: schedule.Planner{Interval: time.Hour}, Budgets: budgets}
	_, err = plan.Run(ctx, b.Server.River())
	require.NoError(t, err)

	// Blue Lock's page changed under us; demonic challenges us; a Cover
	// job gave up.
	b.exec(`UPDATE series SET poll_failures = 2, poll_status = 'problem', poll_problem = 'not_series_page: no chapter list (title "Just a moment...")',
		poll_body_len = 8642, cover_problem = 'http_404: cover gone' WHERE key = $1`, lockKey)
	b.exec(`INSERT INTO site_state (site, paused_until, refusals, last_problem, last_problem_at, last_success_at)
		VALUES ('demonic', now() + interval '2 hours', 3, 'challenge: 403 the challenge did not clear', now() - interval '3 minutes', now() - interval '4 hours')
		ON CONFLICT (site) DO UPDATE SET paused_until = excluded.paused_until, refusals = excluded.refusals,
			last_problem = excluded.last_problem, last_problem_at = excluded.last_problem_at, last_success_at = excluded.last_success_at`)
	b.exec(`INSERT INTO site_state (site, last_success_at) VALUES ('asura', now() - interval '2 minutes')
		ON CONFLICT (site) DO UPDATE SET last_success_at = excluded.last_success_at`)
	_, err = b.Server.River().Insert(ctx, poll.PollArgs{Key: "asura:nano-machine", Reason: "reader hint"}, nil)
	require.NoError(t, err)
	b.exec(`UPDATE river_job SET state = 'discarded', attempt = 3, finalized_at = now() - interval '20 minutes',
		errors = ARRAY[jsonb_build_object('at', now(), 'attempt', 3, 'error', 'poll asura:nano-machine: fetch: read tcp: connection reset by peer')]
		WHERE args->>'key' = 'asura:nano-machine'`)

	browser := startBrowser(t)
	tab := newTab(t, browser, b.URL)
	require.EqualValues(t, 200, tab.open("/login"))
	tab.fill("#name", "olive")
	tab.fill("#password", password)
	require.EqualValues(t, 200, tab.click(`[data-testid="login-form"] button[type="submit"]`))

	// Sites: demonic backs off; Resume lifts it.
	require.EqualValues(t, 200, tab.open("/owner/sites"))
	require.Contains(t, tab.text(`[data-site="demonic"] [data-testid="site-state"]`), "backing off until")
	require.Contains(t, tab.text(`[data-site="asura"] [data-testid="site-state"]`), "healthy")
	tab.shoot("owner-sites")
	require.EqualValues(t, 200, tab.click(`[data-site="demonic"] [data-testid="resume"]`))
	require.Equal(t, "/owner/sites?msg=site-resumed", tab.path())
	require.Equal(t, "Site resumed: its waiting polls run now.", tab.text(`[data-testid="flash"]`))
	// No longer backing off, but Blue Lock, its one polled Series, fails.
	require.Contains(t, tab.text(`[data-site="demonic"] [data-testid="site-state"]`), "failing 1 of the last 1 polls failed")

	// Failing: Blue Lock with its problem and body length; poll it now.
	require.EqualValues(t, 200, tab.click(`nav[aria-label="Owner console"] a[href="/owner/failing"]`))
	require.Equal(t, "8,642 bytes", tab.text(`[data-key="`+lockKey+`"] [data-testid="failing-body"]`))
	tab.shoot("owner-failing")
	require.EqualValues(t, 200, tab.click(`[data-key="`+lockKey+`"] [data-testid="poll-now"]`))
	require.Equal(t, "/owner/failing?msg=poll-queued", tab.path())
	require.Contains(t, tab.text(`[data-key="`+lockKey+`"] [data-testid="failing-next"]`), schedule.ReasonOwner)
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM river_job WHERE args->>'key' = $1 AND state = 'available'`, lockKey))

	// Queue: the counts and the failed job; Retry runs it again.
	require.EqualValues(t, 200, tab.click(`nav[aria-label="Owner console"] a[href="/owner/queue"]`))
	require.Contains(t, tab.text(`[data-testid="job-error"]`), "connection reset by peer")
	tab.shoot("owner-queue")
	require.EqualValues(t, 200, tab.click(`[data-testid="job-row"] [data-testid="retry"]`))
	require.Equal(t, "Job queued to run again.", tab.text(`[data-testid="flash"]`))
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM river_job WHERE args->>'key' = 'asura:nano-machine' AND state = 'available'`))

	// The Series page: poll facts, rhythm, history.
	require.EqualValues(t, 200, tab.open("/series/"+url.PathEscape(soloKey)))
	require.True(t, strings.HasPrefix(tab.text(`[data-testid="rhythm"]`), "weekly, "), tab.text(`[data-testid="rhythm"]`))
	require.NotEmpty(t, tab.text(`[data-testid="next-reason"]`))
	require.Equal(t, 10, eval[int](tab, `document.querySelectorAll('[data-testid="history-row"]').length`))
	tab.waitFor(`document.querySelector('.cover.large img')?.naturalWidth === 160`)
	tab.shoot("series-poll")
}

package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// The Owner's run-time control of the Sites, through the composed server:
// its workers on a real Postgres and River, the fixture Sites on the fake
// network, and what reached that network as the proof.

// demonicHosts are the hosts demonic's Series reach: its own, and the CDN
// its Cover and page images are on.
var demonicHosts = []string{"demonicscans.org", "www.demonicscans.org", "readermc.org", "cdn.demoniclibs.com"}

func reached(n *fakenet.Net, hosts []string) int {
	count := 0
	for _, r := range n.Requests() {
		for _, h := range hosts {
			if strings.EqualFold(r.Host, h) {
				count++
			}
		}
	}
	return count
}

// controlRig is a deployment with workers and the fixture Sites, an Owner,
// and Ann, who may archive.
type controlRig struct {
	*apptest.App
	owner, ann string
}

func newControlRig(t *testing.T) *controlRig {
	t.Helper()
	app := apptest.New(t, apptest.Options{PublicBaseURL: testBase, Workers: 4, Sites: &fixturesites.Options{},
		Config: func(c *config.Config) { c.SitePace = "demonic=0,asura=0" }})
	r := &controlRig{App: app, owner: app.Token("olive", true)}
	ann := app.Reader("ann", false)
	require.NoError(t, app.Store.SetArchiveReader(context.Background(), ann.ID, true, nil))
	r.ann = app.NewToken(ann)
	return r
}

func (r *controlRig) ok(method, path, token string, body any) apptest.Response {
	r.T.Helper()
	resp := r.Do(method, path, token, body)
	require.Less(r.T, resp.Code, 300, "%s %s: %s", method, path, resp.Body)
	return resp
}

func (r *controlRig) hold(seriesURL string) string {
	r.T.Helper()
	ref := mustResolve(r.T, seriesURL)
	r.ok("PUT", "/api/bookmarks/"+url.PathEscape(ref.Key), r.ann, putBody(ref.Site, ref.SeriesURL, "Chapter 1"))
	return ref.Key
}

// snoozed reports whether a job of kind about key waits, snoozed at least
// once, with no attempt spent.
func (r *controlRig) snoozed(kind, key string) bool {
	return r.Count(`SELECT count(*) FROM river_job WHERE kind = $1 AND coalesce(args->>'key', args->>'series') = $2
		AND state IN ('scheduled', 'available') AND scheduled_at > now() AND (metadata->>'snoozes')::int >= 1 AND attempt = 0`, kind, key) == 1
}

// A paused Site gets no request of any kind (its poll, its Cover, its
// archive) while the other Sites go on; its work waits with its attempts,
// and the Owner's resume runs it at once.
func TestAPausedSiteGetsNoRequestUntilResumed(t *testing.T) {
	t.Parallel()
	r := newControlRig(t)
	ctx := context.Background()
	resp := r.ok("POST", "/api/admin/sites/demonic/pause", r.owner, nil)
	require.JSONEq(t, `{"site": "demonic", "paused": true}`, string(resp.Body))

	demonic := r.hold(fixturesites.DemonicSeries)
	asura := r.hold(fixturesites.AsuraSeries)
	r.ok("POST", "/api/series/"+url.PathEscape(demonic)+"/archive", r.ann, map[string]any{"scope": "latest"})
	require.NoError(t, cover.Queue{Client: r.Server.River()}.QueueCover(ctx, cover.FetchArgs{Key: demonic, Site: "demonic",
		Address: r.Sites.CoverOf(fixturesites.DemonicSeries), SeriesURL: fixturesites.DemonicSeries}))
	for _, n := range []string{"181", "182"} {
		r.Net.Set("https://demonicscans.org/chaptered.php?manga=4812&chapter="+n, http.StatusOK, "text/html; charset=utf-8",
			testenv.SiteFixture(t, "demonic", "chapter.html"))
	}

	apptest.Eventually(t, "asura polled and its Cover stored", func() bool {
		return r.Count(`SELECT count(*) FROM series WHERE key = $1 AND latest_label <> '' AND cover_address <> ''`, asura) == 1
	})
	for _, kind := range []string{"poll_series", "fetch_cover", "archive_series"} {
		apptest.Eventually(t, "demonic's "+kind+" waits", func() bool { return r.snoozed(kind, demonic) })
	}
	require.Zero(t, reached(r.Net, demonicHosts), "nothing reached the paused Site")
	require.NotZero(t, reached(r.Net, []string{"asurascans.com"}), "the other Sites go on")
	st := siteOf(status(t, r.App, r.owner), "demonic")
	require.True(t, st.OwnerPaused)
	require.Equal(t, poll.StatePaused, st.State)
	require.False(t, st.Paused, "paused is the back-off, which this is not")
	require.Equal(t, poll.StateHealthy, siteOf(status(t, r.App, r.owner), "asura").State)

	resp = r.ok("POST", "/api/admin/sites/demonic/resume", r.owner, nil)
	require.JSONEq(t, `{"site": "demonic", "resumed": true}`, string(resp.Body))
	apptest.Eventually(t, "demonic polled, its Cover stored and its latest chapter archived", func() bool {
		return r.Count(`SELECT count(*) FROM series WHERE key = $1 AND latest_label = 'Chapter 182' AND cover_address <> ''`, demonic) == 1 &&
			r.Count(`SELECT count(*) FROM archive_chapters WHERE series_key = $1 AND state = 'archived'`, demonic) == 1
	})
	require.NotZero(t, reached(r.Net, demonicHosts))
	require.False(t, siteOf(status(t, r.App, r.owner), "demonic").OwnerPaused)
}

// The Owner's pause of all background work holds every job, so nothing
// reaches any Site; the resume runs what waited.
func TestPausingAllBackgroundWorkHoldsEveryJob(t *testing.T) {
	t.Parallel()
	r := newControlRig(t)
	resp := r.ok("POST", "/api/admin/pause", r.owner, nil)
	require.JSONEq(t, `{"background_paused": true}`, string(resp.Body))
	asura := r.hold(fixturesites.AsuraSeries)
	apptest.Eventually(t, "the Acquisition waits", func() bool { return r.snoozed("poll_series", asura) })
	require.Empty(t, r.Net.Requests(), "no request reached any Site")
	st := status(t, r.App, r.owner)
	require.True(t, st.BackgroundPaused)
	for _, s := range st.Sites {
		require.Equal(t, poll.StatePaused, s.State, s.Site)
		require.False(t, s.OwnerPaused, "no Site was paused on its own")
	}

	resp = r.ok("POST", "/api/admin/resume", r.owner, nil)
	require.JSONEq(t, `{"background_paused": false}`, string(resp.Body))
	apptest.Eventually(t, "the Acquisition ran", func() bool {
		return r.Count(`SELECT count(*) FROM series WHERE key = $1 AND latest_label <> ''`, asura) == 1
	})
	require.False(t, status(t, r.App, r.owner).BackgroundPaused)
}

// clock is a settable clock shared by replicas.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A change of a Site's pace, budget or pause made through one replica
// applies there at once and on another replica once its copy of the
// settings is older than its TTL (a minute here, on a clock the test
// moves); the settings outlive a restart, and null puts SITE_PACE's and the
// pace's defaults back.
func TestSiteSettingsReachEveryReplica(t *testing.T) {
	t.Parallel()
	now := &clock{t: time.Now()}
	a := apptest.New(t, apptest.Options{PublicBaseURL: testBase,
		Config: func(c *config.Config) { c.SitePace = "asura=3s" },
		Seams:  func(s *server.Seams) { s.SettingsTTL = time.Minute; s.SettingsNow = now.Now }})
	owner := a.Token("olive", true)
	b := a.Replica()
	asura := func(app *apptest.App) api.SiteStatusJSON { return siteOf(status(t, app, owner), "asura") }
	before := asura(b) // b reads the settings now, and keeps them a minute
	require.Equal(t, int64(3000), before.PaceMS)
	require.Equal(t, "SITE_PACE", before.PaceSource)
	require.Equal(t, 1200, before.BudgetPerHour, "what the pace allows")
	require.Equal(t, poll.BudgetByPace, before.BudgetSource)

	resp := a.Do("PUT", "/api/admin/sites/asura", owner, map[string]any{"pace_ms": 5000, "budget_per_hour": 120})
	require.Equal(t, http.StatusOK, resp.Code, "%s", resp.Body)
	require.JSONEq(t, `{"site": "asura", "pace_ms": 5000, "pace_source": "owner", "budget_per_hour": 120, "budget_source": "owner", "owner_paused": false,
		"hosts": ["asurascans.com", "asuracomic.net", "api.asurascans.com"], "family": "", "options": {}}`, string(resp.Body))
	require.Equal(t, int64(5000), asura(a).PaceMS, "at once on the replica that made it")
	require.Equal(t, before, asura(b), "b's copy is younger than its TTL")
	now.Add(time.Minute + time.Second)
	got := asura(b)
	require.Equal(t, int64(5000), got.PaceMS)
	require.Equal(t, 120, got.BudgetPerHour)
	require.Equal(t, "owner", got.PaceSource)

	a.Do("POST", "/api/admin/sites/asura/pause", owner, nil)
	require.False(t, asura(b).OwnerPaused)
	now.Add(time.Minute + time.Second)
	require.True(t, asura(b).OwnerPaused)
	require.Equal(t, poll.StatePaused, asura(b).State)

	restarted := a.Replica()
	got = asura(restarted)
	require.True(t, got.OwnerPaused, "the settings live in Postgres")
	require.Equal(t, int64(5000), got.PaceMS)
	require.Equal(t, 120, got.BudgetPerHour)

	resp = a.Do("PUT", "/api/admin/sites/asura", owner, map[string]any{"pace_ms": nil})
	require.Equal(t, http.StatusOK, resp.Code, "%s", resp.Body)
	require.JSONEq(t, `{"site": "asura", "pace_ms": 3000, "pace_source": "SITE_PACE", "budget_per_hour": 120, "budget_source": "owner", "owner_paused": true,
		"hosts": ["asurascans.com", "asuracomic.net", "api.asurascans.com"], "family": "", "options": {}}`, string(resp.Body), "null puts the pace back to SITE_PACE; the budget stays")
	resp = a.Do("PUT", "/api/admin/sites/asura", owner, map[string]any{"budget_per_hour": nil})
	require.Equal(t, http.StatusOK, resp.Code, "%s", resp.Body)
	require.Contains(t, string(resp.Body), `"budget_per_hour":1200,"budget_source":"pace"`)
}

// The Sites' controls answer bad input with a 4xx naming the mistake.
func TestSiteControlsRefuseBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.Token("olive", true)
	for _, tc := range []struct {
		method, path string
		body         any
		code         int
		msg          string
	}{
		{"PUT", "/api/admin/sites/tapas", map[string]any{"pace_ms": 1000}, http.StatusNotFound, `no Site "tapas"`},
		{"POST", "/api/admin/sites/tapas/pause", nil, http.StatusNotFound, `unknown site "tapas"`},
		{"POST", "/api/admin/sites/tapas/resume", nil, http.StatusNotFound, `unknown site "tapas"`},
		{"PUT", "/api/admin/sites/asura", map[string]any{}, http.StatusUnprocessableEntity, "nothing to change"},
		{"PUT", "/api/admin/sites/asura", map[string]any{"hosts": []string{"x.example"}}, http.StatusUnprocessableEntity, "asura is a built-in Site: its hosts and options are not the Owner's to change"},
		{"PUT", "/api/admin/sites/asura", map[string]any{"pace_ms": -1}, http.StatusUnprocessableEntity, "pace_ms must be a whole number of milliseconds from 0 to 86400000"},
		{"PUT", "/api/admin/sites/asura", map[string]any{"pace_ms": 1.5}, http.StatusUnprocessableEntity, "pace_ms must be"},
		{"PUT", "/api/admin/sites/asura", map[string]any{"pace_ms": "2s"}, http.StatusUnprocessableEntity, "pace_ms must be"},
		{"PUT", "/api/admin/sites/asura", map[string]any{"pace_ms": 86400001}, http.StatusUnprocessableEntity, "pace_ms must be"},
		{"PUT", "/api/admin/sites/asura", map[string]any{"pace_ms": 1000, "budget_per_hour": 0}, http.StatusUnprocessableEntity, "budget_per_hour must be a whole number of polls per hour from 1 to 3600000"},
		{"PUT", "/api/admin/sites/asura", map[string]any{"budget_per_hour": true}, http.StatusUnprocessableEntity, "budget_per_hour must be"},
		{"PUT", "/api/admin/sites/asura", `{"pace_ms": `, http.StatusBadRequest, "malformed JSON"},
		{"PUT", "/api/admin/sites/asura", `[1000]`, http.StatusBadRequest, "malformed JSON"},
	} {
		resp := b.Do(tc.method, tc.path, owner, tc.body)
		require.Equal(t, tc.code, resp.Code, "%s %s %v: %s", tc.method, tc.path, tc.body, resp.Body)
		require.Contains(t, resp.ErrorMsg(t), tc.msg, "%s %s %v", tc.method, tc.path, tc.body)
	}
	require.Zero(t, b.Count(`SELECT count(*) FROM site_settings`), "nothing refused was stored")
}

// Each Site's state in the status, decided once (poll.StateOf) for the API
// and the console: paused by the Owner, backing off, failing (more than
// half of its recent polls failed, with the newest failure), healthy.
func TestSiteStatesInTheStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.Token("olive", true)
	ann := b.Token("ann", false)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := b.Store.Pool.Exec(context.Background(), sql, args...)
		require.NoError(t, err)
	}
	for _, u := range []string{"https://asurascans.com/comics/solo-leveling-1a2b3c4d", "https://asurascans.com/comics/omniscient-reader-9f8e7d6c",
		"https://asurascans.com/comics/nano-machine-77aa88bb", "https://comix.to/title/r8k2m-the-greatest-estate-developer"} {
		ref := mustResolve(t, u)
		resp := b.Do("PUT", "/api/bookmarks/"+url.PathEscape(ref.Key), ann, putBody(ref.Site, ref.SeriesURL, "Chapter 1"))
		require.Equal(t, http.StatusCreated, resp.Code, "%s", resp.Body)
	}
	exec(`UPDATE series SET last_poll_at = now() - interval '1 hour', poll_failures = 0 WHERE site = 'asura'`)
	exec(`UPDATE series SET last_poll_at = now() - interval '5 minutes', poll_failures = 2, poll_problem = 'http_503: older' WHERE key = 'asura:solo-leveling'`)
	exec(`UPDATE series SET last_poll_at = now() - interval '1 minute', poll_failures = 1, poll_problem = 'fetch: the newest' WHERE key = 'asura:omniscient-reader'`)
	exec(`UPDATE series SET last_poll_at = now(), poll_failures = 3, poll_problem = 'http_500' WHERE site = 'comix'`)
	exec(`INSERT INTO site_state (site, paused_until, refusals, last_problem) VALUES ('comix', now() + interval '1 hour', 1, 'http_429: slow down')`)
	require.Equal(t, http.StatusOK, b.Do("POST", "/api/admin/sites/kagane/pause", owner, nil).Code)

	st := status(t, b, owner)
	a := siteOf(st, "asura")
	require.Equal(t, poll.StateFailing, a.State, "2 of its 3 recent polls failed")
	require.Equal(t, 3, a.RecentPolls)
	require.Equal(t, 2, a.RecentFailures)
	require.Equal(t, "fetch: the newest", a.LastFailure)
	require.NotNil(t, a.LastFailureAt)
	require.Equal(t, poll.StateBackingOff, siteOf(st, "comix").State, "a back-off comes before failing")
	require.True(t, siteOf(st, "comix").Paused)
	require.Equal(t, poll.StatePaused, siteOf(st, "kagane").State)
	require.Equal(t, poll.StateHealthy, siteOf(st, "demonic").State, "never polled: nothing failed")

	exec(`UPDATE series SET poll_failures = 0 WHERE key = 'asura:solo-leveling'`)
	require.Equal(t, poll.StateHealthy, siteOf(status(t, b, owner), "asura").State, "1 of 3 is not more than half")
}

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/metrics/metricstest"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// lockedBuffer collects log output written from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &m), s)
		out = append(out, m)
	}
	return out
}

// browserClient is a cookie-keeping client that does not follow redirects.
type browserClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowserClient(t *testing.T, base string) *browserClient {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browserClient{t: t, base: base, c: &http.Client{
		Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type answer struct {
	code int
	hdr  http.Header
	body string
	doc  *goquery.Document
}

func (c *browserClient) do(method, path string, body io.Reader, hdr ...string) answer {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, body)
	require.NoError(c.t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.c.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	a := answer{code: resp.StatusCode, hdr: resp.Header, body: string(b)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		a.doc, err = goquery.NewDocumentFromReader(strings.NewReader(a.body))
		require.NoError(c.t, err)
	}
	return a
}

// form posts fields to path with the CSRF token of the page at from.
func (c *browserClient) form(from, path string, fields url.Values) answer {
	c.t.Helper()
	p := c.do(http.MethodGet, from, nil)
	require.Equal(c.t, http.StatusOK, p.code, "GET %s: %s", from, p.body)
	csrf, ok := p.doc.Find(`input[name="csrf"]`).First().Attr("value")
	require.True(c.t, ok, "no CSRF field on %s", from)
	fields.Set("csrf", csrf)
	return c.do(http.MethodPost, path, strings.NewReader(fields.Encode()), "Content-Type", "application/x-www-form-urlencoded")
}

// Real requests carrying real secrets (a first-run password, a sign-in
// password right and wrong, a new Reader's password, an API token made in
// the web UI, a revoked-looking token) go through the real router with a
// captured logger: none of the secrets is in the log, every request has a
// line with its request ID, and the lines handlers write during a request
// carry the same ID.
func TestLogsCarryRequestIDsAndNoSecrets(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	app := apptest.New(t, apptest.Options{Logger: logger})

	const ownerPassword = "owner-pass-Zq81-never-logged"
	const wrongPassword = "wrong-pass-Kd27-never-logged"
	const readerPassword = "reader-pass-Mx55-never-logged"
	c := newBrowserClient(t, app.URL)

	// First run creates the Owner; the handler logs a line about it.
	a := c.form("/setup", "/setup", url.Values{"name": {"olive"}, "password": {ownerPassword}, "confirm": {ownerPassword}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	setupID := a.hdr.Get("X-Request-Id")
	require.NotEmpty(t, setupID)

	// A wrong and a right sign-in from a second browser.
	c2 := newBrowserClient(t, app.URL)
	a = c2.form("/login", "/login", url.Values{"name": {"olive"}, "password": {wrongPassword}})
	require.Equal(t, http.StatusUnauthorized, a.code)
	a = c2.form("/login", "/login", url.Values{"name": {"olive"}, "password": {ownerPassword}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)

	// The Owner creates a Reader with a password (a handler line again).
	a = c2.form("/owner/readers", "/owner/readers", url.Values{"name": {"ray"}, "password": {readerPassword}})
	require.Equal(t, http.StatusSeeOther, a.code, a.body)
	createdID := a.hdr.Get("X-Request-Id")

	// An API token made in the web UI, shown once in the page.
	a = c2.form("/settings", "/settings/tokens", url.Values{"name": {"laptop"}})
	require.Equal(t, http.StatusOK, a.code, a.body)
	token := strings.TrimSpace(a.doc.Find("#new-token-value").Text())
	require.True(t, strings.HasPrefix(token, credential.TokenPrefix), a.body)

	api := newBrowserClient(t, app.URL)
	bearer := "Bearer " + token
	a = api.do(http.MethodPut, "/api/bookmarks/asura:solo-leveling", strings.NewReader(
		`{"site":"asura","series_url":"https://asuracomic.net/series/solo-leveling","chapter":"Chapter 1"}`),
		"Authorization", bearer, "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, a.code, a.body)
	a = api.do(http.MethodGet, "/api/bookmarks?kind=manga", nil, "Authorization", bearer)
	require.Equal(t, http.StatusOK, a.code, a.body)
	// A key the registry refuses, a malformed body: error paths log too.
	a = api.do(http.MethodPut, "/api/bookmarks/asura:wrong", strings.NewReader(
		`{"site":"asura","series_url":"https://asuracomic.net/series/solo-leveling","chapter":"2"}`),
		"Authorization", bearer, "Content-Type", "application/json")
	require.Equal(t, http.StatusUnprocessableEntity, a.code, a.body)
	a = api.do(http.MethodPut, "/api/bookmarks/asura:solo-leveling", strings.NewReader(`{"chapter":`),
		"Authorization", bearer, "Content-Type", "application/json")
	require.Equal(t, http.StatusBadRequest, a.code)
	// A token that does not exist, in the header and mistakenly in the query.
	const unknownToken = "lec_Tm90QVJlYWxUb2tlbkJ1dEl0TG9va3NMaWtlT25lMTIz"
	a = api.do(http.MethodGet, "/api/bookmarks?token="+unknownToken, nil, "Authorization", "Bearer "+unknownToken)
	require.Equal(t, http.StatusUnauthorized, a.code)

	// A client's own request ID is kept; one that does not belong in a log
	// line is replaced.
	a = api.do(http.MethodGet, "/healthz", nil, "X-Request-Id", "probe-42")
	require.Equal(t, "probe-42", a.hdr.Get("X-Request-Id"))
	a = api.do(http.MethodGet, "/healthz", nil, "X-Request-Id", "evil\"id "+strings.Repeat("x", 100))
	replaced := a.hdr.Get("X-Request-Id")
	require.NotEmpty(t, replaced)
	require.NotContains(t, replaced, "evil")

	out := logs.String()
	for name, secret := range map[string]string{
		"owner password": ownerPassword, "wrong password": wrongPassword, "reader password": readerPassword,
		"API token": token, "unknown token": unknownToken,
	} {
		require.NotContains(t, out, secret, "the %s reached the log", name)
	}
	// Nor a recognisable part of one (a token cut short by a truncation).
	require.NotContains(t, out, token[:24])

	lines := logs.lines(t)
	var requests int
	byID := map[string][]map[string]any{}
	for _, l := range lines {
		id, _ := l["request_id"].(string)
		if l["msg"] == "request" {
			requests++
			require.NotEmpty(t, id, "request line without an ID: %v", l)
			require.NotContains(t, l["path"], "?", "the query is never logged")
			require.NotEmpty(t, l["route"], l)
		}
		if id != "" {
			byID[id] = append(byID[id], l)
		}
	}
	require.GreaterOrEqual(t, requests, 16, "one line per request")
	hasMsg := func(id, msg string) bool {
		for _, l := range byID[id] {
			if l["msg"] == msg {
				return true
			}
		}
		return false
	}
	require.True(t, hasMsg(setupID, "owner created at first run"), "the handler's line carries the request ID: %v", byID[setupID])
	require.True(t, hasMsg(setupID, "request"))
	require.True(t, hasMsg(createdID, "reader created"), "%v", byID[createdID])
	require.True(t, hasMsg("probe-42", "request"))
	require.True(t, hasMsg(replaced, "request"))
	for _, l := range byID["probe-42"] {
		require.Equal(t, "DEBUG", l["level"], "probes are logged at debug")
	}
	// The PUT's line names the route pattern as well as the path.
	var put map[string]any
	for _, l := range lines {
		if l["msg"] == "request" && l["method"] == "PUT" && l["status"] == float64(201) {
			put = l
		}
	}
	require.NotNil(t, put)
	require.Equal(t, "/api/bookmarks/{key}", put["route"])
	require.Equal(t, "/api/bookmarks/asura:solo-leveling", put["path"])
	require.Equal(t, "asura:solo-leveling", put["series"], "a line about a Series names it")
	require.Equal(t, "asura", put["site"])
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// The metrics listener of a running server, scraped after real traffic:
// requests by route pattern (never by raw path) and status, the queue the
// traffic filled, the Site back-off series, and the build. The public
// listener does not serve them.
func TestMetricsEndpointAfterRealTraffic(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	metricsAddr := freeLoopback(t)
	// WORKERS is 0: the Acquisitions the PUTs queue stay in the queue.
	app := apptest.New(t, apptest.Options{PublicBaseURL: base, Version: "v9.9.9-test",
		Config: func(c *config.Config) { c.MetricsAddr = metricsAddr }})
	srv := app.Server
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	token := app.Token("olive", true)
	c := newBrowserClient(t, base)
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond)

	for _, slug := range []string{"solo-leveling", "omniscient-reader", "nano-machine"} {
		a := c.do(http.MethodPut, "/api/bookmarks/asura:"+slug, strings.NewReader(
			`{"site":"asura","series_url":"https://asuracomic.net/series/`+slug+`","chapter":"Chapter 1"}`),
			"Authorization", "Bearer "+token, "Content-Type", "application/json")
		require.Equal(t, http.StatusCreated, a.code, a.body)
	}
	require.Equal(t, http.StatusOK, c.do(http.MethodGet, "/api/bookmarks", nil, "Authorization", "Bearer "+token).code)
	require.Equal(t, http.StatusNotFound, c.do(http.MethodGet, "/api/bookmarks/asura:never", nil, "Authorization", "Bearer "+token).code)
	require.Equal(t, http.StatusNotFound, c.do(http.MethodGet, "/api/no/such/thing", nil, "Authorization", "Bearer "+token).code)
	require.Equal(t, http.StatusNotFound, c.do(http.MethodGet, "/covers/"+strings.Repeat("ab", 32), nil).code)
	require.Equal(t, http.StatusNotFound, c.do(http.MethodGet, "/metrics", nil).code, "metrics are not on the public listener")

	s := metricstest.Get(t, "http://"+metricsAddr+"/metrics")
	req := "lectern_http_requests_total"
	require.Equal(t, 3.0, s.Value(t, req, "route", "/api/bookmarks/{key}", "method", "PUT", "code", "201"))
	require.Equal(t, 1.0, s.Value(t, req, "route", "/api/bookmarks/{key}", "method", "GET", "code", "404"))
	require.Equal(t, 1.0, s.Value(t, req, "route", "/api/bookmarks", "method", "GET", "code", "200"))
	require.Equal(t, 1.0, s.Value(t, req, "route", "/api/*", "method", "GET", "code", "404"))
	require.Equal(t, 1.0, s.Value(t, req, "route", "/covers/{address}", "method", "GET", "code", "404"))
	require.GreaterOrEqual(t, s.Value(t, req, "route", "/readyz", "method", "GET", "code", "200"), 1.0)
	require.Equal(t, 3.0, s.Value(t, "lectern_http_request_duration_seconds", "route", "/api/bookmarks/{key}", "method", "PUT"))
	for _, x := range s.Find(req) {
		require.NotContains(t, x.Labels["route"], "solo-leveling", "a raw path became a label: %s", x)
		require.NotContains(t, x.Labels["route"], "abab", "a raw path became a label: %s", x)
	}

	require.Equal(t, 3.0, s.Value(t, "lectern_queue_jobs", "kind", "poll_series", "state", "available"), "three Acquisitions queued")
	require.Equal(t, 0.0, s.Value(t, "lectern_queue_jobs", "kind", "poll_series", "state", "running"))
	require.Equal(t, 0.0, s.Value(t, "lectern_site_backoff", "site", "asura"))
	require.Len(t, s.Find("lectern_site_backoff"), len(latest.Default().Names()))
	require.Equal(t, 0.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "asura"))
	require.Equal(t, 1.0, s.Value(t, "lectern_database_up"))
	require.Equal(t, 1.0, s.Value(t, "lectern_build_info", "version", "v9.9.9-test"))
	require.NotEmpty(t, s.Find("go_goroutines"))
}

// Real polls on the fixture network, worked by the replica's own River
// workers: the scrape counts them by Site and outcome, the Cover fetches by
// outcome, the Latest Chapter the poll found, the pacing waits by host
// (a Site's host by name, an image CDN as other), and the Site a challenge
// backed off.
func TestJobMetricsAfterRealPolls(t *testing.T) {
	t.Parallel()
	b := setupJobs(t)
	ann := b.Token("ann", false)
	h := b.Server.Metrics().Handler()
	// The first scrape is where the Latest Chapter changes start counting.
	s := metricstest.Serve(t, h)
	require.Equal(t, 0.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "asura"))

	servePage(b, orvURL, "asura", "series.html")
	b.Net.Set(orvCover, http.StatusOK, "image/png", imagetest.RealPNG(t, 3))
	comix := mustResolve(t, tgedURL)
	b.Net.Set(comix.SeriesURL, http.StatusForbidden, "text/html", testenv.SiteFixture(t, "comix", "challenge.html"))
	orv := mustResolve(t, orvURL).Key
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/"+orv, ann, putBody("asura", orvURL, "Chapter 1")).Code)
	require.Equal(t, http.StatusCreated, b.Do("PUT", "/api/bookmarks/"+comix.Key, ann, putBody("comix", tgedURL, "Chapter 1")).Code)
	apptest.Eventually(t, "the Cover lands", func() bool { return *b.Bookmark(ann, orv).Cover != "" })
	apptest.Eventually(t, "the jobs settle", func() bool {
		return b.JobsDone("fetch_cover") && b.JobCount("poll_series", "completed") == 1 && b.JobCount("poll_series", "scheduled") == 1
	})

	s = metricstest.Serve(t, h)
	polls := func(site string) (n float64, outcomes []string) {
		for _, x := range s.Find("lectern_job_duration_seconds", "kind", "poll_series", "site", site) {
			n += x.Value
			outcomes = append(outcomes, x.Labels["outcome"])
		}
		return n, outcomes
	}
	n, outcomes := polls("asura")
	require.Equal(t, 1.0, n, "%v", outcomes)
	require.Equal(t, []string{"ok"}, outcomes)
	n, outcomes = polls("comix")
	require.Equal(t, 1.0, n)
	require.NotContains(t, outcomes, "ok", "a challenge is not a good poll")
	require.Equal(t, 1.0, s.Value(t, "lectern_job_duration_seconds", "kind", "fetch_cover", "site", "asura", "outcome", "ok"))
	require.Equal(t, 1.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "asura"))
	require.Equal(t, 0.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "comix"))
	require.Equal(t, 1.0, s.Value(t, "lectern_site_backoff", "site", "comix"))
	require.Greater(t, s.Value(t, "lectern_site_backoff_remaining_seconds", "site", "comix"), 0.0)
	require.Equal(t, 1.0, s.Value(t, "lectern_site_refusals", "site", "comix"))
	require.Equal(t, 0.0, s.Value(t, "lectern_site_backoff", "site", "asura"))
	require.GreaterOrEqual(t, s.Value(t, "lectern_pacing_wait_seconds", "host", "asurascans.com"), 1.0)
	require.GreaterOrEqual(t, s.Value(t, "lectern_pacing_wait_seconds", "host", "other"), 1.0, "the Cover CDN is paced as other")
	require.GreaterOrEqual(t, s.Value(t, "lectern_pacing_backlog_seconds", "host", "asurascans.com"), 0.0)
	require.Equal(t, 1.0, s.Value(t, "lectern_queue_jobs", "kind", "poll_series", "state", "completed"))
	for _, x := range s.Find("lectern_pacing_wait_seconds") {
		require.NotContains(t, x.Labels["host"], "cdn.", "an image host outside the registry became a label: %s", x)
	}
}

// A panel refresh that changed nothing (a 304) is logged at debug: written
// when debug is on, neither written nor built at info, while a full body
// stays at info.
func TestNotModifiedRefreshIsLoggedAtDebug(t *testing.T) {
	t.Parallel()
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var logs lockedBuffer
		logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: level}))
		app := apptest.New(t, apptest.Options{Logger: logger})
		tok := app.Token("ann", false)
		r := app.Do("PUT", "/api/bookmarks/asura:solo-leveling", tok,
			map[string]any{"site": "asura", "series_url": "https://asuracomic.net/series/solo-leveling", "chapter": "Chapter 1"})
		require.Equal(t, http.StatusCreated, r.Code)
		full := app.Do("GET", "/api/bookmarks", tok, nil)
		require.Equal(t, http.StatusOK, full.Code)
		nm := app.Do("GET", "/api/bookmarks", tok, nil, "If-None-Match", full.Header.Get("ETag"))
		require.Equal(t, http.StatusNotModified, nm.Code)

		byStatus := map[float64][]string{}
		for _, l := range logs.lines(t) {
			if l["msg"] == "request" && l["path"] == "/api/bookmarks" && l["method"] == "GET" {
				byStatus[l["status"].(float64)] = append(byStatus[l["status"].(float64)], l["level"].(string))
			}
		}
		require.Equal(t, []string{"INFO"}, byStatus[200], "level %s", level)
		if level == slog.LevelDebug {
			require.Equal(t, []string{"DEBUG"}, byStatus[304])
		} else {
			require.Empty(t, byStatus[304])
		}
	}
}

package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The auth matrix: every route of the composed router, found by walking it
// (the API, the public routes and the web library's routes), asked by every
// kind of caller, with the exact status each must get. A route added
// without a row here fails TestAuthMatrixCoversEveryRoute; a row whose
// status changes fails TestAuthMatrix.
//
// The callers, on the surface the route belongs to:
//   - anon: no credential at all.
//   - revoked: a revoked API token (the API) or a signed-out session (the
//     web library).
//   - noCSRF: Ann's own session without the form's CSRF token (state-changing
//     web routes); on the API, Ann's session cookie without a token.
//   - other: Bob, another Reader, asking for Ann's things (her Bookmark, her
//     token, her push target, her Series' archive).
//   - reader: Ann herself, with her token (API) or session and CSRF token (web).
//   - owner: the Owner, who holds none of Ann's things.
//
// Besides the table, every web route given only Ann's API token must answer
// as it does to anon (a token lives in a userscript on a third-party origin
// and must not drive the web library), and every /api route given only Ann's
// session cookie must answer 401 (cookie authentication on the API would be
// a cross-site request forgery hole).

const annKey = "asura:solo-leveling"

// annKey2 is Ann's second Bookmark, in one Work with annKey.
const annKey2 = "demonic:Solo-Leveling"

type authWorld struct {
	h  http.Handler
	st *store.Store

	ann, bob, owner          store.Reader
	annTok, bobTok, ownerTok string
	revokedTok               string
	annSes, bobSes, ownerSes string
	deadSes                  string
	csrf                     map[string]string // session → raw CSRF token

	annSpareTokenID int64 // a token of Ann's that a revoke may hit
	annTargetID     int64
	annWorkID       int64 // Ann's Work of annKey and annKey2
	annFeedKey      string
	jobID           int64 // Ann's Series' Acquisition poll
	chapterID       int64 // an archive chapter of Ann's Series
	requestID       int64 // Ann's archive request
	coverAddr       string
	staticCSS       string
}

var (
	matrixHashOnce sync.Once
	matrixHash     string
)

func newAuthWorld(t *testing.T) *authWorld {
	t.Helper()
	ctx := context.Background()
	matrixHashOnce.Do(func() {
		var err error
		matrixHash, err = credential.HashPassword("correct horse battery")
		require.NoError(t, err)
	})
	// The fake network has no answer: a test send resolves and dials
	// nothing, and no test touches the live network.
	app := setup(t)
	st, cfg := app.Store, app.Config
	w := &authWorld{h: app.Handler(), st: st, csrf: map[string]string{}}

	mk := func(name string, owner bool) (store.Reader, string, string) {
		r, err := st.CreateReader(ctx, name, matrixHash, owner)
		require.NoError(t, err)
		tok, th, err := credential.NewToken()
		require.NoError(t, err)
		_, err = st.CreateToken(ctx, r.ID, "matrix", th)
		require.NoError(t, err)
		return r, tok, w.session(t, r.ID)
	}
	w.owner, w.ownerTok, w.ownerSes = mk("olive", true)
	w.ann, w.annTok, w.annSes = mk("ann", false)
	w.bob, w.bobTok, w.bobSes = mk("bob", false)

	_, th, err := credential.NewToken()
	require.NoError(t, err)
	tk, err := st.CreateToken(ctx, w.ann.ID, "spare", th)
	require.NoError(t, err)
	w.annSpareTokenID = tk.ID
	w.revokedTok, th, err = credential.NewToken()
	require.NoError(t, err)
	tk, err = st.CreateToken(ctx, w.ann.ID, "old", th)
	require.NoError(t, err)
	require.NoError(t, st.RevokeToken(ctx, w.ann.ID, tk.ID))

	w.deadSes = w.session(t, w.ann.ID)
	require.NoError(t, st.DeleteSession(ctx, credential.HashSecret(w.deadSes)))

	rec := w.call(http.MethodPut, "/api/bookmarks/"+annKey, "Bearer "+w.annTok, "", "application/json",
		`{"site":"asura","series_url":"https://asurascans.com/comics/solo-leveling-1a2b3c4d","chapter":"Chapter 3"}`)
	require.Equal(t, http.StatusCreated, rec.Code, "%s", rec.Body)
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT id FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1`, annKey).Scan(&w.jobID))
	rec = w.call(http.MethodPut, "/api/bookmarks/"+annKey2, "Bearer "+w.annTok, "", "application/json",
		`{"site":"demonic","series_url":"https://demonicscans.org/manga/Solo-Leveling"}`)
	require.Equal(t, http.StatusCreated, rec.Code, "%s", rec.Body)
	work, err := st.CreateWork(ctx, w.ann.ID, []string{annKey, annKey2})
	require.NoError(t, err)
	w.annWorkID = work.ID

	// A loopback target: a test send is refused by the destination gate
	// before any packet leaves (no name to resolve either).
	target, err := st.CreateTarget(ctx, w.ann.ID, store.NewTarget{Kind: "json", URL: "jsons://127.0.0.1/ann"})
	require.NoError(t, err)
	w.annTargetID = target.ID
	raw, err := credential.NewSecret()
	require.NoError(t, err)
	w.annFeedKey = notify.FeedSecretPrefix + raw
	_, err = st.SetFeedSecret(ctx, w.ann.ID, credential.HashSecret(w.annFeedKey))
	require.NoError(t, err)

	n := 1.0
	ch, _, err := st.EnsureArchiveChapter(ctx, annKey, store.ArchiveChapterInput{
		URL: "https://asurascans.com/comics/solo-leveling-1a2b3c4d/chapter/1", Label: "Chapter 1", Number: &n, Position: 1,
	}, &w.ann.ID, "queued", "", "")
	require.NoError(t, err)
	w.chapterID = ch.ID
	req, err := st.CreateArchiveRequest(ctx, w.ann.ID, annKey, "all")
	require.NoError(t, err)
	w.requestID = req.ID

	w.coverAddr, err = (&blob.FS{Dir: cfg.CoverDir}).Put(ctx, imagetest.RealPNG(t, 9), imagetype.TypePNG)
	require.NoError(t, err)

	login := w.call(http.MethodGet, "/login", "", "", "", "")
	require.Equal(t, http.StatusOK, login.Code)
	w.staticCSS = regexp.MustCompile(`/static/cinder\.[0-9a-f]+\.css`).FindString(login.Body.String())
	require.NotEmpty(t, w.staticCSS, "the sign-in page links its stylesheet")
	return w
}

func (w *authWorld) session(t *testing.T, readerID int64) string {
	t.Helper()
	id, err := credential.NewSecret()
	require.NoError(t, err)
	csrf, err := credential.NewSecret()
	require.NoError(t, err)
	require.NoError(t, w.st.CreateSession(context.Background(), credential.HashSecret(id), readerID, csrf, time.Now().Add(time.Hour)))
	w.csrf[id] = csrf
	return id
}

// masked is a CSRF token as a form carries it: a pad, then the token XOR
// the pad (a zero pad keeps it the token itself).
func masked(raw string) string {
	return base64.RawURLEncoding.EncodeToString(append(make([]byte, len(raw)), raw...))
}

func (w *authWorld) call(method, target, authz, session, ctype, body string) *httptest.ResponseRecorder {
	return w.callWith(nil, method, target, authz, session, ctype, body)
}

// callWith is call with extra request headers.
func (w *authWorld) callWith(hdr http.Header, method, target, authz, session, ctype, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.RemoteAddr = "192.0.2.20:5555"
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if session != "" {
		req.AddCookie(&http.Cookie{Name: "__Host-lectern_session", Value: session})
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	w.h.ServeHTTP(rec, req)
	return rec
}

// matrixRow is one route asked by every caller. Zero in a column means the
// caller is not asked (noCSRF on a read).
type matrixRow struct {
	method, route string
	path          func(w *authWorld) string
	// body is the JSON (API) or the form fields (web) a caller sends;
	// multipart sends the fields as an upload form does.
	body      func(w *authWorld) string
	multipart bool

	anon, revoked, noCSRF, other, reader, owner int
}

func fixed(p string) func(*authWorld) string { return func(*authWorld) string { return p } }

func (r matrixRow) api() bool {
	return strings.HasPrefix(r.route, "/api/")
}

func (r matrixRow) web() bool {
	for _, p := range []string{"/api/", "/covers/", "/userscripts/", "/healthz", "/readyz"} {
		if strings.HasPrefix(r.route, p) {
			return false
		}
	}
	return true
}

func (r matrixRow) writes() bool { return r.method != http.MethodGet && r.method != http.MethodHead }

// ask sends the row's request as one caller.
func (r matrixRow) ask(w *authWorld, caller string) *httptest.ResponseRecorder {
	path := r.path(w)
	body := ""
	if r.body != nil {
		body = r.body(w)
	}
	if !r.web() {
		ctype := ""
		if body != "" {
			ctype = "application/json"
		}
		switch caller {
		case "anon":
			return w.call(r.method, path, "", "", ctype, body)
		case "revoked":
			return w.call(r.method, path, "Bearer "+w.revokedTok, "", ctype, body)
		case "noCSRF", "cookie":
			return w.call(r.method, path, "", w.annSes, ctype, body)
		case "other":
			return w.call(r.method, path, "Bearer "+w.bobTok, "", ctype, body)
		case "reader", "token":
			return w.call(r.method, path, "Bearer "+w.annTok, "", ctype, body)
		case "owner":
			return w.call(r.method, path, "Bearer "+w.ownerTok, "", ctype, body)
		}
		panic(caller)
	}
	ses := map[string]string{"revoked": w.deadSes, "noCSRF": w.annSes, "other": w.bobSes, "reader": w.annSes, "owner": w.ownerSes}[caller]
	authz := ""
	if caller == "token" {
		authz = "Bearer " + w.annTok
	}
	if !r.writes() {
		return w.call(r.method, path, authz, ses, "", "")
	}
	form, err := url.ParseQuery(body)
	if err != nil {
		panic(err)
	}
	if raw, ok := w.csrf[ses]; ok && caller != "noCSRF" && caller != "revoked" {
		form.Set("csrf", masked(raw))
	}
	if !r.multipart {
		return w.call(r.method, path, authz, ses, "application/x-www-form-urlencoded", form.Encode())
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, vs := range form {
		for _, v := range vs {
			_ = mw.WriteField(k, v)
		}
	}
	_ = mw.Close()
	return w.call(r.method, path, authz, ses, mw.FormDataContentType(), buf.String())
}

// askCrossSite sends the row's request as the Owner, CSRF token and all,
// from a page of another site (Sec-Fetch-Site: cross-site).
func (r matrixRow) askCrossSite(w *authWorld) *httptest.ResponseRecorder {
	form := url.Values{}
	if r.body != nil {
		form, _ = url.ParseQuery(r.body(w))
	}
	form.Set("csrf", masked(w.csrf[w.ownerSes]))
	hdr := http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}}
	return w.callWith(hdr, r.method, r.path(w), "", w.ownerSes, "application/x-www-form-urlencoded", form.Encode())
}

// requireUIHeaders pins the security headers every answer of the web UI
// carries, whatever produced it: a page, an error page, a 404, a redirect,
// an archived page's bytes or the cross-origin guard's refusal.
func requireUIHeaders(t *testing.T, h http.Header, what string) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'", what)
	require.Contains(t, csp, "frame-ancestors 'none'", what)
	require.NotContains(t, csp, "unsafe-inline", what)
	require.NotContains(t, csp, "unsafe-eval", what)
	require.Equal(t, "DENY", h.Get("X-Frame-Options"), what)
	require.Equal(t, "no-referrer", h.Get("Referrer-Policy"), what)
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), what)
	require.Equal(t, "same-origin", h.Get("Cross-Origin-Opener-Policy"), what)
	require.NotEmpty(t, h.Get("Permissions-Policy"), what)
}

func matrixRows() []matrixRow {
	key := annKey
	id := func(f func(w *authWorld) int64, format string) func(*authWorld) string {
		return func(w *authWorld) string { return fmt.Sprintf(format, f(w)) }
	}
	job := func(w *authWorld) int64 { return w.jobID }
	chapter := func(w *authWorld) int64 { return w.chapterID }
	bob := func(w *authWorld) int64 { return w.bob.ID }
	work := func(w *authWorld) int64 { return w.annWorkID }
	put := fixed(`{"site":"asura","series_url":"https://asurascans.com/comics/solo-leveling-1a2b3c4d","chapter":"Chapter 4"}`)
	const (
		ok, created, accepted, noContent = 200, 201, 202, 204
		seeOther                         = 303
		bad, unauth, forbidden, notFound = 400, 401, 403, 404
		conflict, unprocessable          = 409, 422
	)
	return []matrixRow{
		// Public: the same answer whoever asks.
		{method: "GET", route: "/healthz", path: fixed("/healthz"), anon: ok, revoked: ok, other: ok, reader: ok, owner: ok},
		{method: "GET", route: "/readyz", path: fixed("/readyz"), anon: ok, revoked: ok, other: ok, reader: ok, owner: ok},
		{method: "GET", route: "/userscripts/{name}", path: fixed("/userscripts/lectern-manga.user.js"), anon: ok, revoked: ok, other: ok, reader: ok, owner: ok},
		{method: "GET", route: "/covers/{address}", path: func(w *authWorld) string { return "/covers/" + w.coverAddr + ".png" }, anon: ok, revoked: ok, other: ok, reader: ok, owner: ok},
		{method: "HEAD", route: "/covers/{address}", path: func(w *authWorld) string { return "/covers/" + w.coverAddr }, anon: ok, revoked: ok, other: ok, reader: ok, owner: ok},

		// The Reader's API.
		{method: "GET", route: "/api/bookmarks", path: fixed("/api/bookmarks"), anon: unauth, revoked: unauth, noCSRF: unauth, other: ok, reader: ok, owner: ok},
		{method: "GET", route: "/api/bookmarks/{key}", path: fixed("/api/bookmarks/" + key), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: ok, owner: notFound},
		{method: "PUT", route: "/api/bookmarks/{key}", path: fixed("/api/bookmarks/" + key), body: put, anon: unauth, revoked: unauth, noCSRF: unauth, other: created, reader: ok, owner: created},
		{method: "DELETE", route: "/api/bookmarks/{key}", path: fixed("/api/bookmarks/asura:nobody-holds-this"), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: notFound, owner: notFound},
		{method: "GET", route: "/api/works", path: fixed("/api/works"), anon: unauth, revoked: unauth, noCSRF: unauth, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/api/works", path: fixed("/api/works"), body: fixed(`{"keys":["` + annKey + `","asura:nobody-holds-this"]}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: unprocessable, reader: unprocessable, owner: unprocessable},
		{method: "GET", route: "/api/works/{id}", path: id(work, "/api/works/%d"), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: ok, owner: notFound},
		{method: "POST", route: "/api/works/{id}/keys", path: id(work, "/api/works/%d/keys"), body: fixed(`{"key":"` + annKey2 + `"}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: ok, owner: notFound},
		{method: "DELETE", route: "/api/works/{id}/keys/{key}", path: id(work, "/api/works/%d/keys/asura:nobody-holds-this"), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: notFound, owner: notFound},
		{method: "GET", route: "/api/works/suggestions", path: fixed("/api/works/suggestions"), anon: unauth, revoked: unauth, noCSRF: unauth, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/api/works/suggestions/dismiss", path: fixed("/api/works/suggestions/dismiss"), body: fixed(`{"keys":["asura:a","asura:b"]}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: noContent, reader: noContent, owner: noContent},
		{method: "POST", route: "/api/works/move", path: fixed("/api/works/move"), body: fixed(`{"moves":[{"from":"` + annKey + `","to":"asura:nobody-holds-this"}]}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: unprocessable, reader: unprocessable, owner: unprocessable},
		{method: "GET", route: "/api/resolve", path: fixed("/api/resolve?url=https%3A%2F%2Fasurascans.com%2Fcomics%2Fsolo-leveling-1a2b3c4d"), anon: unauth, revoked: unauth, noCSRF: unauth, other: ok, reader: ok, owner: ok},
		{method: "GET", route: "/api/export", path: fixed("/api/export"), anon: unauth, revoked: unauth, noCSRF: unauth, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/api/import", path: fixed("/api/import?format=urls&dry_run=true"), body: fixed("https://asurascans.com/comics/solo-leveling-1a2b3c4d\n"), anon: unauth, revoked: unauth, noCSRF: unauth, other: ok, reader: ok, owner: ok},
		{method: "GET", route: "/api/series/{key}/archive", path: fixed("/api/series/" + key + "/archive"), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: ok, owner: ok},
		{method: "POST", route: "/api/series/{key}/archive", path: fixed("/api/series/" + key + "/archive"), body: fixed(`{"scope":"latest"}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: forbidden, owner: accepted},
		{method: "PUT", route: "/api/series/{key}/archive/follow", path: fixed("/api/series/" + key + "/archive/follow"), body: fixed(`{"follow":true}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: forbidden, owner: notFound},
		{method: "GET", route: "/api/series/{key}/archive.cbz", path: fixed("/api/series/" + key + "/archive.cbz"), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: notFound, owner: notFound},
		{method: "GET", route: "/api/series/{key}/archive.epub", path: fixed("/api/series/" + key + "/archive.epub"), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: bad, owner: bad},

		{method: "GET", route: "/api/notify/targets", path: fixed("/api/notify/targets"), anon: unauth, revoked: unauth, noCSRF: unauth, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/api/notify/targets", path: fixed("/api/notify/targets"), body: fixed(`{"url":"ntfy://ann-topic"}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: created, reader: created, owner: created},
		{method: "DELETE", route: "/api/notify/targets/{id}", path: func(w *authWorld) string { return fmt.Sprintf("/api/notify/targets/%d", w.annTargetID) }, anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: noContent, owner: notFound},
		{method: "POST", route: "/api/notify/targets/{id}/test", path: func(w *authWorld) string { return fmt.Sprintf("/api/notify/targets/%d/test", w.annTargetID) }, anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: ok, owner: notFound},
		{method: "PUT", route: "/api/notify/mutes/{key}", path: fixed("/api/notify/mutes/" + annKey), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: noContent, owner: notFound},
		{method: "DELETE", route: "/api/notify/mutes/{key}", path: fixed("/api/notify/mutes/" + annKey), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: noContent, owner: notFound},
		{method: "GET", route: "/api/trackers", path: fixed("/api/trackers"), anon: unauth, revoked: unauth, noCSRF: unauth, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/api/trackers/{tracker}", path: fixed("/api/trackers/myanimelist"), body: fixed(`{"token":"x"}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: unprocessable, reader: unprocessable, owner: unprocessable},
		{method: "DELETE", route: "/api/trackers/{tracker}", path: fixed("/api/trackers/anilist"), anon: unauth, revoked: unauth, noCSRF: unauth, other: conflict, reader: conflict, owner: conflict},
		{method: "POST", route: "/api/trackers/{tracker}/import", path: fixed("/api/trackers/anilist/import?dry_run=true"), anon: unauth, revoked: unauth, noCSRF: unauth, other: conflict, reader: conflict, owner: conflict},
		{method: "GET", route: "/api/bookmarks/{key}/trackers", path: fixed("/api/bookmarks/" + key + "/trackers"), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: ok, owner: notFound},
		{method: "PUT", route: "/api/bookmarks/{key}/completed", path: fixed("/api/bookmarks/" + key + "/completed"), body: fixed(`{"completed":false}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: ok, owner: notFound},
		{method: "GET", route: "/api/bookmarks/{key}/trackers/{tracker}/search", path: fixed("/api/bookmarks/" + key + "/trackers/myanimelist/search?q=solo"), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: conflict, owner: notFound},
		{method: "PUT", route: "/api/bookmarks/{key}/trackers/{tracker}", path: fixed("/api/bookmarks/" + key + "/trackers/anilist"), body: fixed(`{"id":30013}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: created, owner: notFound},
		{method: "DELETE", route: "/api/bookmarks/{key}/trackers/{tracker}", path: fixed("/api/bookmarks/" + key + "/trackers/anilist"), anon: unauth, revoked: unauth, noCSRF: unauth, other: notFound, reader: notFound, owner: notFound},

		// The Owner's API.
		{method: "GET", route: "/api/admin/status", path: fixed("/api/admin/status"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/api/admin/sites/{site}/resume", path: fixed("/api/admin/sites/asura/resume"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/api/admin/sites/{site}/pause", path: fixed("/api/admin/sites/demonic/pause"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "PUT", route: "/api/admin/sites/{site}", path: fixed("/api/admin/sites/comix"), body: fixed(`{"pace_ms":2500}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "GET", route: "/api/admin/sites", path: fixed("/api/admin/sites"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/api/admin/sites", path: fixed("/api/admin/sites"), body: fixed(`{"site":"toonhaven","family":"madara","hosts":["toonhaven.test"],"kind":"manga"}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: created},
		{method: "DELETE", route: "/api/admin/sites/{site}", path: fixed("/api/admin/sites/nosuch"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: notFound},
		{method: "POST", route: "/api/admin/sites/probe", path: fixed("/api/admin/sites/probe"), body: fixed(`{"family":"madara","url":"http://toonhaven.test/manga/x/"}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: unprocessable},
		{method: "POST", route: "/api/admin/pause", path: fixed("/api/admin/pause"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/api/admin/resume", path: fixed("/api/admin/resume"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/api/admin/series/{key}/poll", path: fixed("/api/admin/series/" + key + "/poll"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: accepted},
		{method: "POST", route: "/api/admin/series/{key}/cover/refetch", path: fixed("/api/admin/series/" + key + "/cover/refetch"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: accepted},
		{method: "GET", route: "/api/admin/series/{key}/schedule", path: fixed("/api/admin/series/" + key + "/schedule"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "GET", route: "/api/admin/sites/{site}/schedule", path: fixed("/api/admin/sites/asura/schedule"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "GET", route: "/api/admin/jobs", path: fixed("/api/admin/jobs"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/api/admin/jobs/{id}/retry", path: id(job, "/api/admin/jobs/%d/retry"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/api/admin/jobs/{id}/cancel", path: id(job, "/api/admin/jobs/%d/cancel"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "GET", route: "/api/admin/archive/jobs", path: fixed("/api/admin/archive/jobs"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/api/admin/archive/jobs/{id}/cancel", path: id(chapter, "/api/admin/archive/jobs/%d/cancel"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/api/admin/archive/jobs/{id}/retry", path: id(chapter, "/api/admin/archive/jobs/%d/retry"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: conflict},
		{method: "POST", route: "/api/admin/archive/requests/{id}/cancel", path: func(w *authWorld) string { return fmt.Sprintf("/api/admin/archive/requests/%d/cancel", w.requestID) }, anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "GET", route: "/api/admin/archive/readers", path: fixed("/api/admin/archive/readers"), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},
		{method: "PUT", route: "/api/admin/archive/readers/{id}", path: id(bob, "/api/admin/archive/readers/%d"), body: fixed(`{"enabled":true,"max_chapters":10}`), anon: unauth, revoked: unauth, noCSRF: unauth, other: forbidden, reader: forbidden, owner: ok},

		// The web library: public pages.
		{method: "GET", route: "/", path: fixed("/"), anon: seeOther, revoked: seeOther, other: seeOther, reader: seeOther, owner: seeOther},
		{method: "GET", route: "/static/{name}", path: func(w *authWorld) string { return w.staticCSS }, anon: ok, revoked: ok, other: ok, reader: ok, owner: ok},
		{method: "GET", route: "/setup", path: fixed("/setup"), anon: seeOther, revoked: seeOther, other: seeOther, reader: seeOther, owner: seeOther},
		{method: "POST", route: "/setup", path: fixed("/setup"), body: fixed("name=mallory&password=correct+horse+battery&password2=correct+horse+battery"), anon: forbidden, revoked: forbidden, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: forbidden},
		{method: "GET", route: "/login", path: fixed("/login"), anon: ok, revoked: ok, other: seeOther, reader: seeOther, owner: seeOther},
		{method: "POST", route: "/login", path: fixed("/login"), body: fixed("name=ann&password=wrong"), anon: forbidden, revoked: forbidden, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: forbidden},
		{method: "GET", route: "/feed.atom", path: func(w *authWorld) string { return "/feed.atom?key=" + w.annFeedKey }, anon: ok, revoked: ok, other: ok, reader: ok, owner: ok},
		{method: "GET", route: "/feed.atom", path: fixed("/feed.atom?key=not-a-feed-key"), anon: notFound, revoked: notFound, other: notFound, reader: notFound, owner: notFound},

		// The web library: a Reader's pages and forms.
		{method: "POST", route: "/logout", path: fixed("/logout"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: seeOther, reader: seeOther, owner: seeOther},
		{method: "GET", route: "/library", path: fixed("/library"), anon: seeOther, revoked: seeOther, other: seeOther, reader: seeOther, owner: seeOther},
		{method: "GET", route: "/library/{kind}", path: fixed("/library/manga"), anon: seeOther, revoked: seeOther, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/library/caught-up", path: fixed("/library/caught-up"), body: fixed("key=" + key), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: conflict, owner: notFound},
		{method: "POST", route: "/library/remove", path: fixed("/library/remove"), body: fixed("key=" + key), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: seeOther, owner: notFound},
		{method: "GET", route: "/series/{key}", path: fixed("/series/" + key), anon: seeOther, revoked: seeOther, other: notFound, reader: ok, owner: ok},
		{method: "GET", route: "/series/{key}/archive", path: fixed("/series/" + key + "/archive"), anon: seeOther, revoked: seeOther, other: notFound, reader: ok, owner: ok},
		{method: "POST", route: "/series/{key}/archive", path: fixed("/series/" + key + "/archive"), body: fixed("scope=latest"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/series/{key}/archive/follow", path: fixed("/series/" + key + "/archive/follow"), body: fixed("follow=true"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: forbidden, owner: notFound},
		{method: "GET", route: "/series/{key}/archive.cbz", path: fixed("/series/" + key + "/archive.cbz"), anon: seeOther, revoked: seeOther, other: notFound, reader: notFound, owner: notFound},
		{method: "GET", route: "/series/{key}/archive.epub", path: fixed("/series/" + key + "/archive.epub"), anon: seeOther, revoked: seeOther, other: notFound, reader: bad, owner: bad},
		{method: "GET", route: "/series/{key}/archive/pages/{address}", path: func(w *authWorld) string { return "/series/" + key + "/archive/pages/" + w.coverAddr }, anon: seeOther, revoked: seeOther, other: notFound, reader: notFound, owner: notFound},
		{method: "GET", route: "/series/{key}/archive/{id}", path: id(chapter, "/series/"+key+"/archive/%d"), anon: seeOther, revoked: seeOther, other: notFound, reader: notFound, owner: notFound},
		{method: "POST", route: "/series/{key}/archive/{id}/progress", path: id(chapter, "/series/"+key+"/archive/%d/progress"), body: fixed("page=1"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: notFound, owner: notFound},
		{method: "GET", route: "/settings", path: fixed("/settings"), anon: seeOther, revoked: seeOther, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/settings/tokens", path: fixed("/settings/tokens"), body: fixed("name=phone"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/settings/tokens/{id}/revoke", path: func(w *authWorld) string { return fmt.Sprintf("/settings/tokens/%d/revoke", w.annSpareTokenID) }, anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: seeOther, owner: notFound},
		{method: "POST", route: "/settings/password", path: fixed("/settings/password"), body: fixed("current=wrong&password=a+new+long+password&password2=a+new+long+password"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: unprocessable, reader: unprocessable, owner: unprocessable},
		{method: "POST", route: "/settings/feed", path: fixed("/settings/feed"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/settings/feed/revoke", path: fixed("/settings/feed/revoke"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: seeOther, reader: seeOther, owner: seeOther},
		{method: "POST", route: "/settings/notify", path: fixed("/settings/notify"), body: fixed("kind=ntfy&url=https%3A%2F%2Fntfy.sh%2Fann-topic"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: seeOther, reader: seeOther, owner: seeOther},
		{method: "POST", route: "/settings/notify/{id}/delete", path: func(w *authWorld) string { return fmt.Sprintf("/settings/notify/%d/delete", w.annTargetID) }, anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: seeOther, owner: notFound},
		{method: "POST", route: "/settings/notify/{id}/test", path: func(w *authWorld) string { return fmt.Sprintf("/settings/notify/%d/test", w.annTargetID) }, anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: ok, owner: notFound},
		{method: "GET", route: "/settings/trackers/{tracker}/connect", path: fixed("/settings/trackers/myanimelist/connect"), anon: seeOther, revoked: seeOther, other: unprocessable, reader: unprocessable, owner: unprocessable},
		{method: "GET", route: "/settings/trackers/{tracker}/callback", path: fixed("/settings/trackers/anilist/callback?state=forged&code=x"), anon: seeOther, revoked: seeOther, other: unprocessable, reader: unprocessable, owner: unprocessable},
		{method: "POST", route: "/settings/trackers/{tracker}/token", path: fixed("/settings/trackers/mangaupdates/token"), body: fixed("token=x"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: unprocessable, reader: unprocessable, owner: unprocessable},
		{method: "POST", route: "/settings/trackers/{tracker}/login", path: fixed("/settings/trackers/anilist/login"), body: fixed("username=ann&password=x"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: unprocessable, reader: unprocessable, owner: unprocessable},
		{method: "POST", route: "/settings/trackers/{tracker}/unlink", path: fixed("/settings/trackers/anilist/unlink"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: conflict, reader: conflict, owner: conflict},
		{method: "GET", route: "/settings/trackers/{tracker}/import", path: fixed("/settings/trackers/anilist/import"), anon: seeOther, revoked: seeOther, other: conflict, reader: conflict, owner: conflict},
		{method: "POST", route: "/settings/trackers/{tracker}/import", path: fixed("/settings/trackers/anilist/import"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: conflict, reader: conflict, owner: conflict},
		{method: "POST", route: "/series/{key}/trackers/{tracker}", path: fixed("/series/" + key + "/trackers/anilist"), body: fixed("id=30013"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: seeOther, owner: notFound},
		{method: "POST", route: "/series/{key}/trackers/{tracker}/remove", path: fixed("/series/" + key + "/trackers/anilist/remove"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: notFound, owner: notFound},
		{method: "POST", route: "/series/{key}/mute", path: fixed("/series/" + key + "/mute"), body: fixed("muted=1"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: seeOther, owner: notFound},
		{method: "POST", route: "/series/{key}/completed", path: fixed("/series/" + key + "/completed"), body: fixed("completed=1"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: seeOther, owner: notFound},
		{method: "POST", route: "/works/link", path: fixed("/works/link"), body: fixed("key=" + key + "&with=asura%3Anot-held"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: notFound, owner: notFound},
		{method: "POST", route: "/works/unlink", path: fixed("/works/unlink"), body: fixed("work=999999&key=" + key), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: notFound, owner: notFound},
		{method: "POST", route: "/works/dismiss", path: fixed("/works/dismiss"), body: fixed("key=" + key + "&with=asura%3Anot-held"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: notFound, reader: notFound, owner: notFound},
		{method: "GET", route: "/works/move", path: fixed("/works/move?site=asura"), anon: seeOther, revoked: seeOther, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/works/move", path: fixed("/works/move"), body: fixed("site=asura"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: bad, reader: bad, owner: bad},
		{method: "GET", route: "/import", path: fixed("/import"), anon: seeOther, revoked: seeOther, other: ok, reader: ok, owner: ok},
		{method: "POST", route: "/import", multipart: true, path: fixed("/import"), body: fixed("format=urls&text=https%3A%2F%2Fasurascans.com%2Fcomics%2Fx"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: ok, reader: ok, owner: ok},
		{method: "GET", route: "/export", path: fixed("/export"), anon: seeOther, revoked: seeOther, other: ok, reader: ok, owner: ok},

		// The Owner console.
		{method: "GET", route: "/owner/", path: fixed("/owner/"), anon: seeOther, revoked: seeOther, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "GET", route: "/owner/readers", path: fixed("/owner/readers"), anon: seeOther, revoked: seeOther, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/owner/readers", path: fixed("/owner/readers"), body: fixed("name=carol&password=correct+horse+battery"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/owner/readers/{id}/password", path: id(bob, "/owner/readers/%d/password"), body: fixed("password=another+long+password"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/owner/readers/{id}/owner", path: id(bob, "/owner/readers/%d/owner"), body: fixed("owner=true"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "GET", route: "/owner/readers/{id}/delete", path: id(bob, "/owner/readers/%d/delete"), anon: seeOther, revoked: seeOther, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/owner/readers/{id}/delete", path: id(bob, "/owner/readers/%d/delete"), body: fixed("confirm=bob"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "GET", route: "/owner/archive", path: fixed("/owner/archive"), anon: seeOther, revoked: seeOther, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/owner/archive/jobs/{id}/cancel", path: id(chapter, "/owner/archive/jobs/%d/cancel"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/owner/archive/jobs/{id}/retry", path: id(chapter, "/owner/archive/jobs/%d/retry"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: conflict},
		{method: "POST", route: "/owner/archive/readers/{id}", path: id(bob, "/owner/archive/readers/%d"), body: fixed("enabled=true&max_chapters=5"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "GET", route: "/owner/sites", path: fixed("/owner/sites"), anon: seeOther, revoked: seeOther, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/owner/sites/{site}/resume", path: fixed("/owner/sites/asura/resume"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/owner/sites/{site}/pause", path: fixed("/owner/sites/demonic/pause"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/owner/sites/{site}/settings", path: fixed("/owner/sites/comix/settings"), body: fixed("pace=2.5s&budget="), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/owner/sites/add", path: fixed("/owner/sites/add"), body: fixed("site=Bad&family=madara&hosts=x.test"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: unprocessable},
		{method: "POST", route: "/owner/sites/test", path: fixed("/owner/sites/test"), body: fixed("family=madara&url=http%3A%2F%2Fx.test%2Fmanga%2Fa%2F"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: unprocessable},
		{method: "POST", route: "/owner/sites/{site}/definition", path: fixed("/owner/sites/nosuch/definition"), body: fixed("hosts=x.test&options="), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: notFound},
		{method: "POST", route: "/owner/sites/{site}/remove", path: fixed("/owner/sites/nosuch/remove"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: notFound},
		{method: "POST", route: "/owner/pause", path: fixed("/owner/pause"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/owner/resume", path: fixed("/owner/resume"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "GET", route: "/owner/failing", path: fixed("/owner/failing"), anon: seeOther, revoked: seeOther, other: forbidden, reader: forbidden, owner: ok},
		{method: "GET", route: "/owner/queue", path: fixed("/owner/queue"), anon: seeOther, revoked: seeOther, other: forbidden, reader: forbidden, owner: ok},
		{method: "POST", route: "/owner/series/{key}/poll", path: fixed("/owner/series/" + key + "/poll"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/owner/series/{key}/cover/refetch", path: fixed("/owner/series/" + key + "/cover/refetch"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/owner/jobs/{id}/retry", path: id(job, "/owner/jobs/%d/retry"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
		{method: "POST", route: "/owner/jobs/{id}/cancel", path: id(job, "/owner/jobs/%d/cancel"), anon: seeOther, revoked: seeOther, noCSRF: forbidden, other: forbidden, reader: forbidden, owner: seeOther},
	}
}

// walkedRoutes is every method and route pattern the composed router
// serves: the parent router's, and the web library's behind its mount.
// Routes mounted with Handle (the Cover route) answer every method at the
// router and refuse the others themselves; they are listed as GET and HEAD.
func walkedRoutes(t *testing.T, srv *server.Server) []string {
	t.Helper()
	seen := map[string]bool{}
	add := func(method, route string) {
		if route == "/*" {
			return
		}
		seen[method+" "+route] = true
	}
	all := map[string][]string{}
	walk := func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		all[route] = append(all[route], method)
		return nil
	}
	require.NoError(t, chi.Walk(srv.Handler().(chi.Routes), walk))
	require.NoError(t, chi.Walk(srv.WebRoutes(), walk))
	for route, methods := range all {
		if len(methods) >= 9 { // mounted with Handle: every method
			add("GET", route)
			add("HEAD", route)
			continue
		}
		for _, m := range methods {
			add(m, route)
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestAuthMatrixCoversEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := map[string]bool{}
	for _, r := range matrixRows() {
		rows[r.method+" "+r.route] = true
	}
	walked := walkedRoutes(t, b.Server)
	require.Contains(t, walked, "POST /owner/readers/{id}/delete", "the walk reaches the web library's routes")
	for _, r := range walked {
		require.True(t, rows[r], "route %s has no row in the auth matrix: add one with the exact status for every caller", r)
	}
	for r := range rows {
		require.Contains(t, walked, r, "the auth matrix has a row for %s, which the router does not serve", r)
	}
}

func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	record := os.Getenv("AUTH_MATRIX_RECORD") != ""
	var mu sync.Mutex
	var recorded []string
	for _, r := range matrixRows() {
		name := r.method + " " + r.route
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newAuthWorld(t)
			// Callers that must change nothing go first; Ann and the Owner,
			// whose requests may succeed, last.
			got := map[string]int{}
			for _, caller := range []string{"anon", "revoked", "token", "cookie", "noCSRF", "other", "reader", "owner"} {
				if caller == "noCSRF" && !r.writes() {
					continue
				}
				if caller == "token" && !r.web() || caller == "cookie" && r.web() {
					continue
				}
				rec := r.ask(w, caller)
				got[caller] = rec.Code
				require.Less(t, rec.Code, 500, "%s as %s: %s", name, caller, rec.Body)
				if r.web() {
					requireUIHeaders(t, rec.Header(), name+" as "+caller)
				}
				if r.api() && rec.Code == http.StatusUnauthorized {
					require.Contains(t, rec.Header().Get("WWW-Authenticate"), "Bearer", "%s as %s", name, caller)
				}
				if r.web() && rec.Code == http.StatusSeeOther && (caller == "anon" || caller == "revoked") && !r.writes() && r.route != "/" {
					require.True(t, strings.HasPrefix(rec.Header().Get("Location"), "/login"), "%s as %s goes to %s", name, caller, rec.Header().Get("Location"))
				}
				_, _ = io.Copy(io.Discard, rec.Body)
			}
			if r.web() {
				require.Equal(t, got["anon"], got["token"], "%s: an API token must not drive the web library", name)
			}
			if r.web() && r.writes() {
				// The Owner's own form, sent from another site: the guard
				// refuses it before any handler, with the same headers.
				rec := r.askCrossSite(w)
				require.Equal(t, http.StatusForbidden, rec.Code, "%s cross-site: %s", name, rec.Body)
				require.Contains(t, rec.Body.String(), "sent from another site", name)
				requireUIHeaders(t, rec.Header(), name+" cross-site")
			}
			if r.api() {
				require.Equal(t, http.StatusUnauthorized, got["cookie"], "%s: a session cookie must not authenticate the API", name)
			}
			if record {
				mu.Lock()
				recorded = append(recorded, fmt.Sprintf("%-45s anon:%d revoked:%d noCSRF:%d other:%d reader:%d owner:%d",
					name, got["anon"], got["revoked"], got["noCSRF"], got["other"], got["reader"], got["owner"]))
				mu.Unlock()
				return
			}
			want := map[string]int{"anon": r.anon, "revoked": r.revoked, "noCSRF": r.noCSRF, "other": r.other, "reader": r.reader, "owner": r.owner}
			for caller, code := range want {
				if _, asked := got[caller]; asked {
					require.Equal(t, code, got[caller], "%s as %s", name, caller)
				}
			}
		})
	}
	if record {
		t.Cleanup(func() {
			sort.Strings(recorded)
			t.Log("\n" + strings.Join(recorded, "\n"))
		})
	}
}

// The web UI's answers that no route row names carry the same headers: an
// unknown path's 404, a wrong method's 405, a HEAD, a static file, and the
// cross-origin guard's refusal of a form no session backs. (Every route,
// asked by every caller, is checked in TestAuthMatrix.)
func TestEveryUIAnswerCarriesTheSecurityHeaders(t *testing.T) {
	t.Parallel()
	w := newAuthWorld(t)
	cross := http.Header{"Sec-Fetch-Site": {"cross-site"}}
	for _, tc := range []struct {
		hdr          http.Header
		method, path string
		session      string
		code         int
	}{
		{nil, "GET", "/no/such/page", "", http.StatusNotFound},
		{nil, "GET", "/no/such/page", w.annSes, http.StatusNotFound},
		{nil, "DELETE", "/login", "", http.StatusMethodNotAllowed},
		{nil, "HEAD", "/login", "", http.StatusOK},
		{nil, "GET", w.staticCSS, "", http.StatusOK},
		{nil, "GET", "/static/no-such.css", "", http.StatusNotFound},
		{cross, "POST", "/login", "", http.StatusForbidden},
		{cross, "POST", "/setup", "", http.StatusForbidden},
	} {
		what := tc.method + " " + tc.path
		rec := w.callWith(tc.hdr, tc.method, tc.path, "", tc.session, "application/x-www-form-urlencoded", "")
		require.Equal(t, tc.code, rec.Code, "%s: %s", what, rec.Body)
		requireUIHeaders(t, rec.Header(), what)
	}
}

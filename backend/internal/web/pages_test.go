package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	webassets "github.com/lectern-reader/lectern/assets"
	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/web"
)

// requireSecurityHeaders pins the headers every UI response carries.
func requireSecurityHeaders(t *testing.T, h http.Header, what string) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	require.Contains(t, csp, "script-src 'self'", what)
	require.Contains(t, csp, "frame-ancestors 'none'", what)
	require.Contains(t, csp, "default-src 'none'", what)
	require.NotContains(t, csp, "unsafe-inline", what)
	require.NotContains(t, csp, "unsafe-eval", what)
	require.Equal(t, "DENY", h.Get("X-Frame-Options"), what)
	require.Equal(t, "no-referrer", h.Get("Referrer-Policy"), what)
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), what)
}

func TestEveryPageRendersForTheRightRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.Reader("olive", true)
	ann := b.Reader("ann", false)
	b.bookmark(owner.ID, soloURL, "Solo Leveling", "Chapter 3", asuraChapter(soloURL, 3))
	b.bookmark(ann.ID, omniURL, "Omniscient Reader", "Chapter 10", "")
	b.bookmark(ann.ID, slaveURL, "Shadow Slave", "Chapter 1", "")

	oc, ac, anon := b.Browser(), b.Browser(), b.Browser()
	oc.SignIn("olive", password)
	ac.SignIn("ann", password)

	annPath := fmt.Sprintf("/owner/readers/%d/delete", ann.ID)
	cases := []struct {
		path              string
		owner, reader     int
		ownerSees, reSees string // a selector the page must contain for that role
	}{
		{"/library/manga", 200, 200, `[data-testid="card"]`, `[data-testid="card"]`},
		{"/library/novel", 200, 200, `[data-testid="empty"]`, `[data-testid="card"]`},
		{"/series/" + omniKey, 200, 200, `[data-testid="facts"]`, `.progress`},
		{"/series/" + soloKey, 200, 404, `.progress`, `[data-testid="error-page"]`},
		{"/settings", 200, 200, `[data-testid="token-form"]`, `[data-testid="token-form"]`},
		{"/owner/readers", 200, 403, `[data-testid="readers"]`, `[data-testid="error-page"]`},
		{annPath, 200, 403, `[data-testid="confirm-delete"]`, `[data-testid="error-page"]`},
	}
	for _, tc := range cases {
		for _, who := range []struct {
			c    *apptest.Browser
			code int
			sel  string
			name string
		}{{oc, tc.owner, tc.ownerSees, "owner"}, {ac, tc.reader, tc.reSees, "reader"}} {
			r := who.c.Get(tc.path)
			what := who.name + " GET " + tc.path
			require.Equal(t, who.code, r.Code, "%s: %s", what, r.Body)
			require.Equal(t, "text/html; charset=utf-8", r.Header.Get("Content-Type"), what)
			require.Equal(t, "no-store", r.Header.Get("Cache-Control"), what)
			requireSecurityHeaders(t, r.Header, what)
			require.NotZero(t, r.Doc.Find(who.sel).Length(), "%s lacks %s", what, who.sel)
			require.NotEmpty(t, r.Doc.Find("title").Text(), what)
		}
		r := anon.Get(tc.path)
		require.Equal(t, http.StatusSeeOther, r.Code, "anonymous GET %s", tc.path)
		require.Equal(t, "/login?next="+url.QueryEscape(tc.path), r.Location())
	}

	// The Owner link and console are the Owner's alone.
	require.Equal(t, 1, oc.Get("/library/manga").Doc.Find(`[data-testid="nav-owner"]`).Length())
	require.Zero(t, ac.Get("/library/manga").Doc.Find(`[data-testid="nav-owner"]`).Length())
	r := ac.Get("/owner/readers")
	require.Contains(t, text(r, `[data-testid="error-message"]`), "Only the Owner")

	// Owner POSTs are refused to a Reader even with a valid CSRF token.
	token := apptest.CSRF(t, ac.Get("/settings"))
	for _, path := range []string{"/owner/readers", fmt.Sprintf("/owner/readers/%d/owner", ann.ID),
		fmt.Sprintf("/owner/readers/%d/delete", owner.ID), fmt.Sprintf("/owner/readers/%d/password", owner.ID)} {
		r := ac.Post(path, url.Values{"csrf": {token}, "name": {"eve"}, "password": {password}, "owner": {"true"}})
		require.Equal(t, http.StatusForbidden, r.Code, path)
	}
	require.Equal(t, 2, b.Count(`SELECT count(*) FROM readers`))
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM readers WHERE is_owner`))
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM sessions WHERE reader_id = $1`, owner.ID))
}

func TestStateChangingPostsNeedTheSessionsCSRFToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	b.Reader("bob", false)
	b.bookmark(ann.ID, soloURL, "Solo Leveling", "Chapter 3", "")
	c, bob := b.Browser(), b.Browser()
	c.SignIn("ann", password)
	bob.SignIn("bob", password)
	bobsToken := apptest.CSRF(t, bob.Get("/settings"))
	mine := apptest.CSRF(t, c.Get("/settings"))

	for _, tc := range []struct {
		name  string
		token string
		hdr   []string
		code  int
	}{
		{"no token", "", nil, 403},
		{"garbage", "not-a-token", nil, 403},
		{"another session's token", bobsToken, nil, 403},
		{"own token from a cross-site page", mine, []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"own token from another origin", mine, []string{"Origin", "https://evil.example"}, 403},
	} {
		form := url.Values{"name": {"laptop"}}
		if tc.token != "" {
			form.Set("csrf", tc.token)
		}
		r := c.Post("/settings/tokens", form, tc.hdr...)
		require.Equal(t, tc.code, r.Code, tc.name)
		require.Equal(t, 1, r.Doc.Find(`[data-testid="error-page"]`).Length(), "%s: a clear page, not a bare status", tc.name)
		for _, path := range []string{"/library/remove", "/library/caught-up", "/settings/password", "/logout"} {
			form.Set("key", soloKey)
			require.Equal(t, tc.code, c.Post(path, form, tc.hdr...).Code, "%s: POST %s", tc.name, path)
		}
	}
	require.Zero(t, b.Count(`SELECT count(*) FROM api_tokens`), "no refused form created anything")
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM bookmarks`))
	require.Equal(t, http.StatusOK, c.Get("/settings").Code, "still signed in")

	r := c.Post("/settings/tokens", url.Values{"csrf": {mine}, "name": {"laptop"}})
	require.Equal(t, http.StatusOK, r.Code, "the page's own token works: %s", r.Body)
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM api_tokens`))

	// Each response masks the token differently, and every mask is accepted.
	again := apptest.CSRF(t, c.Get("/settings"))
	require.NotEqual(t, mine, again)
	require.Equal(t, http.StatusOK, c.Post("/settings/tokens", url.Values{"csrf": {again}, "name": {"phone"}}).Code)
}

func TestHostileTitlesAndURLsRenderAsText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", true)
	b.bookmark(ann.ID, soloURL, "", "Chapter 3", asuraChapter(soloURL, 3))
	const evil = `<img src=x onerror=alert(1)>`
	b.setTitle(soloKey, evil)
	// Labels and URLs as a compromised Site page might make the Poll store them.
	_, err := b.Store.Pool.Exec(context.Background(), `
		UPDATE series SET latest_label = $2, latest_url = 'javascript:alert(2)', latest_number = 9, latest_at = now()
		WHERE key = $1`, soloKey, `"><script>alert(3)</script>`)
	require.NoError(t, err)
	_, err = b.Store.Pool.Exec(context.Background(), `UPDATE bookmarks SET chapter_url = 'javascript:alert(4)' WHERE series_key = $1`, soloKey)
	require.NoError(t, err)

	c := b.Browser()
	c.SignIn("ann", password)
	for _, path := range []string{"/library/manga", "/series/" + soloKey, "/library/manga?q=" + url.QueryEscape(evil)} {
		r := c.Get(path)
		require.Equal(t, http.StatusOK, r.Code, path)
		require.NotContains(t, r.Body, "<img src=x", path)
		require.NotContains(t, r.Body, "<script>alert", path)
		require.NotContains(t, r.Body, "javascript:", path)
		require.Contains(t, r.Body, "&lt;img src=x onerror=alert(1)&gt;", path)
		require.Zero(t, r.Doc.Find(`img[src="x"], script:not([src])`).Length(), path)
		title := r.Doc.Find(`.card-title, [data-testid="series-title"]`).First().Text()
		require.Equal(t, evil, title, "%s: the title shows as the text it is", path)
		latestText := r.Doc.Find(`.latest`).First().Text()
		require.True(t, strings.HasPrefix(latestText, `"><script>alert(3)</script>`), "%s: %q", path, latestText)
		require.Zero(t, r.Doc.Find(`.latest a, .progress a, .continue`).Length(),
			"%s: a non-http(s) chapter URL is not a link", path)
	}
	r := c.Get("/series/" + soloKey)
	remove := r.Doc.Find(`button[data-confirm]`)
	require.Equal(t, "Remove “"+evil+"” from your library?", remove.AttrOr("data-confirm", ""), "escaped in the attribute, intact for confirm()")
	r = c.Get("/library/manga")
	require.Equal(t, "IS", text(r, `.placeholder`), "the monogram of the hostile title: I(mg) and s(rc)")

	// The same hostile text as a Reader name in the Owner console.
	b.Reader(evil, false)
	r = c.Get("/owner/readers")
	require.Equal(t, http.StatusOK, r.Code)
	require.NotContains(t, r.Body, "<img src=x")
	require.Equal(t, 1, r.Doc.Find(`[data-testid="reader-row"][data-name="`+evil+`"]`).Length())
}

func TestStaticAssetsAreChecksummedAndCachedForAYear(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Reader("ann", false)
	c := b.Browser()
	p := c.Get("/login")
	css := p.Doc.Find(`link[rel="stylesheet"]`).AttrOr("href", "")
	require.Regexp(t, `^/static/cinder\.[0-9a-f]{12}\.css$`, css)
	var scripts []string
	p.Doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		src, ok := s.Attr("src")
		require.True(t, ok, "no inline script: the CSP forbids it")
		require.Empty(t, strings.TrimSpace(s.Text()))
		scripts = append(scripts, src)
	})
	require.Len(t, scripts, 2)
	require.Zero(t, p.Doc.Find("[style]").Length(), "no inline styles: the CSP forbids them")

	for _, u := range append(scripts, css) {
		r := c.Get(u)
		require.Equal(t, http.StatusOK, r.Code, u)
		require.Equal(t, "public, max-age=31536000, immutable", r.Header.Get("Cache-Control"), u)
		requireSecurityHeaders(t, r.Header, u)
		require.NotEmpty(t, r.Body)
	}
	require.Equal(t, "text/css; charset=utf-8", c.Get(css).Header.Get("Content-Type"))
	require.Equal(t, "text/javascript; charset=utf-8", c.Get(scripts[0]).Header.Get("Content-Type"))

	head, err := http.NewRequest(http.MethodHead, b.URL+"/login", nil)
	require.NoError(t, err)
	hr := c.Do(head)
	require.Equal(t, http.StatusOK, hr.Code, "HEAD answers like GET")
	require.Empty(t, hr.Body)

	for _, bad := range []string{"/static/cinder.css", "/static/cinder.000000000000.css", "/static/..%2Fassets.go", "/static/nothing.js"} {
		require.Equal(t, http.StatusNotFound, c.Get(bad).Code, bad)
	}
}

func TestBadInputGetsAClear4xxPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := b.Reader("olive", true)
	b.bookmark(owner.ID, soloURL, "Solo Leveling", "Chapter 3", "")
	c := b.Browser()
	c.SignIn("olive", password)
	token := apptest.CSRF(t, c.Get("/settings"))

	gets := []struct {
		path string
		code int
		msg  string
	}{
		{"/nothing/here", 404, "no page at /nothing/here"},
		{"/library/comics", 404, "two Libraries"},
		{"/library/manga?sort=random", 400, "Sort by unread, updated or title"},
		{"/library/manga?site=tapas", 400, "no Site called “tapas”"},
		{"/library/manga?site=novelfull", 400, "no Site called “novelfull” in the manga Library"},
		{"/library/manga?q=" + strings.Repeat("x", 201), 400, "at most 200 characters"},
		{"/series/nokey", 400, "site:slug"},
		{"/series/asura:" + strings.Repeat("a", 300), 400, "site:slug"},
		{"/series/asura:never-held", 404, "no Bookmark on asura:never-held"},
		{"/series/asura:%00", 400, "site:slug"},
		{"/series/asura:%FF", 400, "site:slug"},
		{"/owner/readers/abc/delete", 404, "no Reader with that id"},
		{"/owner/readers/999999/delete", 404, "no Reader with that id"},
	}
	for _, g := range gets {
		r := c.Get(g.path)
		require.Equal(t, g.code, r.Code, g.path)
		require.Contains(t, text(r, `[data-testid="error-message"]`), g.msg, g.path)
		requireSecurityHeaders(t, r.Header, g.path)
	}
	posts := []struct {
		path string
		form url.Values
		code int
		msg  string
	}{
		{"/library/caught-up", url.Values{"key": {"nokey"}}, 400, "site:slug"},
		{"/library/caught-up", url.Values{"key": {"asura:nothing"}}, 404, "no Bookmark on asura:nothing"},
		{"/library/caught-up", url.Values{"key": {soloKey}}, 409, "not found the Latest Chapter"},
		{"/library/remove", url.Values{"key": {"asura:nothing"}}, 404, "no Bookmark"},
		{"/settings/tokens/abc/revoke", url.Values{}, 404, "no token"},
		{"/settings/tokens/999/revoke", url.Values{}, 404, "no live token"},
		{"/owner/readers/999999/owner", url.Values{"owner": {"true"}}, 404, "no Reader"},
		{fmt.Sprintf("/owner/readers/%d/owner", owner.ID), url.Values{"owner": {"maybe"}}, 400, "true or false"},
		{"/settings/tokens", url.Values{"name": {strings.Repeat("n", 5000)}, "pad": {strings.Repeat("p", 20<<10)}}, 413, "more than 16384 bytes"},
		{"/settings/tokens", url.Values{"name": {"bad \xff byte"}}, 400, "not valid UTF-8"},
		{"/owner/readers", url.Values{"name": {"nul\x00"}, "password": {password}}, 400, "NUL"},
		{"/library/remove", url.Values{"key": {"asura:\x00"}}, 400, "NUL"},
	}
	for _, p := range posts {
		p.form.Set("csrf", token)
		r := c.Post(p.path, p.form)
		require.Equal(t, p.code, r.Code, "%s %v: %s", p.path, p.form, r.Body)
		require.Contains(t, text(r, `[data-testid="error-message"]`), p.msg, p.path)
	}
	r := c.Post("/settings/tokens", url.Values{"csrf": {token}, "name": {strings.Repeat("n", 101)}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="token-error"]`), "at most 100 characters")
	r = c.Post("/settings/tokens", url.Values{"csrf": {token}, "name": {"  "}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	r = c.Post("/settings/tokens", url.Values{"csrf": {token}, "name": {"tab\there"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Zero(t, b.Count(`SELECT count(*) FROM api_tokens`))

	req, err := http.NewRequest(http.MethodDelete, b.URL+"/settings", nil)
	require.NoError(t, err)
	r = c.Do(req)
	require.Equal(t, http.StatusMethodNotAllowed, r.Code)
	require.Equal(t, 1, r.Doc.Find(`[data-testid="error-page"]`).Length())
}

func TestAMissingTemplateFailsAtBoot(t *testing.T) {
	t.Parallel()
	st := store.New(pgtest.New(t))
	deps := func(fsys fstest.MapFS) web.Deps {
		return web.Deps{Config: config.Config{PublicBaseURL: "http://x"}, Store: st, Library: &bookmark.Service{Store: st, Registry: latest.Default()}, Assets: fsys}
	}
	full := fstest.MapFS{}
	for _, dir := range []string{"templates", "static"} {
		entries, err := webassets.FS.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			body, err := webassets.FS.ReadFile(dir + "/" + e.Name())
			require.NoError(t, err)
			full[dir+"/"+e.Name()] = &fstest.MapFile{Data: body}
		}
	}
	_, err := web.New(deps(full))
	require.NoError(t, err, "the embedded files are complete")

	without := func(name string) fstest.MapFS {
		m := fstest.MapFS{}
		for k, v := range full {
			if k != name {
				m[k] = v
			}
		}
		return m
	}
	_, err = web.New(deps(without("templates/settings.html")))
	require.ErrorContains(t, err, "settings")
	_, err = web.New(deps(without("templates/layout.html")))
	require.ErrorContains(t, err, "layout")

	broken := without("")
	broken["templates/library.html"] = &fstest.MapFile{Data: []byte(`{{define "content"}}{{.Unclosed{{end}}`)}
	_, err = web.New(deps(broken))
	require.ErrorContains(t, err, "library.html")

	noContent := without("")
	noContent["templates/series.html"] = &fstest.MapFile{Data: []byte(`{{define "body"}}x{{end}}`)}
	_, err = web.New(deps(noContent))
	require.ErrorContains(t, err, `series.html defines no "content"`)
}

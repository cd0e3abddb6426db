package apptest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
)

// Browser is a browser stand-in on the web library: a cookie jar over the
// loopback server, no redirect followed (tests assert where a response
// sends them).
type Browser struct {
	t    testing.TB
	base string
	c    *http.Client
}

// Browser is a new browser with no cookie.
func (a *App) Browser() *Browser {
	jar, err := cookiejar.New(nil)
	require.NoError(a.T, err)
	return &Browser{t: a.T, base: a.URL, c: &http.Client{
		Jar:           jar,
		Timeout:       60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Page is one answer, with its HTML parsed when it is HTML.
type Page struct {
	Code   int
	Header http.Header
	Body   string
	Doc    *goquery.Document
}

// Location is where the answer redirects.
func (p Page) Location() string { return p.Header.Get("Location") }

// Do sends req.
func (b *Browser) Do(req *http.Request) Page {
	b.t.Helper()
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	p := Page{Code: resp.StatusCode, Header: resp.Header, Body: string(body)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		p.Doc, err = goquery.NewDocumentFromReader(strings.NewReader(p.Body))
		require.NoError(b.t, err)
	}
	return p
}

// Request is a request for path on the loopback server, for a method or
// body the helpers do not cover; send it with Do.
func (b *Browser) Request(method, path string, body io.Reader) *http.Request {
	b.t.Helper()
	req, err := http.NewRequest(method, b.base+path, body)
	require.NoError(b.t, err)
	return req
}

// Cookies are the cookies the browser holds for the server.
func (b *Browser) Cookies() []*http.Cookie {
	u, err := url.Parse(b.base)
	require.NoError(b.t, err)
	return b.c.Jar.Cookies(u)
}

// Get fetches path.
func (b *Browser) Get(path string) Page {
	b.t.Helper()
	return b.Do(b.Request(http.MethodGet, path, nil))
}

// Post posts form to path as a form does; hdr are header name and value
// pairs.
func (b *Browser) Post(path string, form url.Values, hdr ...string) Page {
	b.t.Helper()
	req := b.Request(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return b.Do(req)
}

// PostForm posts form to path from the page at from, with that page's CSRF
// token.
func (b *Browser) PostForm(from, path string, form url.Values) Page {
	b.t.Helper()
	p := b.Get(from)
	require.Equal(b.t, http.StatusOK, p.Code, "GET %s: %s", from, p.Body)
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", CSRF(b.t, p))
	return b.Post(path, form)
}

// SignIn signs name in through the login form, which sends them to their
// manga Library.
func (b *Browser) SignIn(name, password string) {
	b.t.Helper()
	p := b.Get("/login")
	require.Equal(b.t, http.StatusOK, p.Code, p.Body)
	r := b.Post("/login", url.Values{"csrf": {CSRF(b.t, p)}, "name": {name}, "password": {password}})
	require.Equal(b.t, http.StatusSeeOther, r.Code, r.Body)
	require.Equal(b.t, "/library/manga", r.Location())
}

// CSRF is the CSRF token a page's forms carry.
func CSRF(t testing.TB, p Page) string {
	t.Helper()
	require.NotNil(t, p.Doc, "not an HTML page: %d %s", p.Code, p.Body)
	v, ok := p.Doc.Find(`input[name="csrf"]`).First().Attr("value")
	require.True(t, ok, "page has no CSRF field: %s", p.Body)
	require.NotEmpty(t, v)
	return v
}

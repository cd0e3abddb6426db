package archive_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
)

// apiDo sends one API request with a Reader's token.
func (r *rig) apiDo(method, path, token string, body any) (int, http.Header, []byte) {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(r.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.ts.URL+path, rd)
	require.NoError(r.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(r.t, err)
	return resp.StatusCode, resp.Header, b
}

func seriesAPI(key, rest string) string { return "/api/series/" + url.PathEscape(key) + rest }

// browser is a web UI session: a cookie jar, no redirects followed.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

type page struct {
	Code   int
	Header http.Header
	Body   []byte
	Doc    *goquery.Document
}

func (r *rig) signIn(name string) *browser {
	r.t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(r.t, err)
	b := &browser{t: r.t, base: r.ts.URL, c: &http.Client{Jar: jar, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	p := b.get("/login")
	require.Equal(r.t, http.StatusOK, p.Code)
	res := b.post("/login", url.Values{"csrf": {csrfOf(r.t, p)}, "name": {name}, "password": {password}})
	require.Equal(r.t, http.StatusSeeOther, res.Code, string(res.Body))
	return b
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	p := page{Code: resp.StatusCode, Header: resp.Header, Body: body}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		p.Doc, err = goquery.NewDocumentFromReader(bytes.NewReader(body))
		require.NoError(b.t, err)
	}
	return p
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	require.NoError(b.t, err)
	return b.do(req)
}

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// submit posts a form from the page at from, with that page's CSRF token.
func (b *browser) submit(from, path string, form url.Values) page {
	b.t.Helper()
	p := b.get(from)
	require.Equal(b.t, http.StatusOK, p.Code, "GET %s: %s", from, p.Body)
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrfOf(b.t, p))
	return b.post(path, form)
}

func csrfOf(t *testing.T, p page) string {
	t.Helper()
	require.NotNil(t, p.Doc, "not an HTML page: %d %s", p.Code, p.Body)
	v, ok := p.Doc.Find(`input[name="csrf"]`).First().Attr("value")
	require.True(t, ok, "page has no CSRF field: %s", p.Body)
	return v
}

func openZip(t *testing.T, b []byte) *zip.Reader {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	return zr
}

func readEntry(t *testing.T, f *zip.File) []byte {
	t.Helper()
	rc, err := f.Open()
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err, "entry %s", f.Name)
	return b
}

func names(zr *zip.Reader) []string {
	var out []string
	for _, f := range zr.File {
		out = append(out, f.Name)
	}
	return out
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

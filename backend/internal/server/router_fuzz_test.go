package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// fuzzWorld is the composed router over a real database, with the
// credentials a fuzzed request may carry. Each fuzzing process builds one;
// the requests then share it, so a fuzzed DELETE or PUT changes what later
// inputs see, as a real deployment's state would.
type fuzzWorld struct {
	h       http.Handler
	st      *store.Store
	reader  string // a Reader's API token
	owner   string // the Owner's API token
	revoked string // a revoked token
	session string // a Reader's web session cookie value
	// cid signs in afresh for each input that asks, with the session's CSRF
	// token in the form, so fuzzed forms reach the handlers behind the
	// CSRF check; her sign-out or changes touch no other credential.
	cid  store.Reader
	csrf string
}

func newFuzzWorld(tb testing.TB) *fuzzWorld {
	tb.Helper()
	ctx := context.Background()
	// A fuzzed request may create a push target on any host and ask for a
	// test send: the fake network has no answer, so it resolves and dials
	// nothing, and no test touches the live network.
	app := apptest.New(tb, apptest.Options{PublicBaseURL: testBase, Version: "fuzz"})
	st := app.Store
	w := &fuzzWorld{h: app.Handler(), st: st}
	mk := func(name string, owner bool) (store.Reader, string) {
		hash, err := credential.HashPassword("correct horse battery")
		if err != nil {
			tb.Fatal(err)
		}
		r, err := st.CreateReader(ctx, name, hash, owner)
		if err != nil {
			tb.Fatal(err)
		}
		tok, th, err := credential.NewToken()
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := st.CreateToken(ctx, r.ID, "fuzz", th); err != nil {
			tb.Fatal(err)
		}
		return r, tok
	}
	_, w.owner = mk("olive", true)
	ann, tok := mk("ann", false)
	w.reader = tok
	rex, rexTok := mk("rex", false)
	toks, err := st.ListTokens(ctx, rex.ID)
	if err != nil || len(toks) != 1 {
		tb.Fatalf("list tokens: %v", err)
	}
	if err := st.RevokeToken(ctx, rex.ID, toks[0].ID); err != nil {
		tb.Fatal(err)
	}
	w.revoked = rexTok
	id, err := credential.NewSecret()
	if err != nil {
		tb.Fatal(err)
	}
	csrf, _ := credential.NewSecret()
	if err := st.CreateSession(ctx, credential.HashSecret(id), ann.ID, csrf, time.Now().Add(24*time.Hour)); err != nil {
		tb.Fatal(err)
	}
	w.session = id
	w.cid, _ = mk("cid", false)
	if w.csrf, err = credential.NewSecret(); err != nil {
		tb.Fatal(err)
	}
	// One Bookmark, so reads and deletes of a known key reach the store.
	rec := w.serve(tb, http.MethodPut, "/api/bookmarks/asura:solo-leveling", w.reader, "application/json",
		`{"site":"asura","series_url":"https://asurascans.com/comics/solo-leveling-1a2b3c4d","chapter":"Chapter 3"}`)
	if rec.Code != http.StatusCreated {
		tb.Fatalf("seed bookmark: %d %s", rec.Code, rec.Body)
	}
	return w
}

func (w *fuzzWorld) serve(tb testing.TB, method, target, token, ctype, body string) *httptest.ResponseRecorder {
	tb.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	w.h.ServeHTTP(rec, req)
	return rec
}

// credential is the fuzzed choice of what a request carries.
func (w *fuzzWorld) credential(choice uint8, req *http.Request) {
	switch choice % 8 {
	case 1:
		req.Header.Set("Authorization", "Bearer "+w.reader)
	case 2:
		req.Header.Set("Authorization", "Bearer "+w.owner)
	case 3:
		req.Header.Set("Authorization", "Bearer "+w.revoked)
	case 4:
		req.Header.Set("Authorization", "Bearer lec_"+strings.Repeat("A", 43))
	case 5:
		req.AddCookie(&http.Cookie{Name: "__Host-lectern_session", Value: w.session})
	case 6:
		// A session cookie and a token together: each surface reads its own.
		req.AddCookie(&http.Cookie{Name: "__Host-lectern_session", Value: w.session})
		req.Header.Set("Authorization", "Bearer "+w.reader)
	case 7:
		id, err := credential.NewSecret()
		if err == nil {
			err = w.st.CreateSession(context.Background(), credential.HashSecret(id), w.cid.ID, w.csrf, time.Now().Add(time.Hour))
		}
		if err != nil {
			panic(err)
		}
		req.AddCookie(&http.Cookie{Name: "__Host-lectern_session", Value: id})
	}
}

// withCSRF appends the signed-in form's CSRF field to a form body.
func (w *fuzzWorld) withCSRF(body string) string {
	field := "csrf=" + masked(w.csrf)
	if body == "" {
		return field
	}
	return body + "&" + field
}

// checkAnswer is what every answer of the router must keep, whatever it was
// asked: never a 5xx for input a client chose, and on /api an error is the
// JSON object the wire promises.
func checkAnswer(t *testing.T, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s %q answered %d: %s", req.Method, req.URL.RequestURI(), rec.Code, rec.Body)
	}
	if !strings.HasPrefix(req.URL.Path, "/api/") || rec.Code < 400 {
		return
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %q: error %d as %q, not JSON: %s", req.Method, req.URL.RequestURI(), rec.Code, ct, rec.Body)
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
		t.Fatalf("%s %q: error %d without a message: %s", req.Method, req.URL.RequestURI(), rec.Code, rec.Body)
	}
}

var fuzzMethods = []string{"GET", "PUT", "POST", "DELETE", "HEAD", "PATCH", "OPTIONS"}

var fuzzContentTypes = []string{"", "application/json", "application/x-www-form-urlencoded", "text/csv", "multipart/form-data; boundary=x", "text/plain"}

// Every route of the composed router (API, Covers, web library, feed,
// userscripts, health) with fuzzed methods, paths, query strings,
// credentials, content types and bodies: the answer is never a 5xx and never
// a panic (the router's recoverer would make one a 500), and /api errors are
// JSON. The request goes through http.ReadRequest as a real connection's
// would; input the HTTP server itself refuses is not the router's to see.
func FuzzRouter(f *testing.F) {
	w := newFuzzWorld(f)
	put := `{"site":"asura","series_url":"https://asurascans.com/comics/solo-leveling-1a2b3c4d","chapter":"Chapter 4","chapter_number":4}`
	seeds := []struct {
		method uint8
		target string
		cred   uint8
		ctype  uint8
		body   string
	}{
		{0, "/api/bookmarks", 1, 0, ""},
		{0, "/api/bookmarks?kind=novel", 1, 0, ""},
		{0, "/api/bookmarks/asura:solo-leveling", 1, 0, ""},
		{1, "/api/bookmarks/asura:solo-leveling", 1, 1, put},
		{1, "/api/bookmarks/asura%3Asolo-leveling", 1, 1, `{"site":"asura","series_url":"https://asurascans.com/comics/x","cover":{"a":[1]}}`},
		{3, "/api/bookmarks/asura:solo-leveling", 1, 0, ""},
		{0, "/api/resolve?url=https%3A%2F%2Fasurascans.com%2Fcomics%2Fsolo-leveling-1a2b3c4d%2Fchapter%2F3", 1, 0, ""},
		{0, "/api/export?format=csv", 1, 0, ""},
		{2, "/api/import?format=kenmei&dry_run=true", 1, 3, "title,series_url,last_chapter_read\nx,https://asurascans.com/comics/x,3\n"},
		{2, "/api/import?format=lectern", 1, 1, `{"format":"lectern-export","version":1,"bookmarks":[]}`},
		{0, "/api/series/asura:solo-leveling/archive", 1, 0, ""},
		{2, "/api/series/asura:solo-leveling/archive", 1, 1, `{"scope":"first 3"}`},
		{0, "/api/series/asura:solo-leveling/archive.cbz?chapters=1-10,12.5", 1, 0, ""},
		{0, "/api/admin/status", 2, 0, ""},
		{2, "/api/admin/sites/asura/resume", 2, 0, ""},
		{2, "/api/admin/series/asura:solo-leveling/poll", 2, 0, ""},
		{0, "/api/admin/series/asura:solo-leveling/schedule", 2, 0, ""},
		{0, "/api/admin/sites/asura/schedule?limit=5", 2, 0, ""},
		{0, "/api/admin/jobs?state=discarded&limit=3", 2, 0, ""},
		{2, "/api/admin/jobs/1/retry", 2, 0, ""},
		{1, "/api/admin/archive/readers/2", 2, 1, `{"enabled":true,"max_chapters":5}`},
		{0, "/covers/" + strings.Repeat("ab", 32) + ".png", 0, 0, ""},
		{0, "/covers/..%2f..%2fetc%2fpasswd", 0, 0, ""},
		{0, "/userscripts/lectern-manga.user.js", 0, 0, ""},
		{0, "/readyz", 0, 0, ""},
		{0, "/feed.atom?key=nope", 0, 0, ""},
		{0, "/library/manga", 5, 0, ""},
		{0, "/series/asura:solo-leveling", 5, 0, ""},
		{2, "/library/remove", 5, 2, "key=asura%3Asolo-leveling&csrf=x"},
		{2, "/login", 0, 2, "name=ann&password=x&csrf=y"},
		{0, "/owner/readers", 5, 0, ""},
		{0, "/static/cinder.css", 0, 0, ""},
		{2, "/library/caught-up", 7, 2, "key=asura%3Asolo-leveling"},
		{2, "/settings/tokens", 7, 2, "name=phone"},
		{2, "/settings/notify", 7, 2, "kind=ntfy&url=https%3A%2F%2F127.0.0.1%2Ftopic"},
		{2, "/series/asura:solo-leveling/archive", 7, 2, "scope=first+3"},
		{2, "/settings/password", 7, 2, "current=x&password=yyyyyyyyyy&password2=yyyyyyyyyy"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.cred, s.ctype, s.body)
	}
	f.Fuzz(func(t *testing.T, method uint8, target string, cred, ctype uint8, body string) {
		if strings.ContainsAny(target, " \r\n") || target == "" {
			return // not a request line a connection can carry
		}
		ct := fuzzContentTypes[int(ctype)%len(fuzzContentTypes)]
		if cred%8 == 7 && ct == "application/x-www-form-urlencoded" {
			body = w.withCSRF(body)
		}
		raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: lectern.example.net\r\nContent-Length: %d\r\n\r\n%s",
			fuzzMethods[int(method)%len(fuzzMethods)], target, len(body), body)
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return // the HTTP server answers 400 before any handler
		}
		req.RemoteAddr = "192.0.2.10:4242"
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		w.credential(cred, req)
		rec := httptest.NewRecorder()
		w.h.ServeHTTP(rec, req)
		checkAnswer(t, req, rec)
	})
}

// A PUT of any key and any body by a Reader is answered without a 5xx, and
// whatever it accepts keeps the rules the web UI and other Readers rely on:
// the key is the registry's key of the stored series URL, and a chapter URL
// is an http(s) URL on that Site's hosts (it becomes a link).
func FuzzPutBookmark(f *testing.F) {
	w := newFuzzWorld(f)
	f.Add("asura:solo-leveling", `{"site":"asura","series_url":"https://asurascans.com/comics/solo-leveling-1a2b3c4d","chapter":"Chapter 9","chapter_url":"https://asurascans.com/comics/solo-leveling-1a2b3c4d/chapter/9"}`)
	f.Add("demonic:solo-max-level-newbie", `{"site":"demonic","series_url":"https://demonicscans.org/manga/Solo-Max-Level-Newbie","chapter":"Chapter 181","chapter_number":181.5}`)
	f.Add("lightnovelworld:shadow-slave-05122222", `{"site":"lightnovelworld","series_url":"https://www.lightnovelworld.com/novel/shadow-slave-05122222/chapter-2301","title":"Shadow Slave","chapter":"Chapter 2301"}`)
	f.Add("novelfull:mechanic", `{"site":"novelfull","series_url":"https://novelfull.com/mechanic.html","chapter":"x","chapter_url":"javascript:alert(1)"}`)
	f.Add("comix:x", `{"site":"comix","series_url":"https://comix.to/title/5551985-x","chapter":"1e400","chapter_number":-1}`)
	f.Add("kagane:y", `{"site":"kagane","series_url":"https://kagane.to/series/y","cover":"https://evil.example/x.png","chapter":"\u0000"}`)
	f.Fuzz(func(t *testing.T, key, body string) {
		target := "/api/bookmarks/" + url.PathEscape(key)
		req := httptest.NewRequest(http.MethodPut, target, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+w.reader)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		w.h.ServeHTTP(rec, req)
		checkAnswer(t, req, rec)
		if rec.Code != http.StatusOK && rec.Code != http.StatusCreated {
			return
		}
		var b apptest.Bookmark
		if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
			t.Fatalf("accepted PUT answered %s", rec.Body)
		}
		ref, err := latest.Default().Resolve(b.SeriesURL)
		if err != nil || ref.Key != b.Key || b.Key != key {
			t.Fatalf("PUT %q stored key %q for series URL %q (registry: %+v, %v)", key, b.Key, b.SeriesURL, ref, err)
		}
		if b.ChapterURL != "" {
			u, err := url.Parse(b.ChapterURL)
			site, _ := latest.Default().Lookup(b.Site)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || site == nil || !site.HasHost(strings.ToLower(u.Hostname())) {
				t.Fatalf("PUT %q stored chapter URL %q, not on %s", key, b.ChapterURL, b.Site)
			}
		}
		if b.Cover != nil && *b.Cover != "" {
			t.Fatalf("a client's cover reached the wire: %q", *b.Cover)
		}
	})
}

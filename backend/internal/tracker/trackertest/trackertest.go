// Package trackertest stands loopback servers in for AniList, MyAnimeList
// and MangaUpdates in tests, answering the documented request and response
// shapes: AniList's GraphQL endpoint (Viewer, MediaList,
// SaveMediaListEntry, MediaListCollection, Page media search) and OAuth
// token endpoint; MyAnimeList's API v2 (users/@me, manga/{id} with
// my_list_status, PATCH my_list_status, users/@me/mangalist, manga search)
// and OAuth2 with PKCE; MangaUpdates' API v1 (account login and profile,
// lists/series, lists/series/update, lists/{id}/search, series/search).
//
// A Fake keeps the Reader's list, the tokens it issued, a record of every
// request, and failures a test queues (a 429 with Retry-After, a 500, a
// 401 for a revoked token). It is imported only by _test.go files.
package trackertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Entry is one list entry as a fake tracker holds it, in the tracker's own
// status words (AniList CURRENT, MyAnimeList reading, MangaUpdates list 0).
type Entry struct {
	Progress int
	Status   string
	Title    string
	// Links are the entry's external links (AniList's externalLinks).
	Links []string
}

// Request is one request that reached a fake.
type Request struct {
	Method, Path string
	// Op is what it asked: the GraphQL operation's field (Viewer,
	// MediaList, SaveMediaListEntry, ...) or "METHOD path".
	Op   string
	Auth string
	Body string
	Form url.Values
}

// Failure is an answer a test queues for the next requests of an
// operation ("" for any).
type Failure struct {
	Op         string
	Status     int
	RetryAfter string
	Body       string
}

// Fake is one fake tracker.
type Fake struct {
	Name string
	URL  string // the server's base URL
	// Token is the access token the fake accepts (a session token for
	// MangaUpdates); Refresh its refresh token.
	Token, Refresh string
	UserID         int64
	UserName       string
	// Password is MangaUpdates' account password.
	Password string
	// Catalog answers searches: id → title.
	Catalog map[int64]string
	// ClientID and ClientSecret are what the OAuth token endpoint expects.
	ClientID, ClientSecret string

	mu       sync.Mutex
	entries  map[int64]*Entry
	requests []Request
	failures []Failure
	codes    map[string]code // issued authorisation codes
	t        testing.TB
}

type code struct {
	challenge, redirect string
}

func newFake(t testing.TB, name string, h func(f *Fake) http.Handler) *Fake {
	f := &Fake{Name: name, Token: name + "-access-token", Refresh: name + "-refresh-token", UserID: 4242, UserName: "reader-on-" + name,
		Password: "tracker password", Catalog: map[int64]string{}, ClientID: name + "-client", ClientSecret: name + "-secret",
		entries: map[int64]*Entry{}, codes: map[string]code{}, t: t}
	srv := httptest.NewServer(h(f))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Set puts an entry on the Reader's list.
func (f *Fake) Set(id int64, e Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := e
	f.entries[id] = &c
}

// Get returns an entry of the Reader's list.
func (f *Fake) Get(id int64) (Entry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// Fail queues failures: each answers one request of its Op.
func (f *Fake) Fail(fs ...Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, fs...)
}

// Revoke makes the fake refuse the current tokens, as a revoked token is.
func (f *Fake) Revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Token, f.Refresh = "revoked-"+f.Token, "revoked-"+f.Refresh
}

// Requests returns what reached the fake, oldest first.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Count counts the requests of an operation ("" for all).
func (f *Fake) Count(op string) int {
	n := 0
	for _, r := range f.Requests() {
		if op == "" || r.Op == op {
			n++
		}
	}
	return n
}

// Reset forgets the requests recorded so far.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = nil
}

// IssueCode records an authorisation code the fake's authorisation page
// would give for a code challenge and redirect URI, as a test's stand-in
// for the Reader approving the link.
func (f *Fake) IssueCode(challenge, redirect string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := fmt.Sprintf("code-%d", len(f.codes)+1)
	f.codes[c] = code{challenge: challenge, redirect: redirect}
	return c
}

// record notes a request and answers a queued failure for it, if any.
func (f *Fake) record(w http.ResponseWriter, r *http.Request, op, body string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	rq := Request{Method: r.Method, Path: r.URL.Path, Op: op, Auth: r.Header.Get("Authorization"), Body: body}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		rq.Form, _ = url.ParseQuery(body)
	}
	f.requests = append(f.requests, rq)
	for i, fl := range f.failures {
		if fl.Op == "" || fl.Op == op {
			f.failures = append(f.failures[:i], f.failures[i+1:]...)
			if fl.RetryAfter != "" {
				w.Header().Set("Retry-After", fl.RetryAfter)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(fl.Status)
			_, _ = io.WriteString(w, fl.Body)
			return true
		}
	}
	return false
}

func (f *Fake) authorized(r *http.Request) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return r.Header.Get("Authorization") == "Bearer "+f.Token
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func readBody(r *http.Request) string {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	return string(b)
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

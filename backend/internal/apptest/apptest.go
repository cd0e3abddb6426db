// Package apptest builds Lectern for a test as it runs in production: the
// composed server (server.New) over a fresh database (pgtest), its fetchers'
// network seams on the fake network (fakenet, with the fixture Sites when
// asked), a loopback HTTP server in front of the router, and River working
// its jobs when the test asks for workers. It also holds what such tests
// share: Readers with passwords and API tokens, in-process requests, a
// browser stand-in over the loopback server, counts of jobs, waiting.
//
// A test gets a fresh App from New, River's "test bundle" with New as its
// setup: nothing is shared between tests, so they may run in parallel.
//
// apptest imports server, so tests inside package server cannot use it;
// its external tests (package server_test) can.
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Password is every test Reader's password.
const Password = "correct horse battery"

// Options are what differ between the tests' servers. The zero value is a
// replica that queues jobs and runs none, at the loopback server's URL.
type Options struct {
	// Workers is WORKERS: 0 queues jobs and runs none, as most request
	// tests want; more runs River's workers, started before New returns
	// (unless DeferJobs) and stopped when the test ends.
	Workers int
	// DeferJobs leaves the workers stopped until StartJobs, for a test that
	// prepares the queue first.
	DeferJobs bool
	// PublicBaseURL is PUBLIC_BASE_URL; default the loopback server's URL,
	// as in a deployment.
	PublicBaseURL string
	// Config edits the configuration before the server is built.
	Config func(*config.Config)
	// Seams edits the fetchers' seams, which New points at Net.
	Seams func(*server.Seams)
	// Net, when set, is the fake network to use (one the test started the
	// fixture Sites on first); default a fresh one.
	Net *fakenet.Net
	// Sites, when set, serves the fixture Sites (fixturesites) on Net with
	// these options (their Net is filled in).
	Sites *fixturesites.Options
	// Logger receives the server's log; default discards.
	Logger *slog.Logger
	// Version is the build version the server reports; default "test".
	Version string
	// DatabaseURL, when set, is the (migrated) database to use, e.g. one a
	// restore filled; default a fresh one.
	DatabaseURL string
}

// App is one test's Lectern.
type App struct {
	T      testing.TB
	Store  *store.Store
	Server *server.Server
	// Net is the fake public network behind the fetchers: a test sets its
	// answers and reads what reached it.
	Net *fakenet.Net
	// Sites are the fixture Sites on Net; nil unless Options.Sites.
	Sites *fixturesites.Server
	// Config and Seams are what the server was built with.
	Config config.Config
	Seams  *server.Seams
	// DatabaseURL is the test database, for a second replica or a process.
	DatabaseURL string
	// URL is the loopback HTTP server in front of the router.
	URL string

	opts Options
}

// New builds and starts one test's Lectern; everything it starts ends with
// the test.
func New(tb testing.TB, o ...Options) *App {
	tb.Helper()
	var opts Options
	if len(o) > 0 {
		opts = o[0]
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "test"
	}
	a := &App{T: tb, Net: opts.Net, DatabaseURL: opts.DatabaseURL, opts: opts}
	if a.DatabaseURL == "" {
		a.DatabaseURL = pgtest.NewURL(tb)
	}
	if a.Net == nil {
		a.Net = fakenet.New(tb)
	}
	if opts.Sites != nil {
		so := *opts.Sites
		so.Net = a.Net
		s, err := fixturesites.Start(so)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = s.Close() })
		a.Sites = s
	}

	var h http.Handler = http.NotFoundHandler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	tb.Cleanup(ts.Close)
	a.URL = ts.URL

	base := opts.PublicBaseURL
	if base == "" {
		base = ts.URL
	}
	a.Config = config.Config{PublicBaseURL: base, DataDir: tb.TempDir(), Workers: opts.Workers,
		PollInterval: time.Hour, UserAgent: "LecternTest/1", ListCacheBytes: config.DefaultListCacheBytes}
	if opts.Config != nil {
		opts.Config(&a.Config)
	}
	a.Config.Fill()
	a.Seams = &server.Seams{Resolver: a.Net, Dial: a.Net.DialContext, RootCAs: a.Net.RootCAs(), RiverPollInterval: 50 * time.Millisecond}
	if opts.Seams != nil {
		opts.Seams(a.Seams)
	}
	a.start()
	h = a.Server.Handler()
	return a
}

// Replica builds another server on the same database, volume, network and
// configuration, as a restarted process or a second replica is; its
// workers start unless Options.DeferJobs. Its requests go through its own
// loopback server.
func (a *App) Replica() *App {
	a.T.Helper()
	b := *a
	var h http.Handler = http.NotFoundHandler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	a.T.Cleanup(ts.Close)
	b.URL = ts.URL
	b.start()
	h = b.Server.Handler()
	return &b
}

// start opens the App's own pool on the database and builds the server.
func (a *App) start() {
	tb := a.T
	st, err := store.Open(context.Background(), a.DatabaseURL)
	require.NoError(tb, err)
	tb.Cleanup(st.Close)
	srv, err := server.New(context.Background(), server.Deps{Config: a.Config, Store: st, Version: a.opts.Version,
		Logger: a.opts.Logger, Seams: a.Seams})
	require.NoError(tb, err)
	a.Store, a.Server = st, srv
	if a.opts.Workers > 0 && !a.opts.DeferJobs {
		a.StartJobs()
	}
}

// StartJobs starts River's workers; they stop when the test ends.
func (a *App) StartJobs() {
	a.T.Helper()
	require.NoError(a.T, a.Server.StartJobs(context.Background()))
	srv := a.Server
	a.T.Cleanup(func() { _ = srv.StopJobs(context.Background()) })
}

// Handler is the composed router.
func (a *App) Handler() http.Handler { return a.Server.Handler() }

// Reader creates a Reader with Password.
func (a *App) Reader(name string, owner bool) store.Reader {
	a.T.Helper()
	hash, err := credential.HashPassword(Password)
	require.NoError(a.T, err)
	r, err := a.Store.CreateReader(context.Background(), name, hash, owner)
	require.NoError(a.T, err)
	return r
}

// NewToken gives r a live API token and returns it.
func (a *App) NewToken(r store.Reader) string {
	a.T.Helper()
	token, hash, err := credential.NewToken()
	require.NoError(a.T, err)
	_, err = a.Store.CreateToken(context.Background(), r.ID, "test", hash)
	require.NoError(a.T, err)
	return token
}

// Token creates a Reader with one live API token and returns the token.
func (a *App) Token(name string, owner bool) string {
	a.T.Helper()
	return a.NewToken(a.Reader(name, owner))
}

// Response is an answer of the router, as Do gives it.
type Response struct {
	Code   int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.Body, v), "body: %s", r.Body)
}

// ErrorMsg is the body's "error", which must be there.
func (r Response) ErrorMsg(t testing.TB) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	r.JSON(t, &e)
	require.NotEmpty(t, e.Error)
	return e.Error
}

// Do sends one request through the router in process: body is a string,
// bytes or a value sent as JSON; token, when set, is the bearer token; hdr
// are header name and value pairs.
func (a *App) Do(method, path, token string, body any, hdr ...string) Response {
	a.T.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	case []byte:
		rd = bytes.NewReader(v)
	default:
		buf, err := json.Marshal(v)
		require.NoError(a.T, err)
		rd = bytes.NewReader(buf)
	}
	req := httptest.NewRequest(method, path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, req)
	return Response{Code: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// Count runs a count query on the test database.
func (a *App) Count(sql string, args ...any) int {
	a.T.Helper()
	var n int
	require.NoError(a.T, a.Store.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// JobsDone reports whether no job of kind is queued or running.
func (a *App) JobsDone(kind string) bool {
	a.T.Helper()
	return a.Count(`SELECT count(*) FROM river_job WHERE kind = $1 AND state IN ('available', 'pending', 'running', 'retryable')`, kind) == 0
}

// JobCount counts the jobs of kind in state.
func (a *App) JobCount(kind, state string) int {
	a.T.Helper()
	return a.Count(`SELECT count(*) FROM river_job WHERE kind = $1 AND state = $2`, kind, state)
}

// Eventually waits for cond with a generous deadline: a slow machine never
// fails the test, a broken build never hangs it.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 30*time.Second, 25*time.Millisecond, what)
}

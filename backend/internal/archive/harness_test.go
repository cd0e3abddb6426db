package archive_test

import (
	"context"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		// This binary was re-executed as an archive worker process.
		os.Exit(workerMain())
	}
	os.Exit(pgtest.Main(m))
}

// rigOptions are what differ between the archive services of the tests:
// setup's and the worker processes'.
type rigOptions struct {
	// Paces overrides Sites' intervals; every other Site is paced at zero.
	Paces map[string]time.Duration
	// JobTimeout bounds one attempt at a chapter.
	JobTimeout time.Duration
	// MaxRunning and MaxPerSite bound the chapters archived at once.
	MaxRunning, MaxPerSite int
}

// network is the fake public network as the archive's fetchers reach it:
// the test's own (fakenet.Net) or, in a worker process, the parent's
// (fakenet.Client).
type network interface {
	gate.Resolver
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	RootCAs() *x509.CertPool
}

// newService builds the archive over the real parts, as the server does:
// the plain Site fetcher pinned and paced through the Postgres pacing gate
// and dialling through the destination gate, whose resolver and dialer are
// the fake network's, where the fixture Site answers.
func newService(st *store.Store, dir string, n network, o rigOptions, logger *slog.Logger) (*archive.Service, *river.Workers, error) {
	dest := gate.New(gate.Options{
		Resolver: n, Dial: n.DialContext, RootCAs: n.RootCAs(),
		Timeout: 20 * time.Second, MaxBytes: 4 << 20,
	})
	reg := latest.Default()
	paces := fetch.Paces{}
	for _, s := range reg.Sites() {
		paces[s.Name] = 0
	}
	for k, v := range o.Paces {
		paces[k] = v
	}
	tree := fetch.New(fetch.Options{Registry: reg, Paces: paces, States: st, Pacer: pacing.New(st, pacing.Options{Jitter: -1}),
		Gate: dest, Plain: fetch.PlainOptions{Timeout: 20 * time.Second}, RootCAs: n.RootCAs()})
	svc := &archive.Service{
		Store: st, Pages: &blob.FS{Dir: dir}, Fetch: tree.Sites, Registry: reg, Policy: tree.Policy,
		Images: dest, Pacer: tree.Pacer, Logger: logger, BaseURL: "https://lectern.test",
		JobTimeout: o.JobTimeout, MaxRunning: o.MaxRunning, MaxPerSite: o.MaxPerSite,
		// Short, so a test does not wait out a snooze that a wake missed.
		BusySnooze: 200 * time.Millisecond,
	}
	workers := river.NewWorkers()
	if err := svc.AddWorkers(workers); err != nil {
		return nil, nil, err
	}
	return svc, workers, nil
}

// testBundle is one test's archive, as setup builds it: the archive's workers on a River client over
// the fixture Site, as a worker replica runs them, beside the composed
// server (apptest) over the same database and archive directory with no
// workers of its own, as a web replica serves the API and the web UI. A
// request made through either surface is worked here.
type testBundle struct {
	t     *testing.T
	st    *store.Store
	pool  *pgxpool.Pool
	site  *site
	svc   *archive.Service
	river *river.Client[pgx.Tx]
	dir   string
	app   *apptest.App
}

func quietLogger() *slog.Logger {
	if os.Getenv("ARCHIVE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	app := apptest.New(t, apptest.Options{Logger: quietLogger()})
	st := app.Store
	s := newSite(t, app.Net)
	// The server's archive reads its pages where the worker writes them.
	dir := filepath.Join(app.Config.ArchiveDir, "pages")
	svc, workers, err := newService(st, dir, app.Net, rigOptions{}, quietLogger())
	require.NoError(t, err)
	svc.BaseURL = app.URL
	client, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Workers:           workers,
		FetchCooldown:     20 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		Logger:            quietLogger(),
	})
	require.NoError(t, err)
	svc.River = client
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		stopCtx, stop := context.WithTimeout(context.Background(), 20*time.Second)
		defer stop()
		_ = client.StopAndCancel(stopCtx)
		cancel()
	})
	return &testBundle{t: t, st: st, pool: st.Pool, site: s, svc: svc, river: client, dir: dir, app: app}
}

// reader creates a Reader, allowed to archive when enabled, with an API
// token.
func (r *testBundle) reader(name string, owner, enabled bool) (store.Reader, string) {
	r.t.Helper()
	rd := r.app.Reader(name, owner)
	if enabled {
		require.NoError(r.t, r.st.SetArchiveReader(context.Background(), rd.ID, true, nil))
	}
	return rd, r.app.NewToken(rd)
}

// hold gives a Reader a Bookmark on a Series (created as a new Series is),
// with the title the Poll would have stored.
func (r *testBundle) hold(rd store.Reader, seriesURL, title string) string {
	r.t.Helper()
	ref, err := latest.Default().Resolve(seriesURL)
	require.NoError(r.t, err)
	_, err = r.st.PutBookmarkKeepProgress(context.Background(), rd.ID,
		store.NewSeries{Key: ref.Key, Site: ref.Site, Kind: string(ref.Kind), SeriesURL: ref.SeriesURL}, "")
	require.NoError(r.t, err)
	_, err = r.pool.Exec(context.Background(), `UPDATE series SET title = $2 WHERE key = $1`, ref.Key, title)
	require.NoError(r.t, err)
	return ref.Key
}

// request asks for an archive as the Reader.
func (r *testBundle) request(rd store.Reader, key, scope string) store.ArchiveRequest {
	r.t.Helper()
	sc, err := archive.ParseScope(scope)
	require.NoError(r.t, err)
	req, err := r.svc.Request(context.Background(), rd, key, sc)
	require.NoError(r.t, err)
	return req
}

// waitFor polls cond until it holds; the deadline only keeps a broken test
// from hanging.
func (r *testBundle) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s; jobs: %s", what, r.jobsDump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled waits until the request is resolved and no chapter of the Series
// is queued any more.
func (r *testBundle) settled(req store.ArchiveRequest) {
	r.t.Helper()
	r.waitFor("request "+req.SeriesKey+" "+req.Scope+" to settle", func() bool {
		got, err := r.st.ArchiveRequestByID(context.Background(), req.ID)
		require.NoError(r.t, err)
		if got.State == store.ArchiveQueued {
			return false
		}
		return r.count(`SELECT count(*) FROM archive_chapters WHERE series_key = $1 AND state = 'queued'`, req.SeriesKey) == 0
	})
}

func (r *testBundle) count(sql string, args ...any) int {
	r.t.Helper()
	var n int
	require.NoError(r.t, r.pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func (r *testBundle) jobsDump() string {
	rows, err := r.pool.Query(context.Background(), `SELECT id, kind, state::text, attempt, coalesce(errors::text, ''), args::text FROM river_job ORDER BY id`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	out := ""
	for rows.Next() {
		var id int64
		var attempt int
		var kind, state, errs, args string
		if err := rows.Scan(&id, &kind, &state, &attempt, &errs, &args); err != nil {
			return err.Error()
		}
		out += "\n  " + kind + " " + state + " attempt " + strconv.Itoa(attempt) + " " + args + " " + errs
	}
	var chapters string
	_ = r.pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(url || ' ' || state || ' ' || problem || ' ' || detail, E'\n  '), '') FROM archive_chapters`).Scan(&chapters)
	return out + "\n chapters:\n  " + chapters
}

// chapter finds a chapter row by its URL.
func (r *testBundle) chapter(url string) store.ArchiveChapter {
	r.t.Helper()
	c, err := r.st.ArchiveChapterByURL(context.Background(), url)
	require.NoError(r.t, err, "no archive row for %s", url)
	return c
}

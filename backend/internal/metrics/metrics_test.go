package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/metrics"
	"github.com/lectern-reader/lectern/backend/internal/metrics/metricstest"
	"github.com/lectern-reader/lectern/backend/internal/observe"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var sites = []string{"asura", "demonic", "novelfull"}

// syncBuffer is a log destination safe for River's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	return out
}

// testArgs is a job about a Series; mode says how the worker ends it.
type testArgs struct {
	Key    string `json:"key,omitempty"`
	Series string `json:"series,omitempty"` // the archive jobs' name for it
	Mode   string `json:"mode"`
}

func (testArgs) Kind() string { return "test_job" }

type testWorker struct {
	river.WorkerDefaults[testArgs]
	log *slog.Logger
}

func refusal(class string) error {
	return fmt.Errorf("fetch cover: %w", &gate.RefusedError{Class: class, Target: "https://10.0.0.1/x.jpg"})
}

func (w *testWorker) Work(ctx context.Context, job *river.Job[testArgs]) error {
	w.log.InfoContext(ctx, "working", "mode", job.Args.Mode)
	switch job.Args.Mode {
	case "ok":
		return nil
	case "error":
		return errors.New("the page did not load")
	case "refuse":
		return refusal(gate.ClassPrivate)
	case "snooze":
		return river.JobSnooze(time.Hour)
	case "cancel":
		return river.JobCancel(errors.New("unknown site"))
	case "outcome":
		metrics.SetOutcome(ctx, "not_modified")
		return nil
	case "bad_outcome":
		metrics.SetOutcome(ctx, "Not A Code!")
		return nil
	case "noted":
		// A worker that records the refusal on the Series and ends well;
		// it is counted once, not again from an error.
		metrics.NoteRefusal(ctx, refusal(gate.ClassNotImage))
		return refusal(gate.ClassNotImage)
	case "noted_ok":
		// Recorded on the Series, the job ends well: still a refusal.
		metrics.NoteRefusal(ctx, refusal(gate.ClassTooLarge))
		return nil
	case "panic":
		panic("boom")
	}
	return fmt.Errorf("unknown mode %q", job.Args.Mode)
}

// runJobs works jobs on a real River client with the middleware installed,
// waiting until every one of them has been worked once.
func runJobs(t *testing.T, pool *pgxpool.Pool, m *metrics.Metrics, logger *slog.Logger, jobs []testArgs) {
	t.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, &testWorker{log: logger})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:     slog.New(slog.DiscardHandler),
		Queues:     map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:    workers,
		Middleware: []rivertype.Middleware{m.JobMiddleware()},
		// A short fetch interval: the test waits for its jobs.
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     10 * time.Millisecond,
	})
	require.NoError(t, err)
	events, cancelSub := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed,
		river.EventKindJobSnoozed, river.EventKindJobCancelled)
	defer cancelSub()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, client.Start(ctx))
	defer func() {
		stopCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
		defer stop()
		require.NoError(t, client.Stop(stopCtx))
	}()
	for _, a := range jobs {
		_, err := client.Insert(ctx, a, &river.InsertOpts{MaxAttempts: 1})
		require.NoError(t, err)
	}
	for range jobs {
		select {
		case <-events:
		case <-ctx.Done():
			t.Fatal("jobs were not all worked within a minute")
		}
	}
}

func TestJobMiddlewareTimesEveryJobBySiteAndOutcome(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	var logs syncBuffer
	logger := slog.New(observe.LogHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	m := metrics.New(metrics.Options{Sites: sites, Version: "test", Logger: logger, RefusalClass: gate.Class})

	runJobs(t, pool, m, logger, []testArgs{
		{Key: "asura:solo-leveling", Mode: "ok"},
		{Series: "asura:solo-leveling-2", Mode: "ok"},
		{Key: "demonic:abc", Mode: "error"},
		{Key: "asura:x", Mode: "refuse"},
		{Key: "novelfull:a-novel", Mode: "snooze"},
		{Key: "novelfull:b-novel", Mode: "cancel"},
		{Key: "asura:y", Mode: "outcome"},
		{Key: "asura:z", Mode: "bad_outcome"},
		{Key: "demonic:noted", Mode: "noted"},
		{Key: "novelfull:noted", Mode: "noted_ok"},
		{Key: "nosuchsite:thing", Mode: "ok"},
		{Mode: "ok"},
		{Key: "asura:p", Mode: "panic"},
	})

	s := metricstest.Serve(t, m.Handler())
	job := "lectern_job_duration_seconds"
	require.Equal(t, 2.0, s.Value(t, job, "kind", "test_job", "site", "asura", "outcome", "ok"))
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "demonic", "outcome", "error"))
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "asura", "outcome", "refused"))
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "novelfull", "outcome", "snoozed"))
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "novelfull", "outcome", "cancelled"))
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "asura", "outcome", "not_modified"))
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "asura", "outcome", "other"), "an outcome that is not a code is not a label")
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "demonic", "outcome", "refused"))
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "other", "outcome", "ok"), "an unknown Site is not a label")
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "none", "outcome", "ok"))
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "asura", "outcome", "panic"))
	require.Len(t, s.Find(job), 12)

	refused := "lectern_destination_refusals_total"
	require.Equal(t, 1.0, s.Value(t, refused, "class", "private", "via", "test_job"))
	require.Equal(t, 1.0, s.Value(t, refused, "class", "not_image", "via", "test_job"), "a noted refusal is counted once")
	require.Equal(t, 1.0, s.Value(t, refused, "class", "too_large", "via", "test_job"))
	require.Equal(t, 1.0, s.Value(t, job, "kind", "test_job", "site", "novelfull", "outcome", "refused"))
	require.Equal(t, 1.0, s.Value(t, "lectern_build_info", "version", "test"))

	// Every line a worker logs with the job's context names the job, and,
	// for a job about a Series, the Series key and its Site.
	var working int
	for _, l := range logs.lines(t) {
		if l["msg"] != "working" {
			continue
		}
		working++
		require.Equal(t, "test_job", l["job"], l)
		require.NotZero(t, l["job_id"], l)
		if l["mode"] == "refuse" {
			require.Equal(t, "asura:x", l["series"], l)
			require.Equal(t, "asura", l["site"], l)
		}
	}
	require.Equal(t, 13, working)
}

func TestCountRefusalsWrapsADialer(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{Sites: sites, RefusalClass: gate.Class})
	gate := gate.New(gate.Options{})
	dial := m.CountRefusals(metrics.ViaBrowser, gate.DialContext)
	// The gate refuses loopback and private addresses before connecting.
	for _, addr := range []string{"127.0.0.1:443", "10.1.2.3:443", "192.168.0.1:443"} {
		c, err := dial(context.Background(), "tcp", addr)
		require.Error(t, err)
		require.Nil(t, c)
	}
	s := metricstest.Serve(t, m.Handler())
	require.Equal(t, 1.0, s.Value(t, "lectern_destination_refusals_total", "class", "loopback", "via", "browser_proxy"))
	require.Equal(t, 2.0, s.Value(t, "lectern_destination_refusals_total", "class", "private", "via", "browser_proxy"))
}

// The real pacing gate, wrapped: every request it lets go is counted by
// host, and hosts outside the registry share one series.
func TestPacingWaitsByHost(t *testing.T) {
	t.Parallel()
	st := store.New(pgtest.New(t))
	m := metrics.New(metrics.Options{Sites: sites, HostLabel: func(h string) string {
		if h == "asuracomic.net" {
			return h
		}
		return ""
	}})
	gate := m.TimePacing(pacing.New(st, pacing.Options{Jitter: -1}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, host := range []string{"asuracomic.net", "asuracomic.net", "cdn.example.org", "img.example.org"} {
		require.NoError(t, gate.Wait(ctx, host, 50*time.Millisecond))
	}
	s := metricstest.Serve(t, m.Handler())
	require.Equal(t, 2.0, s.Value(t, "lectern_pacing_wait_seconds", "host", "asuracomic.net"))
	require.Equal(t, 2.0, s.Value(t, "lectern_pacing_wait_seconds", "host", "other"))
	require.Len(t, s.Find("lectern_pacing_wait_seconds"), 2)
}

func TestRequestsByRoutePatternAndStatus(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{})
	m.ObserveRequest("/api/bookmarks/{key}", "PUT", 201, 3*time.Millisecond)
	m.ObserveRequest("/api/bookmarks/{key}", "PUT", 201, 5*time.Millisecond)
	m.ObserveRequest("", "GET", 404, time.Millisecond)
	m.ObserveRequest("/", "BREW", 405, time.Millisecond)
	s := metricstest.Serve(t, m.Handler())
	require.Equal(t, 2.0, s.Value(t, "lectern_http_requests_total", "route", "/api/bookmarks/{key}", "method", "PUT", "code", "201"))
	require.Equal(t, 2.0, s.Value(t, "lectern_http_request_duration_seconds", "route", "/api/bookmarks/{key}", "method", "PUT"))
	require.Equal(t, 1.0, s.Value(t, "lectern_http_requests_total", "route", "unmatched", "method", "GET", "code", "404"))
	require.Equal(t, 1.0, s.Value(t, "lectern_http_requests_total", "route", "/", "method", "other", "code", "405"))
}

// The state the Poll keeps in Postgres is read at scrape time.
func TestScrapeReadsQueueBackoffPacingAndChanges(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	m := metrics.New(metrics.Options{DB: pool, Sites: sites, HostLabel: func(h string) string {
		if h == "asuracomic.net" || h == "demonicscans.org" {
			return h
		}
		return ""
	}})

	// Queue: real River inserts, no workers.
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for _, a := range []testArgs{{Key: "asura:a", Mode: "ok"}, {Key: "asura:b", Mode: "ok"}} {
		_, err := client.Insert(ctx, a, nil)
		require.NoError(t, err)
	}
	_, err = client.Insert(ctx, testArgs{Key: "asura:c", Mode: "ok"}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)

	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	exec(`INSERT INTO site_state (site, paused_until, refusals, last_problem) VALUES
		('asura', now() + interval '1 hour', 3, 'http_429'), ('demonic', now() - interval '1 hour', 0, '')`)
	exec(`INSERT INTO pacing_hosts (host, next_at) VALUES
		('asuracomic.net', now() + interval '30 seconds'), ('demonicscans.org', now() - interval '1 minute'),
		('cdn1.example.org', now() + interval '5 seconds'), ('cdn2.example.org', now() + interval '9 seconds')`)
	exec(`INSERT INTO series (key, site, kind, series_url) VALUES
		('asura:one', 'asura', 'manga', 'https://asuracomic.net/series/one'),
		('novelfull:two', 'novelfull', 'novel', 'https://novelfull.com/two.html')`)
	exec(`INSERT INTO latest_chapter_history (series_key, label) VALUES ('asura:one', 'Chapter 1')`)

	s := metricstest.Serve(t, m.Handler())
	require.Equal(t, 1.0, s.Value(t, "lectern_database_up"))
	require.Equal(t, 2.0, s.Value(t, "lectern_queue_jobs", "kind", "test_job", "state", "available"))
	require.Equal(t, 1.0, s.Value(t, "lectern_queue_jobs", "kind", "test_job", "state", "scheduled"))
	require.Equal(t, 0.0, s.Value(t, "lectern_queue_jobs", "kind", "test_job", "state", "running"))

	require.Equal(t, 1.0, s.Value(t, "lectern_site_backoff", "site", "asura"))
	require.Equal(t, 0.0, s.Value(t, "lectern_site_backoff", "site", "demonic"))
	require.Equal(t, 0.0, s.Value(t, "lectern_site_backoff", "site", "novelfull"), "a Site without a row is not backed off")
	remaining := s.Value(t, "lectern_site_backoff_remaining_seconds", "site", "asura")
	require.Greater(t, remaining, 3000.0)
	require.LessOrEqual(t, remaining, 3600.0)
	require.Equal(t, 3.0, s.Value(t, "lectern_site_refusals", "site", "asura"))

	ahead := s.Value(t, "lectern_pacing_backlog_seconds", "host", "asuracomic.net")
	require.Greater(t, ahead, 20.0)
	require.Equal(t, 0.0, s.Value(t, "lectern_pacing_backlog_seconds", "host", "demonicscans.org"))
	other := s.Value(t, "lectern_pacing_backlog_seconds", "host", "other")
	require.Greater(t, other, 6.0, "hosts outside the registry share one series, the largest backlog")
	require.Len(t, s.Find("lectern_pacing_backlog_seconds"), 3)

	// Changes count from the first scrape on: the row before it is not
	// counted, the ones after are, by Site.
	require.Equal(t, 0.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "asura"))
	exec(`INSERT INTO latest_chapter_history (series_key, label) VALUES ('asura:one', 'Chapter 2'), ('novelfull:two', 'Chapter 9')`)
	s = metricstest.Serve(t, m.Handler())
	require.Equal(t, 1.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "asura"))
	require.Equal(t, 1.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "novelfull"))
	require.Equal(t, 0.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "demonic"))
}

// A row whose transaction commits after a later row was already counted is
// still counted, once.
func TestLatestChapterChangesCountRowsCommittedOutOfOrder(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	m := metrics.New(metrics.Options{DB: pool, Sites: sites})
	// Two Series of one Site: a history row updates its Series row
	// (migration 0157), so two writers of one Series take turns, as two
	// polls of one Series do; two Series' rows commit in any order.
	_, err := pool.Exec(ctx, `INSERT INTO series (key, site, kind, series_url) VALUES
		('asura:one', 'asura', 'manga', 'https://asuracomic.net/series/one'),
		('asura:two', 'asura', 'manga', 'https://asuracomic.net/series/two')`)
	require.NoError(t, err)
	metricstest.Serve(t, m.Handler()) // the first scrape sets the starting point

	slow, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer slow.Rollback(ctx) //nolint:errcheck // committed below
	_, err = slow.Exec(ctx, `INSERT INTO latest_chapter_history (series_key, label) VALUES ('asura:one', 'Chapter 1')`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO latest_chapter_history (series_key, label) VALUES ('asura:two', 'Chapter 2')`)
	require.NoError(t, err)

	s := metricstest.Serve(t, m.Handler())
	require.Equal(t, 1.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "asura"))
	require.NoError(t, slow.Commit(ctx))
	s = metricstest.Serve(t, m.Handler())
	require.Equal(t, 2.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "asura"))
	s = metricstest.Serve(t, m.Handler())
	require.Equal(t, 2.0, s.Value(t, "lectern_latest_chapter_changes_total", "site", "asura"), "counted once")
}

// A database that cannot be read leaves its series out and says so; the
// process's own series are still served.
func TestScrapeSurvivesAnUnreachableDatabase(t *testing.T) {
	t.Parallel()
	// A pool on a port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cfg, err := pgxpool.ParseConfig("postgres://nobody@" + addr + "/none?sslmode=disable&connect_timeout=2")
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	defer pool.Close()

	m := metrics.New(metrics.Options{DB: pool, Sites: sites, Logger: slog.New(slog.DiscardHandler)})
	m.ObserveRequest("/healthz", "GET", 200, time.Millisecond)
	s := metricstest.Serve(t, m.Handler())
	require.Equal(t, 0.0, s.Value(t, "lectern_database_up"))
	require.Equal(t, 1.0, s.Value(t, "lectern_http_requests_total", "route", "/healthz", "method", "GET", "code", "200"))
	require.Empty(t, s.Find("lectern_queue_jobs"))
}

package poll

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/latest/latesttest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The Poll's tests run on a real Postgres and a real River client with its
// real workers; only the Site fetcher is a fake (the seam), serving bodies
// of small fake Sites registered for the test.

var siteSeq atomic.Int64

// newSite adds a fake Site (latesttest.Site) to the env's registry.
func (e *pollEnv) newSite() *latest.Site {
	e.t.Helper()
	// Site names are letters only, as the series key's check wants.
	name := "poll"
	for n := siteSeq.Add(1); n > 0; n /= 26 {
		name += string(rune('a' + n%26))
	}
	s := latesttest.Site(name)
	require.NoError(e.t, e.reg.SetAdded(append(e.reg.Added(), s)...))
	return s
}

// seriesBody is a fake Site's series page listing chapters 1..latest.
func seriesBody(title, cover string, latest int) []byte {
	return latesttest.SeriesBody(title, cover, latest)
}

type answer struct {
	page fetch.Page
	err  error
}

// fakeFetcher answers series URLs from a table and records every call.
type fakeFetcher struct {
	mu      sync.Mutex
	answers map[string]answer
	calls   map[string]int
	conds   map[string]fetch.Conditional
	// during, when set, runs inside each fetch: what happens elsewhere
	// while the Site is answering.
	during func()
	// paced, when set, is spent "at the pacing gate" inside each fetch.
	paced time.Duration
}

func newFakeFetcher() *fakeFetcher {
	return &fakeFetcher{answers: map[string]answer{}, calls: map[string]int{}, conds: map[string]fetch.Conditional{}}
}

func (f *fakeFetcher) set(seriesURL string, body []byte, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[seriesURL] = answer{page: fetch.Page{URL: seriesURL, Body: body, ETag: `"e"`, Via: "fake"}, err: err}
}

func (f *fakeFetcher) setPage(seriesURL string, p fetch.Page) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[seriesURL] = answer{page: p}
}

func (f *fakeFetcher) count(seriesURL string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[seriesURL]
}

func (f *fakeFetcher) lastCond(seriesURL string) fetch.Conditional {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conds[seriesURL]
}

func (f *fakeFetcher) FetchSeries(ctx context.Context, site *latest.Site, seriesURL string, cond fetch.Conditional) (fetch.Page, error) {
	f.mu.Lock()
	during, paced := f.during, f.paced
	f.mu.Unlock()
	if during != nil {
		during()
	}
	if paced > 0 {
		time.Sleep(paced)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[seriesURL]++
	f.conds[seriesURL] = cond
	a, ok := f.answers[seriesURL]
	if !ok {
		return fetch.Page{}, fmt.Errorf("fake fetcher: no page for %s", seriesURL)
	}
	a.page.Waited = paced
	return a.page, a.err
}

// fakeCovers records the Cover requests the Poll hands over.
type fakeCovers struct {
	mu   sync.Mutex
	reqs []cover.FetchArgs
}

func (c *fakeCovers) QueueCover(_ context.Context, req cover.FetchArgs) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	return nil
}

func (c *fakeCovers) requests() []cover.FetchArgs {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cover.FetchArgs(nil), c.reqs...)
}

type pollEnv struct {
	t        *testing.T
	reg      *latest.Registry
	st       *store.Store
	fetch    *fakeFetcher
	covers   *fakeCovers
	poller   *Poller
	client   *river.Client[pgx.Tx]
	interval time.Duration
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newPollEnv builds the Poll's River client with its workers on a fresh
// database; start runs it.
func newPollEnv(t *testing.T, interval time.Duration) *pollEnv {
	t.Helper()
	e := &pollEnv{t: t, reg: latest.Default(), st: store.New(pgtest.New(t)), fetch: newFakeFetcher(), covers: &fakeCovers{}, interval: interval}
	e.poller = &Poller{Store: e.st, Registry: e.reg, Policy: &fetch.Policy{Registry: e.reg, States: e.st}, Fetch: e.fetch,
		Covers: e.covers, Interval: interval, Logger: quietLogger()}
	workers := river.NewWorkers()
	river.AddWorker(workers, &PollWorker{Poller: e.poller})
	river.AddWorker(workers, &ListingWorker{Listings: &Listings{Store: e.st, Registry: e.reg, Fetch: e.fetch, Logger: quietLogger()}})
	river.AddWorker(workers, &PlanWorker{Scheduler: &Scheduler{Store: e.st, Interval: interval, Logger: quietLogger()}})
	client, err := river.NewClient(riverpgxv5.New(e.st.Pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:           workers,
		PeriodicJobs:      []*river.PeriodicJob{PeriodicPlan(interval)},
		FetchCooldown:     20 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		Logger:            quietLogger(),
	})
	require.NoError(t, err)
	e.client = client
	return e
}

// withoutPlan leaves out the plan that runs at start, for a test that
// queues its own polls: run first, the plan queues every never-polled
// Series spread over the cycle (the third 40 minutes away), and River's
// uniqueness then drops the test's own poll of it.
func (e *pollEnv) withoutPlan() {
	e.client.PeriodicJobs().Clear()
}

func (e *pollEnv) start() {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(e.t, e.client.Start(ctx))
	e.t.Cleanup(func() {
		stopCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		_ = e.client.StopAndCancel(stopCtx)
		cancel()
	})
}

var readerSeq atomic.Int64

// hold makes n new Readers bookmark the Series (creating it), without
// queueing anything.
func (e *pollEnv) hold(site *latest.Site, slug string, n int) store.Series {
	e.t.Helper()
	ctx := context.Background()
	ref, err := site.ResolveOn("https://" + site.Hosts[0] + "/s/" + slug)
	require.NoError(e.t, err)
	for range n {
		r, err := e.st.CreateReader(ctx, fmt.Sprintf("reader%d", readerSeq.Add(1)), "x", false)
		require.NoError(e.t, err)
		_, err = e.st.PutBookmarkKeepProgress(ctx, r.ID, store.NewSeries{Key: ref.Key, Site: ref.Site, Kind: string(ref.Kind), SeriesURL: ref.SeriesURL}, "")
		require.NoError(e.t, err)
	}
	ser, err := e.st.SeriesByKey(ctx, ref.Key)
	require.NoError(e.t, err)
	return ser
}

func (e *pollEnv) series(key string) store.Series {
	e.t.Helper()
	s, err := e.st.SeriesByKey(context.Background(), key)
	require.NoError(e.t, err)
	return s
}

func (e *pollEnv) exec(sql string, args ...any) {
	e.t.Helper()
	_, err := e.st.Pool.Exec(context.Background(), sql, args...)
	require.NoError(e.t, err)
}

type jobRow struct {
	ID          int64
	Key         string
	State       string
	Attempt     int
	MaxAttempts int
	ScheduledAt time.Time
	Priority    int
	Snoozes     int
}

func (e *pollEnv) pollJobs() []jobRow {
	e.t.Helper()
	rows, err := e.st.Pool.Query(context.Background(), `
		SELECT id, args->>'key', state::text, attempt, max_attempts, scheduled_at, priority, coalesce((metadata->>'snoozes')::int, 0)
		FROM river_job WHERE kind = 'poll_series' ORDER BY scheduled_at, id`)
	require.NoError(e.t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobRow, error) {
		var j jobRow
		err := r.Scan(&j.ID, &j.Key, &j.State, &j.Attempt, &j.MaxAttempts, &j.ScheduledAt, &j.Priority, &j.Snoozes)
		return j, err
	})
	require.NoError(e.t, err)
	return out
}

func (e *pollEnv) jobOf(key string) (jobRow, bool) {
	for _, j := range e.pollJobs() {
		if j.Key == key {
			return j, true
		}
	}
	return jobRow{}, false
}

// eventually waits for cond with a generous deadline, so a slow machine
// never fails the test and a broken one never hangs it.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 30*time.Second, 20*time.Millisecond, what)
}

func TestPlanOrdersByPopularityAndSkipsUnheld(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	a := e.hold(site, "three", 3)
	b := e.hold(site, "one", 1)
	c := e.hold(site, "two-recent", 2)
	d := e.hold(site, "two-older", 2)
	unheld := e.hold(site, "dropped", 1)
	e.exec(`DELETE FROM bookmarks WHERE series_key = $1`, unheld.Key)
	e.exec(`UPDATE series SET last_poll_at = now() - interval '10 minutes' WHERE key = $1`, c.Key)
	e.exec(`UPDATE series SET last_poll_at = now() - interval '50 minutes' WHERE key = $1`, d.Key)

	sched := &Scheduler{Store: e.st, Interval: time.Hour, Logger: quietLogger()}
	n, err := sched.Run(context.Background(), e.client)
	require.NoError(t, err)
	require.Equal(t, 4, n)

	jobs := e.pollJobs()
	var order []string
	for _, j := range jobs {
		order = append(order, j.Key)
		require.Equal(t, "scheduled", j.State, "polls are spread over the interval, not all due now")
		require.Equal(t, PriorityScheduled, j.Priority)
	}
	require.Equal(t, []string{a.Key, d.Key, c.Key, b.Key}, order, "most Readers first, ties by the oldest last poll")
	require.NotContains(t, order, unheld.Key, "a Series nobody holds is not polled")
	spread := jobs[len(jobs)-1].ScheduledAt.Sub(jobs[0].ScheduledAt)
	require.InDelta(t, (45 * time.Minute).Seconds(), spread.Seconds(), 5, "four overdue Series take the slots at 0, 15, 30, 45 minutes")
	for _, j := range jobs {
		require.WithinDuration(t, j.ScheduledAt, *e.series(j.Key).NextPollAt, time.Millisecond, "next_poll_at records the plan")
	}

	// Planning again (a restart, a new leader) queues nothing twice and
	// moves nobody.
	n, err = sched.Run(context.Background(), e.client)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	require.Equal(t, jobs, e.pollJobs())
}

func TestPlanCycle(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	held := []store.PollCandidate{
		{Key: "x:a", Site: "x", Readers: 9, NextPollAt: at(-2 * time.Hour)},
		{Key: "y:b", Site: "y", Readers: 5},
		{Key: "x:c", Site: "x", Readers: 3, NextPollAt: at(20 * time.Minute)},
		{Key: "x:d", Site: "x", Readers: 1},
	}
	got := PlanCycle(now, time.Hour, held, map[string]time.Time{"y": now.Add(time.Hour), "gone": now.Add(-time.Minute)})
	require.Equal(t, []PlannedPoll{
		{Key: "x:a", At: now},
		{Key: "x:c", At: now.Add(20 * time.Minute)},
		{Key: "x:d", At: now.Add(30 * time.Minute)},
	}, got, "known next polls kept, overdue ones spread in order, a paused Site's left out")
	require.Empty(t, PlanCycle(now, time.Hour, nil, nil))
}

func TestAcquisitionIsOneFetchAndLandsTheFacts(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	e.withoutPlan()
	e.start()
	ser := e.hold(site, "new-series", 1)
	coverURL := "https://cdn.covers.example/new.png"
	e.fetch.set(ser.SeriesURL, seriesBody("New Series", coverURL, 7), nil)
	require.NoError(t, e.st.InTx(context.Background(), func(tx *store.Store) error {
		return Acquirer{Client: e.client}.Acquire(context.Background(), tx, ser.Key)
	}))

	eventually(t, "the Latest Chapter lands", func() bool { return e.series(ser.Key).LatestLabel != "" })
	eventually(t, "the acquisition job completes", func() bool {
		j, ok := e.jobOf(ser.Key)
		return !ok || j.State == "completed" || j.State == "scheduled"
	})
	got := e.series(ser.Key)
	require.Equal(t, "Chapter 7", got.LatestLabel)
	require.Equal(t, "New Series", got.Title, "the title is a fact the backend writes")
	require.Equal(t, store.PollOK, got.PollStatus)
	require.Equal(t, 1, e.fetch.count(ser.SeriesURL), "exactly one series-page fetch")
	require.Equal(t, []cover.FetchArgs{{Key: ser.Key, Site: site.Name, Address: coverURL, SeriesURL: ser.SeriesURL}}, e.covers.requests(),
		"the Cover address from the same body goes to the Cover job")
	for _, j := range e.pollJobs() {
		if j.Key == ser.Key && j.State != "completed" {
			require.Equal(t, "scheduled", j.State)
			require.True(t, j.ScheduledAt.After(time.Now().Add(30*time.Minute)), "the next poll is a cycle away, not another fetch now")
		}
	}
}

// An import's batch of Acquisitions: one job per new Series at the
// Acquisition's priority, none for a Series whose poll is already in
// flight, and nothing at all if the import's transaction rolls back.
func TestAcquireManyQueuesOnePollPerSeries(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	ctx := context.Background()
	a, b, c := e.hold(site, "many-a", 1), e.hold(site, "many-b", 1), e.hold(site, "many-c", 1)
	acq := Acquirer{Client: e.client}
	require.NoError(t, e.st.InTx(ctx, func(tx *store.Store) error { return acq.Acquire(ctx, tx, b.Key) }))

	errRollback := errors.New("rolled back")
	err := e.st.InTx(ctx, func(tx *store.Store) error {
		require.NoError(t, acq.AcquireMany(ctx, tx, []string{a.Key, c.Key}))
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	require.Len(t, e.pollJobs(), 1, "a rolled-back import queues nothing")

	require.NoError(t, e.st.InTx(ctx, func(tx *store.Store) error {
		return acq.AcquireMany(ctx, tx, []string{a.Key, b.Key, c.Key})
	}))
	perKey := map[string]int{}
	for _, j := range e.pollJobs() {
		perKey[j.Key]++
		require.Equal(t, PriorityAcquisition, j.Priority, "%+v", j)
		require.Equal(t, "available", j.State, "%+v", j)
	}
	require.Equal(t, map[string]int{a.Key: 1, b.Key: 1, c.Key: 1}, perKey, "one poll per Series, the one in flight not doubled")
	require.NoError(t, e.st.InTx(ctx, func(tx *store.Store) error { return acq.AcquireMany(ctx, tx, nil) }))
}

// The duration a poll records is the Site's, not the pacing gate's: a
// fetch that waited its turn behind other polls of the Site is not shown
// as a slow Site.
func TestPollDurationLeavesOutThePacingWait(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	ser := e.hold(site, "paced", 1)
	e.fetch.set(ser.SeriesURL, seriesBody("Paced", "https://cdn.covers.example/p.png", 3), nil)
	e.fetch.mu.Lock()
	e.fetch.paced = 300 * time.Millisecond
	e.fetch.mu.Unlock()

	require.NoError(t, e.poller.Poll(context.Background(), ser.Key, time.Time{}))
	got := e.series(ser.Key)
	require.Equal(t, "Chapter 3", got.LatestLabel)
	require.NotNil(t, got.PollMS)
	require.Less(t, *got.PollMS, 300, "the 300 ms at the pacing gate are not the Site's")
}

func TestChangedLatestStoredWithHistoryUnchangedNotRewritten(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	ser := e.hold(site, "history", 2)
	ctx := context.Background()
	e.fetch.set(ser.SeriesURL, seriesBody("History", "https://cdn.covers.example/h.png", 10), nil)

	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	first := e.series(ser.Key)
	require.Equal(t, "Chapter 10", first.LatestLabel)
	require.Equal(t, 10.0, *first.LatestNumber)
	require.Equal(t, "https://"+site.Hosts[0]+"/s/ch-10", first.LatestURL)
	hist, err := e.st.LatestHistory(ctx, ser.Key, 10)
	require.NoError(t, err)
	require.Len(t, hist, 1)
	require.Nil(t, hist[0].PrevPollAt, "the first Latest Chapter has no poll before it")

	// The same page again: the facts stay, updated_at too (the Bookmark
	// list's ETag depends on it); only the bookkeeping moves.
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	same := e.series(ser.Key)
	require.Equal(t, first.UpdatedAt, same.UpdatedAt, "an unchanged Latest Chapter is not rewritten")
	require.Equal(t, first.LatestAt, same.LatestAt)
	require.True(t, same.LastPollAt.After(*first.LastPollAt))
	hist, err = e.st.LatestHistory(ctx, ser.Key, 10)
	require.NoError(t, err)
	require.Len(t, hist, 1)

	// A 304 is "unchanged" as well.
	e.fetch.setPage(ser.SeriesURL, fetch.Page{URL: ser.SeriesURL, NotModified: true})
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	nm := e.series(ser.Key)
	require.Equal(t, store.PollNotModified, nm.PollStatus)
	require.Equal(t, first.UpdatedAt, nm.UpdatedAt)
	require.Equal(t, "Chapter 10", nm.LatestLabel)

	// A new chapter: stored, with a history row naming the poll before.
	e.fetch.set(ser.SeriesURL, seriesBody("History", "https://cdn.covers.example/h.png", 11), nil)
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	changed := e.series(ser.Key)
	require.Equal(t, "Chapter 11", changed.LatestLabel)
	require.True(t, changed.UpdatedAt.After(first.UpdatedAt))
	require.True(t, changed.LatestAt.After(*first.LatestAt))
	hist, err = e.st.LatestHistory(ctx, ser.Key, 10)
	require.NoError(t, err)
	require.Len(t, hist, 2)
	require.Equal(t, "Chapter 11", hist[1].Label)
	require.NotNil(t, hist[1].PrevPollAt)
	require.WithinDuration(t, *nm.LastSuccessAt, *hist[1].PrevPollAt, time.Millisecond, "the release happened after the last poll that did not see it")
}

func TestConditionalOnlyWhenNothingIsMissing(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	ser := e.hold(site, "conditional", 1)
	ctx := context.Background()
	e.fetch.set(ser.SeriesURL, seriesBody("C", "https://cdn.covers.example/c.png", 3), nil)
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	require.Equal(t, fetch.Conditional{}, e.fetch.lastCond(ser.SeriesURL), "a Series without a Cover needs the whole body to retry it")

	e.exec(`UPDATE series SET cover_address = $2, cover_type = 'image/png' WHERE key = $1`, ser.Key, strings.Repeat("a", 64))
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	require.Equal(t, fetch.Conditional{ETag: `"e"`}, e.fetch.lastCond(ser.SeriesURL), "the last answer's validators")
	require.Len(t, e.covers.requests(), 2, "a Series with a Cover hands no address on")

	require.NoError(t, e.st.RequestCoverRefetch(ctx, ser.Key))
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	require.Equal(t, fetch.Conditional{}, e.fetch.lastCond(ser.SeriesURL), "a refetch needs a fresh body")
	reqs := e.covers.requests()
	require.Len(t, reqs, 3)
	require.True(t, reqs[2].Refetch)
	require.Nil(t, e.series(ser.Key).CoverRefetchAt, "the request is consumed by the poll")
}

// An Owner's refetch asked while the Series' poll is running finds that
// poll in flight and queues nothing; the poll notices and runs once more.
func TestRefetchAskedDuringAPollIsNotLost(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	ser := e.hold(site, "midpoll", 1)
	ctx := context.Background()
	e.fetch.set(ser.SeriesURL, seriesBody("M", "https://cdn.covers.example/m.png", 3), nil)
	e.exec(`UPDATE series SET cover_address = $2, cover_type = 'image/png' WHERE key = $1`, ser.Key, strings.Repeat("b", 64))

	e.fetch.mu.Lock()
	e.fetch.during = func() { require.NoError(t, e.st.RequestCoverRefetch(ctx, ser.Key)) }
	e.fetch.mu.Unlock()
	err := e.poller.Poll(ctx, ser.Key, time.Time{})
	var snooze *river.JobSnoozeError
	require.ErrorAs(t, err, &snooze, "the poll that read the Series before the request runs again")
	require.Zero(t, snooze.Duration)
	require.Empty(t, e.covers.requests(), "the first pass saw no request and handed no Cover on")

	e.fetch.mu.Lock()
	e.fetch.during = nil
	e.fetch.mu.Unlock()
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	reqs := e.covers.requests()
	require.Len(t, reqs, 1)
	require.True(t, reqs[0].Refetch)
	require.Nil(t, e.series(ser.Key).CoverRefetchAt)
}

func TestBackoffOfOneSiteLeavesOthersPolling(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	refusing, fine := e.newSite(), e.newSite()
	r1 := e.hold(refusing, "first", 1)
	r2 := e.hold(refusing, "second", 1)
	f1 := e.hold(fine, "third", 1)
	e.fetch.set(r1.SeriesURL, nil, &fetch.StatusError{Status: 429, URL: r1.SeriesURL, RetryAfter: 10 * time.Minute})
	e.fetch.set(r2.SeriesURL, seriesBody("Second", "", 4), nil)
	e.fetch.set(f1.SeriesURL, seriesBody("Third", "", 9), nil)
	e.withoutPlan()
	e.start()
	ctx := context.Background()

	_, err := e.client.Insert(ctx, PollArgs{Key: r1.Key}, nil)
	require.NoError(t, err)
	eventually(t, "the refused poll is snoozed", func() bool {
		j, ok := e.jobOf(r1.Key)
		return ok && j.State == "scheduled" && j.Snoozes == 1
	})
	st, err := e.st.SiteStateOf(ctx, refusing.Name)
	require.NoError(t, err)
	until, paused := st.Paused(time.Now())
	require.True(t, paused)
	require.WithinDuration(t, time.Now().Add(10*time.Minute), until, time.Minute, "Retry-After outranks the first minute of back-off")
	require.Equal(t, 1, st.Refusals)
	require.Equal(t, store.PollBackedOff, e.series(r1.Key).PollStatus)

	_, err = e.client.Insert(ctx, PollArgs{Key: r2.Key}, nil)
	require.NoError(t, err)
	_, err = e.client.Insert(ctx, PollArgs{Key: f1.Key}, nil)
	require.NoError(t, err)
	eventually(t, "the other Site's Series is polled", func() bool { return e.series(f1.Key).LatestLabel == "Chapter 9" })
	eventually(t, "the paused Site's other poll is snoozed", func() bool {
		j, ok := e.jobOf(r2.Key)
		return ok && j.State == "scheduled" && j.Snoozes == 1
	})
	require.Equal(t, 0, e.fetch.count(r2.SeriesURL), "nothing reaches a paused Site")
	require.Equal(t, 1, e.fetch.count(r1.SeriesURL))
	require.Empty(t, e.series(r2.Key).LatestLabel)
	fineState, err := e.st.SiteStateOf(ctx, fine.Name)
	require.NoError(t, err)
	_, finePaused := fineState.Paused(time.Now())
	require.False(t, finePaused)
	require.NotNil(t, fineState.LastSuccessAt)
}

func TestSnoozedJobsKeepTheirAttempts(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	ser := e.hold(site, "patient", 1)
	ctx := context.Background()
	_, err := e.st.BackOffSite(ctx, site.Name, "challenge: test", func(int) time.Duration { return 2 * time.Second })
	require.NoError(t, err)
	e.fetch.set(ser.SeriesURL, seriesBody("Patient", "", 2), nil)
	e.withoutPlan()
	e.start()
	_, err = e.client.Insert(ctx, PollArgs{Key: ser.Key}, nil)
	require.NoError(t, err)

	// Snoozed until the pause ends, then polled: every run that snoozed gave
	// its attempt back.
	eventually(t, "the poll runs once the back-off ends", func() bool { return e.series(ser.Key).LatestLabel == "Chapter 2" })
	eventually(t, "the job completes", func() bool {
		j, ok := e.jobOf(ser.Key)
		return ok && j.State == "completed"
	})
	j, _ := e.jobOf(ser.Key)
	require.GreaterOrEqual(t, j.Snoozes, 1, "the job was snoozed")
	require.Equal(t, 1, j.Attempt, "snoozes burned no attempt: only the run that worked counts")
	require.Equal(t, PollMaxAttempts, j.MaxAttempts)
	require.Equal(t, 1, e.fetch.count(ser.SeriesURL))
	st, err := e.st.SiteStateOf(ctx, site.Name)
	require.NoError(t, err)
	require.Equal(t, 0, st.Refusals, "a success resets the back-off")
}

func TestMissedCycleRunsAtStart(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	missed := e.hold(site, "missed", 2)
	notYet := e.hold(site, "not-yet", 1)
	// The process was down: the missed Series' poll was due two hours ago;
	// the other's comes in half an hour.
	e.exec(`UPDATE series SET last_poll_at = now() - interval '3 hours', next_poll_at = now() - interval '2 hours' WHERE key = $1`, missed.Key)
	e.exec(`UPDATE series SET last_poll_at = now() - interval '30 minutes', next_poll_at = now() + interval '30 minutes' WHERE key = $1`, notYet.Key)
	e.fetch.set(missed.SeriesURL, seriesBody("Missed", "", 5), nil)
	e.fetch.set(notYet.SeriesURL, seriesBody("Not yet", "", 5), nil)
	e.start()

	eventually(t, "the missed cycle's poll runs at start, not an interval later", func() bool {
		return e.series(missed.Key).LatestLabel == "Chapter 5"
	})
	require.Equal(t, 0, e.fetch.count(notYet.SeriesURL), "a Series not due yet is not polled early")
	j, ok := e.jobOf(notYet.Key)
	require.True(t, ok, "its poll is queued for its time")
	require.Equal(t, "scheduled", j.State)
	require.WithinDuration(t, time.Now().Add(30*time.Minute), j.ScheduledAt, time.Minute)
	next := e.series(missed.Key).NextPollAt
	require.True(t, next.After(time.Now().Add(50*time.Minute)), "the next poll of the missed Series is a cycle away")
}

func TestHintBringsTheNextPollForward(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	ser := e.hold(site, "hinted", 1)
	ctx := context.Background()
	e.fetch.set(ser.SeriesURL, seriesBody("Hinted", "", 8), nil)
	// A poll planned for later in the cycle.
	_, err := e.client.Insert(ctx, PollArgs{Key: ser.Key, Reason: "schedule"}, &river.InsertOpts{ScheduledAt: time.Now().Add(40 * time.Minute)})
	require.NoError(t, err)
	e.exec(`UPDATE series SET last_poll_at = now() - interval '20 minutes' WHERE key = $1`, ser.Key)
	e.withoutPlan()
	e.start()
	q := &Queue{Client: e.client, Store: e.st, Logger: quietLogger()}

	require.NoError(t, q.Hint(ctx, ser.Key))
	eventually(t, "the hinted poll runs now", func() bool { return e.series(ser.Key).LatestLabel == "Chapter 8" })
	eventually(t, "the poll completes", func() bool {
		j, ok := e.jobOf(ser.Key)
		return ok && j.State == "completed"
	})
	require.Equal(t, 1, e.fetch.count(ser.SeriesURL))
	require.Len(t, e.pollJobs(), 1, "the planned poll was brought forward, not doubled")
	require.NotNil(t, e.series(ser.Key).HintAt)

	// Just polled: another hint does not poll again.
	require.NoError(t, q.Hint(ctx, ser.Key))
	jobs := e.pollJobs()
	require.Len(t, jobs, 1)
	require.Equal(t, "completed", jobs[0].State)
}

func TestNoBrowserSkipsWithoutBackingOff(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	kagane, _ := e.reg.Lookup("kagane")
	ctx := context.Background()
	r, err := e.st.CreateReader(ctx, fmt.Sprintf("reader%d", readerSeq.Add(1)), "x", false)
	require.NoError(t, err)
	ref, err := kagane.ResolveOn(fixturesites.KaganeSeries)
	require.NoError(t, err)
	_, err = e.st.PutBookmarkKeepProgress(ctx, r.ID, store.NewSeries{Key: ref.Key, Site: ref.Site, Kind: string(ref.Kind), SeriesURL: ref.SeriesURL}, "")
	require.NoError(t, err)

	// The production fetcher with no browser configured.
	e.poller.Fetch = &fetch.Sites{Policy: e.poller.Policy, Plain: fetch.NewPlainFetcher(fetch.PlainOptions{Dial: func(context.Context, string, string) (net.Conn, error) {
		t.Error("kagane must not be fetched without a browser")
		return nil, fmt.Errorf("no network in this test")
	}})}
	require.NoError(t, e.poller.Poll(ctx, ref.Key, time.Time{}))
	got := e.series(ref.Key)
	require.Equal(t, store.PollSkipped, got.PollStatus)
	require.True(t, strings.HasPrefix(got.PollProblem, ProblemNoBrowser+":"), got.PollProblem)
	require.Equal(t, 0, got.PollFailures, "a skipped poll is not the Series' failure")
	st, err := e.st.SiteStateOf(ctx, "kagane")
	require.NoError(t, err)
	_, paused := st.Paused(time.Now())
	require.False(t, paused, "no browser is no reason to back the Site off")
	require.Contains(t, st.LastProblem, "no browser")
}

func TestProblemPagesAreNamedAndChallengesBackOff(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	ser := e.hold(site, "problems", 1)
	ctx := context.Background()

	e.fetch.set(ser.SeriesURL, []byte(`<html><head><title>404 Not Found</title></head><body>gone</body></html>`), nil)
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	got := e.series(ser.Key)
	require.Equal(t, store.PollProblem, got.PollStatus)
	require.True(t, strings.HasPrefix(got.PollProblem, latest.ProblemNotFound), got.PollProblem)
	require.NotNil(t, got.PollBodyLen)
	require.Equal(t, 1, got.PollFailures)

	// A challenge body answered 200 is a refusal all the same.
	e.fetch.set(ser.SeriesURL, readFixture(t, "asura", "challenge.html"), nil)
	err := e.poller.Poll(ctx, ser.Key, time.Time{})
	var snooze *river.JobSnoozeError
	require.ErrorAs(t, err, &snooze)
	require.Greater(t, snooze.Duration, 50*time.Second)
	got = e.series(ser.Key)
	require.Equal(t, store.PollBackedOff, got.PollStatus)
	require.True(t, strings.HasPrefix(got.PollProblem, latest.ProblemChallenge), got.PollProblem)
	require.Equal(t, 2, got.PollFailures)
	failing, err := e.st.FailingSeriesList(ctx, 10)
	require.NoError(t, err)
	require.Len(t, failing, 1)
	require.Equal(t, ser.Key, failing[0].Key)
}

// A Series polled between the plan's read and its queueing (an Acquisition
// finishing at that moment) keeps the next poll its own poll recorded: the
// plan does not queue a second fetch for now. The PlanFunc seam runs the
// poll right there.
func TestPlanDropsASeriesPolledMeanwhile(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	racing := e.hold(site, "racing", 1)
	calm := e.hold(site, "calm", 1)
	e.fetch.set(racing.SeriesURL, seriesBody("Racing", "", 3), nil)
	ctx := context.Background()
	plan := func(now time.Time, interval time.Duration, held []store.PollCandidate, paused map[string]time.Time) []PlannedPoll {
		require.NoError(t, e.poller.Poll(ctx, racing.Key, time.Time{}))
		return PlanCycle(now, interval, held, paused)
	}
	n, err := (&Scheduler{Store: e.st, Interval: time.Hour, Plan: plan, Logger: quietLogger()}).Run(ctx, e.client)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	jobs := e.pollJobs()
	require.Len(t, jobs, 1)
	require.Equal(t, calm.Key, jobs[0].Key)
	next := e.series(racing.Key).NextPollAt
	require.True(t, next.After(time.Now().Add(50*time.Minute)), "the poll's own forecast stands, not a slot at once")
	require.Equal(t, 1, e.fetch.count(racing.SeriesURL))
}

// readFixture reads testdata/sites/<site>/<file>.
func readFixture(t *testing.T, site, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "sites", site, file))
	require.NoError(t, err)
	return b
}

// A Site whose page names tracker entries (MangaDex's links) has them
// recorded with the poll, as Series facts for Readers to confirm; a name
// or id no tracker has is left out.
func TestPollRecordsTrackerIDsASitePublishes(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	site.Trackers = func(body []byte, _ *url.URL) map[string]string {
		return map[string]string{"anilist": "30013", "myanimelist": "not-a-number", "kitsu": "41150", "mangaupdates": "55099564912"}
	}
	ser := e.hold(site, "tracked", 1)
	e.fetch.set(ser.SeriesURL, seriesBody("Tracked", "", 3), nil)
	require.NoError(t, e.poller.Poll(context.Background(), ser.Key, time.Time{}))
	ids, err := e.st.SeriesTrackerIDs(context.Background(), ser.Key)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"anilist": "30013", "mangaupdates": "55099564912"}, ids)
}

// A poll the network fails names the problem in words on the Series (what
// the Series page and the console show); the raw error is the log's.
func TestAFailedFetchIsNamedInWords(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	asura, _ := e.reg.Lookup("asura")
	ctx := context.Background()
	r, err := e.st.CreateReader(ctx, fmt.Sprintf("reader%d", readerSeq.Add(1)), "x", false)
	require.NoError(t, err)
	ref, err := asura.ResolveOn(fixturesites.AsuraSeries)
	require.NoError(t, err)
	_, err = e.st.PutBookmarkKeepProgress(ctx, r.ID, store.NewSeries{Key: ref.Key, Site: ref.Site, Kind: string(ref.Kind), SeriesURL: ref.SeriesURL}, "")
	require.NoError(t, err)

	// The production fetcher, on a network where the name does not resolve.
	e.poller.Fetch = &fetch.Sites{Policy: e.poller.Policy, Plain: fetch.NewPlainFetcher(fetch.PlainOptions{Dial: func(_ context.Context, _, addr string) (net.Conn, error) {
		h, _, _ := net.SplitHostPort(addr)
		return nil, fmt.Errorf("resolve %s: %w", h, &net.DNSError{Err: "no such host", Name: h, IsNotFound: true})
	}})}
	require.Error(t, e.poller.Poll(ctx, ref.Key, time.Time{}), "a network failure is retried")
	got := e.series(ref.Key)
	require.Equal(t, store.PollFailed, got.PollStatus)
	require.Equal(t, "fetch: Could not reach asurascans.com (DNS lookup failed)", got.PollProblem)
}

// A Site with a lighter feed (PollURL) is polled there once the Series has
// its Cover and a Latest Chapter; a feed that fails, or names no Latest
// Chapter, is followed by the series page in the same poll.
func TestPollReadsTheFeedOnceTheSeriesHasItsFacts(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	site.PollURL = func(seriesURL string) (string, bool) { return seriesURL + "/feed", true }
	ser := e.hold(site, "feedy", 1)
	ctx := context.Background()
	feed := ser.SeriesURL + "/feed"
	e.fetch.set(ser.SeriesURL, seriesBody("Feedy", "https://cdn.covers.example/f.png", 10), nil)
	e.fetch.set(feed, seriesBody("", "", 11), nil)

	// The first poll needs the Cover and the first Latest Chapter: the page.
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	require.Equal(t, 1, e.fetch.count(ser.SeriesURL))
	require.Zero(t, e.fetch.count(feed))
	require.Equal(t, "Chapter 10", e.series(ser.Key).LatestLabel)
	e.exec(`UPDATE series SET cover_address = $2, cover_type = 'image/png' WHERE key = $1`, ser.Key, strings.Repeat("ab", 32))

	// Then the feed alone.
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	require.Equal(t, 1, e.fetch.count(ser.SeriesURL), "the series page is not read again")
	require.Equal(t, 1, e.fetch.count(feed))
	got := e.series(ser.Key)
	require.Equal(t, "Chapter 11", got.LatestLabel)
	require.Equal(t, "Feedy", got.Title, "a feed without a title keeps the title")

	// A feed that answers with no chapter: the page is read after it.
	e.fetch.set(feed, []byte("<html><body>maintenance</body></html>"), nil)
	e.fetch.set(ser.SeriesURL, seriesBody("Feedy", "https://cdn.covers.example/f.png", 12), nil)
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	require.Equal(t, 2, e.fetch.count(feed))
	require.Equal(t, 2, e.fetch.count(ser.SeriesURL))
	require.Equal(t, "Chapter 12", e.series(ser.Key).LatestLabel)

	// A feed that fails (a 404): the same.
	e.fetch.set(feed, nil, &fetch.StatusError{Status: 404, URL: feed})
	e.fetch.set(ser.SeriesURL, seriesBody("Feedy", "https://cdn.covers.example/f.png", 13), nil)
	require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}))
	require.Equal(t, 3, e.fetch.count(feed))
	require.Equal(t, 3, e.fetch.count(ser.SeriesURL))
	got = e.series(ser.Key)
	require.Equal(t, "Chapter 13", got.LatestLabel)
	require.Equal(t, store.PollOK, got.PollStatus)
}

package faults

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// lectern is a replica composed in-process over the fixture Sites.
type lectern struct {
	srv   *server.Server
	st    *store.Store
	pool  *pgxpool.Pool
	base  string
	sites *fixturesites.Server
	cfg   config.Config
	log   *lockedBuffer
}

// lockedBuffer is a replica's log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startLectern composes a replica as `lectern serve` does (apptest), with
// its fetchers' network seams on the fake network the fixture Sites answer
// on, and starts its background jobs. FETCH_TIMEOUT is short so a hanging
// Site ends a poll in seconds.
func startLectern(t *testing.T, sites *fixturesites.Server, edit func(*config.Config)) *lectern {
	t.Helper()
	logs := &lockedBuffer{}
	a := apptest.New(t, apptest.Options{
		Net: sites.Net, PublicBaseURL: "http://lectern.test", Workers: 4, Version: "fault",
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Config: func(c *config.Config) {
			c.SitePace = "asura=50ms,demonic=50ms,comix=50ms,lightnovelworld=50ms,novelfull=50ms,kagane=50ms"
			c.FetchTimeout, c.FetchConnectTimeout, c.FetchHeaderTimeout = 4*time.Second, 2*time.Second, 3*time.Second
			c.FetchMaxBytes, c.CoverMaxBytes, c.BrowserTimeout = 5<<20, 2<<20, 20*time.Second
			c.UserAgent, c.BrowserProxyListen = "LecternFault/1", "127.0.0.1:0"
			if edit != nil {
				edit(c)
			}
		},
	})
	return &lectern{srv: a.Server, st: a.Store, pool: a.Store.Pool, base: a.URL, sites: sites, cfg: a.Config, log: logs}
}

// held are a Reader's Bookmarks on four Sites; asura is the unwell one.
var held = []string{fixturesites.AsuraSeries, fixturesites.DemonicSeries, fixturesites.ComixSeries, fixturesites.LightNovelWorldSeries}

func (l *lectern) holdAll(t *testing.T, token string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	for _, u := range held {
		ref, err := latest.Default().Resolve(u)
		require.NoError(t, err)
		put(t, l.base, token, ref.Key, u, "Chapter 1")
		keys[ref.Site] = ref.Key
	}
	return keys
}

type pollState struct {
	status, problem, latest string
	failures                int
	ms                      *int
}

func (l *lectern) poll(t *testing.T, key string) pollState {
	t.Helper()
	var p pollState
	require.NoError(t, l.pool.QueryRow(context.Background(),
		`SELECT poll_status, poll_problem, latest_label, poll_failures, poll_ms FROM series WHERE key = $1`, key).
		Scan(&p.status, &p.problem, &p.latest, &p.failures, &p.ms))
	return p
}

// jobs describes the poll jobs of a Series, for failure messages.
func (l *lectern) jobs(t *testing.T, key string) string {
	t.Helper()
	var out string
	require.NoError(t, l.pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(format('%s %s attempt %s errors %s', id, state, attempt, errors), '; '), '')
		FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1`, key).Scan(&out))
	return out
}

func (l *lectern) paused(t *testing.T, site string) bool {
	t.Helper()
	s, err := l.st.SiteStateOf(context.Background(), site)
	require.NoError(t, err)
	_, paused := s.Paused(time.Now())
	return paused
}

// requireOthersPolled waits for the Sites other than asura to be polled
// normally, and checks none of them backs off.
func (l *lectern) requireOthersPolled(t *testing.T, keys map[string]string) {
	t.Helper()
	for site, key := range keys {
		if site == "asura" {
			continue
		}
		require.Eventually(t, func() bool { return l.poll(t, key).status == store.PollOK }, time.Minute, 50*time.Millisecond,
			"%s was not polled while asura was unwell: %+v", key, l.poll(t, key))
		require.NotEmpty(t, l.poll(t, key).latest)
		require.False(t, l.paused(t, site), "%s backed off", site)
	}
}

// A 429 storm: every request to asura answers 429 Retry-After: 60. The
// first refusal pauses asura (and only asura) for the Retry-After, its poll
// snoozes instead of retrying, and no further request reaches it during the
// pause; the other Sites are polled as usual.
func TestTooManyRequestsBacksOffOnlyThatSite(t *testing.T) {
	t.Parallel()
	sites := startSites(t)
	sites.SetMode("asurascans.com", fixturesites.TooManyRequests)
	l := startLectern(t, sites, nil)
	keys := l.holdAll(t, newReader(t, l.st, "ann", false))

	// The Site's pause and the Series' poll status are two writes; wait for
	// both before looking at either.
	require.Eventually(t, func() bool {
		return l.paused(t, "asura") && l.poll(t, keys["asura"]).status == store.PollBackedOff
	}, time.Minute, 50*time.Millisecond, "asura never backed off: %+v", l.poll(t, keys["asura"]))
	p := l.poll(t, keys["asura"])
	require.Equal(t, store.PollBackedOff, p.status)
	require.Contains(t, p.problem, "http_429")
	require.Empty(t, p.latest)
	l.requireOthersPolled(t, keys)

	s, err := l.st.SiteStateOf(context.Background(), "asura")
	require.NoError(t, err)
	require.Equal(t, 1, s.Refusals)
	require.WithinDuration(t, time.Now().Add(time.Minute), *s.PausedUntil, 15*time.Second, "the pause honours Retry-After: 60")
	hits := sites.Hits(fixturesites.AsuraSeries)
	require.Equal(t, 1, hits, "one request, then the pause")
	// The storm goes on; Lectern does not: the poll is snoozed, not retried.
	time.Sleep(3 * time.Second)
	require.Equal(t, hits, sites.Hits(fixturesites.AsuraSeries), "a request reached asura during its back-off")
	require.Equal(t, 1, count(t, l.pool, `SELECT count(*) FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1 AND state = 'scheduled'`, keys["asura"]),
		"the poll waits for the back-off to end")
}

// A 503 storm is the Site's trouble, not a refusal of us: the poll is
// recorded as failed and retried by River with its back-off, asura is not
// paused, and the other Sites are polled as usual.
func TestServiceUnavailableIsRetriedWithoutBackOff(t *testing.T) {
	t.Parallel()
	sites := startSites(t)
	sites.SetMode("asurascans.com", fixturesites.Unavailable)
	l := startLectern(t, sites, nil)
	keys := l.holdAll(t, newReader(t, l.st, "ann", false))

	require.Eventually(t, func() bool { return l.poll(t, keys["asura"]).status == store.PollFailed }, time.Minute, 50*time.Millisecond)
	p := l.poll(t, keys["asura"])
	require.Contains(t, p.problem, "http_503")
	require.False(t, l.paused(t, "asura"), "a 503 is not a refusal")
	require.Eventually(t, func() bool {
		return count(t, l.pool, `SELECT count(*) FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1
			AND state IN ('retryable', 'available', 'running') AND cardinality(errors) > 0`, keys["asura"]) == 1
	}, 30*time.Second, 50*time.Millisecond, "the failed poll is not retried: %s", l.jobs(t, keys["asura"]))

	// The Site recovers; the retried poll succeeds.
	sites.SetMode("asurascans.com", fixturesites.Normal)
	l.requireOthersPolled(t, keys)
	require.Eventually(t, func() bool { return l.poll(t, keys["asura"]).status == store.PollOK }, 2*time.Minute, 100*time.Millisecond,
		"the retried poll never succeeded: %+v", l.poll(t, keys["asura"]))
	require.Equal(t, 1, count(t, l.pool, `SELECT count(*) FROM latest_chapter_history WHERE series_key = $1`, keys["asura"]))
}

// A Site that never answers: each poll ends within FETCH_TIMEOUT (4s here)
// with a named problem, asura is not paused (silence is not a refusal),
// and the other Sites are polled meanwhile.
func TestHangingSiteEndsEachPollWithinItsTimeout(t *testing.T) {
	t.Parallel()
	sites := startSites(t)
	sites.SetMode("asurascans.com", fixturesites.Hang)
	l := startLectern(t, sites, nil)
	keys := l.holdAll(t, newReader(t, l.st, "ann", false))
	l.requireOthersPolled(t, keys)

	require.Eventually(t, func() bool { return l.poll(t, keys["asura"]).status == store.PollFailed }, time.Minute, 50*time.Millisecond)
	p := l.poll(t, keys["asura"])
	require.NotNil(t, p.ms)
	require.Less(t, time.Duration(*p.ms)*time.Millisecond, l.cfg.FetchTimeout+5*time.Second, "the poll outlived its timeout: %+v", p)
	require.GreaterOrEqual(t, time.Duration(*p.ms)*time.Millisecond, l.cfg.FetchHeaderTimeout-time.Second, "the poll gave up before the Site could answer: %+v", p)
	require.NotEmpty(t, p.problem)
	require.False(t, l.paused(t, "asura"), "a silent Site is not a refusing one")
	require.Empty(t, p.latest)
}

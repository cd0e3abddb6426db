package pacing

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// replicas opens n stores on one fresh database, each with its own pool, as
// n replicas of Lectern would.
func replicas(t *testing.T, n int) []*store.Store {
	t.Helper()
	u := pgtest.NewURL(t)
	out := make([]*store.Store, n)
	for i := range out {
		pool, err := pgxpool.New(context.Background(), u)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		out[i] = store.New(pool)
	}
	return out
}

// arrivals is a loopback server recording when each request arrived.
type arrivals struct {
	mu sync.Mutex
	at []time.Time
}

func (a *arrivals) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	a.at = append(a.at, time.Now())
	a.mu.Unlock()
}

func (a *arrivals) sorted() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := append([]time.Time(nil), a.at...)
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// Two gates on one database ("replicas"), eight goroutines each, all asking
// for the same host: the server sees the configured rate, not sixteen times
// it.
func TestTwoReplicasHoldTheCombinedRate(t *testing.T) {
	t.Parallel()
	const every = 40 * time.Millisecond
	const perCaller = 4
	stores := replicas(t, 2)
	srv := &arrivals{}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	client := ts.Client()

	var wg sync.WaitGroup
	errs := make(chan error, 16*perCaller)
	for _, st := range stores {
		g := New(st, Options{})
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perCaller {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					err := g.Wait(ctx, "Site.Example:443", every)
					cancel()
					if err != nil {
						errs <- err
						return
					}
					resp, err := client.Get(ts.URL)
					if err != nil {
						errs <- err
						return
					}
					resp.Body.Close()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	at := srv.sorted()
	require.Len(t, at, 16*perCaller)
	span := at[len(at)-1].Sub(at[0])
	observed := float64(len(at)-1) / span.Seconds()
	configured := 1 / every.Seconds()
	t.Logf("observed %.1f requests/s, configured at most %.1f (jitter up to %.0f%%)", observed, configured, DefaultJitter*100)
	require.LessOrEqual(t, observed, configured*1.1, "the combined rate holds the minimum interval")
	require.GreaterOrEqual(t, observed, configured/(1+DefaultJitter)*0.6, "slots are not wasted: the gate paces, it does not stall")
	var tooClose int
	for i := 1; i < len(at); i++ {
		if at[i].Sub(at[i-1]) < every/2 {
			tooClose++
		}
	}
	require.Zero(t, tooClose, "no two requests arrived much closer than the interval")
}

func TestWaitHonoursTheCallersDeadlineAndCancellation(t *testing.T) {
	t.Parallel()
	st := replicas(t, 1)[0]
	g := New(st, Options{Jitter: -1})
	ctx := context.Background()
	require.NoError(t, g.Wait(ctx, "busy.example", 2*time.Second), "a free host passes at once")
	var booked time.Time
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT next_at FROM pacing_hosts WHERE host = 'busy.example'`).Scan(&booked))

	// The next slot is two seconds away; a caller with 100ms left is told so
	// at once and takes nothing.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := g.Wait(short, "busy.example", 2*time.Second)
	cancel()
	require.ErrorIs(t, err, ErrBusy)
	var after time.Time
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT next_at FROM pacing_hosts WHERE host = 'busy.example'`).Scan(&after))
	require.Equal(t, booked, after, "a refused caller reserves no slot")

	// A caller that is cancelled while it waits returns with the cause.
	waiting, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Wait(waiting, "busy.example", 2*time.Second) }()
	time.Sleep(50 * time.Millisecond)
	stop()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("Wait ignored the cancellation")
	}
}

func TestZeroIntervalPassesWithoutTheDatabase(t *testing.T) {
	t.Parallel()
	st := replicas(t, 1)[0]
	g := New(st, Options{})
	require.NoError(t, g.Wait(context.Background(), "free.example", 0))
	var n int
	require.NoError(t, st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pacing_hosts`).Scan(&n))
	require.Zero(t, n)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	require.True(t, errors.Is(g.Wait(cancelled, "free.example", 0), context.Canceled))
	require.Error(t, g.Wait(context.Background(), " ", time.Second), "an empty host is refused")
}

func TestHost(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"AsuraScans.com":          "asurascans.com",
		"www.asurascans.com":      "asurascans.com",
		"asurascans.com:443":      "asurascans.com",
		"cdn.asurascans.com.":     "cdn.asurascans.com",
		"[2001:db8::1]:443":       "2001:db8::1",
		"2001:db8::1":             "2001:db8::1",
		" static.comix.to ":       "static.comix.to",
		"www.lightnovelworld.com": "lightnovelworld.com",
	} {
		require.Equal(t, want, Host(in), in)
	}
}

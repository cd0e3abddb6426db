package pacing

import (
	"context"
	"errors"
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

// reservation is one slot a gate took, with the interval it asked for.
type reservation struct {
	store.PaceSlot
	every time.Duration
}

// recorder is the store as a gate's Slots, keeping every slot it handed out.
type recorder struct {
	st *store.Store
	mu *sync.Mutex
	at *[]reservation
}

func (r recorder) ReservePace(ctx context.Context, host string, every, maxWait time.Duration) (time.Duration, bool, error) {
	slot, reserved, err := r.st.ReservePaceSlot(ctx, host, every, maxWait)
	if reserved {
		r.mu.Lock()
		*r.at = append(*r.at, reservation{slot, every})
		r.mu.Unlock()
	}
	return slot.Wait(), reserved, err
}

// Two gates on one database ("replicas"), eight goroutines each, all asking
// for the same host: the slots they are handed, in the database's own order,
// are each at least the interval after the one before, whatever the two
// cores' scheduling did to the callers. The assertions are on the slots, not
// on when requests happened to arrive, so noise cannot cross them; the real
// gaps are `bench pacing`'s figure.
func TestTwoReplicasHoldTheCombinedRate(t *testing.T) {
	t.Parallel()
	const every = 40 * time.Millisecond
	const perCaller = 4
	stores := replicas(t, 2)
	var (
		mu    sync.Mutex
		slots []reservation
		wg    sync.WaitGroup
	)
	errs := make(chan error, 16*perCaller)
	for _, st := range stores {
		g := New(recorder{st, &mu, &slots}, Options{})
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
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	// A caller its timer woke too late took a slot again (LateShare): one
	// reservation more, never one fewer.
	require.GreaterOrEqual(t, len(slots), 16*perCaller)
	sort.Slice(slots, func(i, j int) bool { return slots[i].At.Before(slots[j].At) })
	for i := 1; i < len(slots); i++ {
		prev, cur := slots[i-1], slots[i]
		require.GreaterOrEqual(t, prev.every, every, "the gate's jitter only lengthens the interval")
		gap := cur.At.Sub(prev.At)
		require.GreaterOrEqual(t, gap, prev.every, "slot %d is %s after the one before, which asked for %s", i, gap, prev.every)
		// Not wasted either: a slot follows the one before exactly, or the
		// host was free when it was taken.
		if gap != prev.every {
			require.False(t, cur.At.After(cur.Taken), "slot %d left a hole of %s before it", i, gap-prev.every)
		}
	}
}

// A caller that queued on the host's row lock behind another transaction is
// handed a slot no earlier than the moment it won the lock. With now(), the
// start of its statement, it would get a slot in its past while the lock
// holder's request was still under way, and the two would land together.
func TestASlotIsTakenWhenTheLockIsWon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := replicas(t, 1)[0]
	slots := st.Pool
	_, err := slots.Exec(ctx, `INSERT INTO pacing_hosts (host, next_at) VALUES ('queued.example', now() - interval '1 hour')`)
	require.NoError(t, err)

	holder, err := slots.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx) }()
	_, err = holder.Exec(ctx, `SELECT 1 FROM pacing_hosts WHERE host = 'queued.example' FOR UPDATE`)
	require.NoError(t, err)

	type result struct {
		slot store.PaceSlot
		err  error
	}
	done := make(chan result, 1)
	go func() {
		slot, _, err := st.ReservePaceSlot(ctx, "queued.example", time.Second, time.Minute)
		done <- result{slot, err}
	}()
	// Wait until the reservation is blocked on the lock (Postgres says so),
	// then note the time on the database's clock and release it.
	require.Eventually(t, func() bool {
		var waiting bool
		err := slots.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO pacing_hosts%'`).Scan(&waiting)
		return err == nil && waiting
	}, 30*time.Second, 5*time.Millisecond)
	var released time.Time
	require.NoError(t, holder.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&released))
	require.NoError(t, holder.Commit(ctx))

	r := <-done
	require.NoError(t, r.err)
	require.False(t, r.slot.At.Before(released), "the slot (%s) is no earlier than the lock's release (%s)", r.slot.At, released)
}

// fixedSlots hands out a slot wait away on every call, counting them.
type fixedSlots struct {
	wait  time.Duration
	calls int
}

func (f *fixedSlots) ReservePace(context.Context, string, time.Duration, time.Duration) (time.Duration, bool, error) {
	f.calls++
	return f.wait, true, nil
}

// A caller whose timer wakes it later than LateShare of the interval after
// its slot does not use it (it would land that much closer to the next
// caller's): it takes a new slot. One that wakes in time uses its own. The
// clock is the Gate's seam, so lateness is exact, not the machine's.
func TestACallerThatWakesTooLateTakesANewSlot(t *testing.T) {
	t.Parallel()
	const every = 100 * time.Millisecond
	slots := &fixedSlots{wait: 30 * time.Millisecond}
	g := New(slots, Options{Jitter: -1})
	clock := time.Unix(1_700_000_000, 0)
	lateness := []time.Duration{every/10 + time.Microsecond, every / 10}
	g.now = func() time.Time { return clock }
	g.after = func(d time.Duration) <-chan time.Time {
		clock = clock.Add(d + lateness[0])
		lateness = lateness[1:]
		c := make(chan time.Time, 1)
		c <- clock
		return c
	}
	require.NoError(t, g.Wait(context.Background(), "late.example", every))
	require.Equal(t, 2, slots.calls, "the late wake gave its slot up; the second, woken exactly at the tolerance, was used")
	require.Empty(t, lateness)
}

func TestWaitHonoursTheCallersDeadlineAndCancellation(t *testing.T) {
	t.Parallel()
	st := replicas(t, 1)[0]
	g := New(st, Options{Jitter: -1})
	ctx := context.Background()
	require.NoError(t, g.Wait(ctx, "busy.example", time.Minute), "a free host passes at once")
	var booked time.Time
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT next_at FROM pacing_hosts WHERE host = 'busy.example'`).Scan(&booked))

	// The next slot is a minute away; a caller with 5s left is told so at
	// once and takes nothing (5s, not less: the statement itself must fit
	// in the deadline on a busy machine).
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := g.Wait(short, "busy.example", time.Minute)
	cancel()
	require.ErrorIs(t, err, ErrBusy)
	var after time.Time
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT next_at FROM pacing_hosts WHERE host = 'busy.example'`).Scan(&after))
	require.Equal(t, booked, after, "a refused caller reserves no slot")

	// A caller that is cancelled while it waits returns with the cause.
	waiting, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Wait(waiting, "busy.example", time.Minute) }()
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

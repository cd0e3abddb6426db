package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// nowSlots is the reservation as it was before clock_timestamp(): the slot
// computed from now(), the transaction's start. It is here only as the
// reference `bench pacing` measures the store's statement against (the
// gate's late-wake rule applies to both).
type nowSlots struct{ pool *pgxpool.Pool }

func (s nowSlots) ReservePace(ctx context.Context, host string, every, maxWait time.Duration) (time.Duration, bool, error) {
	var waitUS int64
	err := s.pool.QueryRow(ctx, `
		INSERT INTO pacing_hosts AS p (host, next_at) VALUES ($1, now() + $2::interval)
		ON CONFLICT (host) DO UPDATE
			SET next_at = greatest(p.next_at, now()) + $2::interval
			WHERE p.next_at - now() <= $3::interval
		RETURNING (extract(epoch FROM (next_at - $2::interval - now())) * 1e6)::bigint`,
		host, every, maxWait).Scan(&waitUS)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return max(time.Duration(waitUS)*time.Microsecond, 0), true, nil
}

// countedSlots counts the reservations, which exceed the requests by the
// slots callers woke too late for (pacing.LateShare).
type countedSlots struct {
	pacing.Slots
	n *atomic.Int64
}

func (c countedSlots) ReservePace(ctx context.Context, host string, every, maxWait time.Duration) (time.Duration, bool, error) {
	c.n.Add(1)
	return c.Slots.ReservePace(ctx, host, every, maxWait)
}

// benchPacing sends perGate requests through each of two gates on one
// database (two replicas, 8 goroutines each) to one loopback host at a 50 ms
// interval without jitter, and reports the gaps the server saw: the
// smallest and the 1st percentile, for the now() statement and the store's.
func benchPacing(ctx context.Context, e *env, perGate int) error {
	const every = 50 * time.Millisecond
	db, err := e.database(ctx)
	if err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		arrivals []time.Time
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		now := time.Now()
		mu.Lock()
		arrivals = append(arrivals, now)
		mu.Unlock()
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	target := "http://" + ln.Addr().String() + "/"

	var stores []*store.Store
	for range 2 {
		st, err := store.Open(ctx, db)
		if err != nil {
			return err
		}
		defer st.Close()
		stores = append(stores, st)
	}
	fmt.Printf("Pacing: 2 gates on one database × %d requests each (8 goroutines per gate) to one loopback host, interval %s, no jitter\n\n", perGate, every)
	run := func(name, host string, slots func(*store.Store) pacing.Slots) error {
		mu.Lock()
		arrivals = arrivals[:0]
		mu.Unlock()
		var wg sync.WaitGroup
		var werr error
		var reserved atomic.Int64
		for _, st := range stores {
			g := pacing.New(countedSlots{slots(st), &reserved}, pacing.Options{Jitter: -1})
			work := make(chan struct{}, perGate)
			for range perGate {
				work <- struct{}{}
			}
			close(work)
			for range 8 {
				wg.Go(func() {
					hc := &http.Client{}
					for range work {
						if err := g.Wait(ctx, host, every); err != nil {
							mu.Lock()
							werr = errors.Join(werr, err)
							mu.Unlock()
							return
						}
						resp, err := hc.Get(target)
						if err != nil {
							mu.Lock()
							werr = errors.Join(werr, err)
							mu.Unlock()
							return
						}
						resp.Body.Close()
					}
				})
			}
		}
		wg.Wait()
		if werr != nil {
			return werr
		}
		mu.Lock()
		at := append([]time.Time(nil), arrivals...)
		mu.Unlock()
		sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
		gaps := make([]time.Duration, 0, len(at))
		for i := 1; i < len(at); i++ {
			gaps = append(gaps, at[i].Sub(at[i-1]))
		}
		sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
		var under, half int
		for _, g := range gaps {
			if g < every*9/10 {
				under++
			}
			if g < every/2 {
				half++
			}
		}
		p1 := gaps[len(gaps)/100]
		fmt.Printf("%-28s requests %d (slots taken %d)  smallest gap %-9s (%.3f of the interval)  p1 gap %-9s (%.3f)  median %-9s  gaps < 0.9 interval %d, < half %d\n",
			name, len(at), reserved.Load(), gaps[0].Round(10*time.Microsecond), float64(gaps[0])/float64(every),
			p1.Round(10*time.Microsecond), float64(p1)/float64(every), gaps[len(gaps)/2].Round(10*time.Microsecond), under, half)
		return nil
	}
	if err := run("before: now()", "pacing-now.example", func(st *store.Store) pacing.Slots { return nowSlots{st.Pool} }); err != nil {
		return err
	}
	return run("after: clock_timestamp()", "pacing-clock.example", func(st *store.Store) pacing.Slots { return st })
}

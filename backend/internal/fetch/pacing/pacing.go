// Package pacing is the per-host pacing gate every request to a Site passes
// (poll, Cover, archive, browser navigation): a minimum interval between two
// requests to one host, plus jitter, shared by every goroutine of every
// replica through a row per host in Postgres (docs/adr/0009-politeness.md).
//
// A caller reserves the host's next slot and advances it in one statement,
// then sleeps until its slot. An in-process limiter would multiply the rate
// by the number of replicas; the row makes it global for one round trip per
// request, negligible next to the request it gates.
package pacing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"time"
)

// DefaultJitter is the largest extra share of the interval added to each
// slot: requests to a host are at least every apart and on average 10% more,
// so the gaps between them do not betray a timer.
const DefaultJitter = 0.2

// DefaultMaxWait bounds the wait of a caller without a deadline.
const DefaultMaxWait = 10 * time.Minute

// LateShare is how late, as a share of the interval, a caller may wake for
// its slot and still use it. One that wakes later (a busy machine's timer)
// would land that much closer to the next slot, which another caller may
// use on time; it takes a new slot instead, so the host only sees a lower
// rate, never a shorter gap.
const LateShare = 0.1

// ErrBusy: the host is booked beyond the caller's deadline; no slot was taken.
var ErrBusy = errors.New("host booked beyond the wait allowed")

// Slots keeps every host's next free slot where all replicas share it;
// *store.Store implements it with a row per host in Postgres.
type Slots interface {
	// ReservePace takes host's next slot and moves the one after it every
	// later, in one step that orders concurrent callers of every replica;
	// it returns how long the caller waits for its slot. A slot more than
	// maxWait away is not taken: reserved is false.
	ReservePace(ctx context.Context, host string, every, maxWait time.Duration) (wait time.Duration, reserved bool, err error)
}

// Options configure a Gate.
type Options struct {
	// Jitter is the largest extra share of the interval (0.2: up to 20%
	// more); 0 means DefaultJitter, a negative value none.
	Jitter float64
	// MaxWait bounds the wait of a caller whose context has no deadline;
	// 0 means DefaultMaxWait.
	MaxWait time.Duration
}

// Gate is the pacing gate. It is safe for concurrent use, and any number of
// Gates on one database (one per replica) share the same slots.
type Gate struct {
	slots   Slots
	jitter  float64
	maxWait time.Duration
	// now and after are the clock, a seam for the late-wake test.
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
}

// New returns a Gate over slots (the store: one database for every replica).
func New(slots Slots, opts Options) *Gate {
	g := &Gate{slots: slots, jitter: opts.Jitter, maxWait: opts.MaxWait, now: time.Now, after: time.After}
	if g.jitter == 0 {
		g.jitter = DefaultJitter
	}
	if g.jitter < 0 {
		g.jitter = 0
	}
	if g.maxWait <= 0 {
		g.maxWait = DefaultMaxWait
	}
	return g
}

// Wait returns when a request to host may start: at least every after the
// previous slot any caller took for it, plus jitter. An interval of zero or
// less passes at once without touching the database. The wait ends early
// with the context's error; the slot is then lost, which only makes the
// host's rate lower. When the host's next slot lies beyond the context's
// deadline, Wait returns ErrBusy at once and takes nothing.
func (g *Gate) Wait(ctx context.Context, host string, every time.Duration) error {
	if every <= 0 {
		return ctx.Err()
	}
	host = Host(host)
	if host == "" {
		return errors.New("pace: empty host")
	}
	if g.jitter > 0 {
		every += time.Duration(rand.Float64() * g.jitter * float64(every))
	}
	// The database keeps microseconds; the interval it books is this one.
	every = every.Truncate(time.Microsecond)
	tolerance := time.Duration(LateShare * float64(every))
	for {
		maxWait := g.maxWait
		if dl, ok := ctx.Deadline(); ok {
			maxWait = min(maxWait, dl.Sub(g.now()))
		}
		if maxWait < 0 {
			return fmt.Errorf("pace %s: %w", host, context.DeadlineExceeded)
		}
		wait, reserved, err := g.slots.ReservePace(ctx, host, every, maxWait)
		if err != nil {
			return err
		}
		if !reserved {
			return fmt.Errorf("pace %s: %w", host, ErrBusy)
		}
		if wait <= 0 {
			return nil
		}
		due := g.now().Add(wait)
		select {
		case <-g.after(wait):
		case <-ctx.Done():
			return fmt.Errorf("pace %s: %w", host, ctx.Err())
		}
		if g.now().Sub(due) <= tolerance {
			return nil
		}
		// Woken too late for this slot: the next one may already be in use.
	}
}

// Host is the key a host is paced under: lower case, without a port, a
// trailing dot or a leading "www.", so every spelling of one Site host
// shares one slot.
func Host(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	return strings.TrimPrefix(h, "www.")
}

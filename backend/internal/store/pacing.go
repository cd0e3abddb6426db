package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PaceSlot is one reservation of a host's request slot, on the database's
// clock.
type PaceSlot struct {
	// At is when the caller's request may start.
	At time.Time
	// Taken is when the statement that reserved it finished, after it won
	// the row lock: a slot of a free host is a few microseconds before it.
	Taken time.Time
}

// Wait is how long the caller waits from the reservation to its slot.
func (p PaceSlot) Wait() time.Duration { return max(p.At.Sub(p.Taken), 0) }

// ReservePace takes the next request slot of host and moves the host's next
// slot every later, in one statement: the row lock orders concurrent callers
// of every replica, so two never get the same slot. It returns how long the
// caller must wait for its slot (0 when the host is free now), measured on
// the database's clock. When the slot is more than maxWait away nothing is
// reserved and reserved is false. It implements pacing.Slots.
func (s *Store) ReservePace(ctx context.Context, host string, every, maxWait time.Duration) (time.Duration, bool, error) {
	slot, reserved, err := s.ReservePaceSlot(ctx, host, every, maxWait)
	return slot.Wait(), reserved, err
}

// ReservePaceSlot is ReservePace with the slot itself, for the tests and the
// bench that check the slots every replica took.
//
// The time is clock_timestamp(), the moment the statement runs after it won
// the row lock, not now(), the transaction's start: a caller that queued on
// the lock behind others would otherwise be handed a slot in its past,
// fire at once, and land closer than every to the caller after it.
func (s *Store) ReservePaceSlot(ctx context.Context, host string, every, maxWait time.Duration) (PaceSlot, bool, error) {
	var slot PaceSlot
	err := s.db.QueryRow(ctx, `
		INSERT INTO pacing_hosts AS p (host, next_at) VALUES ($1, clock_timestamp() + $2::interval)
		ON CONFLICT (host) DO UPDATE
			SET next_at = greatest(p.next_at, clock_timestamp()) + $2::interval
			WHERE p.next_at - clock_timestamp() <= $3::interval
		RETURNING next_at - $2::interval, clock_timestamp()`,
		host, every, maxWait).Scan(&slot.At, &slot.Taken)
	if errors.Is(err, pgx.ErrNoRows) {
		return PaceSlot{}, false, nil
	}
	if err != nil {
		return PaceSlot{}, false, fmt.Errorf("pace %s: %w", host, err)
	}
	return slot, true, nil
}

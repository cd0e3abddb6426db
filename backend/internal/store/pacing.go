package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReservePace takes the next request slot of host and moves the host's next
// slot every later, in one statement: the row lock orders concurrent callers
// of every replica, so two never get the same slot. It returns how long the
// caller must wait for its slot (0 when the host is free now), measured on
// the database's clock. When the slot is more than maxWait away nothing is
// reserved and reserved is false. It implements pacing.Slots.
func (s *Store) ReservePace(ctx context.Context, host string, every, maxWait time.Duration) (time.Duration, bool, error) {
	var waitUS int64
	err := s.db.QueryRow(ctx, `
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
		return 0, false, fmt.Errorf("pace %s: %w", host, err)
	}
	return max(time.Duration(waitUS)*time.Microsecond, 0), true, nil
}

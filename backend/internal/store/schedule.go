package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The adaptive Poll's state (latest/adaptive.go): what its plan reads of
// each held Series, the release rhythms it caches, the horizons it claims
// per Site, and the schedules it records for the Series page and the Owner.

// ScheduleCandidate is a held Series as the adaptive plan reads it.
type ScheduleCandidate struct {
	Key     string
	Readers int
	// CreatedAt is when the Series was created, its Acquisition queued:
	// its Latest Chapter history starts there.
	CreatedAt                      time.Time
	LastPollAt, NextPollAt, HintAt *time.Time
	NextPollReason                 string
	// RhythmAt is when the cached schedule.Rhythm was estimated (nil:
	// none). The rhythm itself is not read with the candidates: the plan
	// keeps the ones it decoded, and reads only the others
	// (CachedRhythms).
	RhythmAt *time.Time
	// LastChangeAt is when the newest Latest Chapter change was first seen
	// (nil: none yet). LastRelease is that change as a release, with the
	// poll before it; nil when the newest change is the first Latest
	// Chapter ever found, which says nothing of when it was released.
	LastChangeAt *time.Time
	LastRelease  *Release
}

// Release is a change of a Series' Latest Chapter as the Poll saw it: first
// seen by the poll at Seen, missed by the successful poll at After.
type Release struct {
	Seen, After time.Time
}

// ScheduleCandidates lists the held Series of a Site with what the plan
// needs of each, by key. It is the plan tick's largest read (every held
// Series of the Site, 100,000 at the scale fixture), so it reads one table:
// no rhythm JSON, the newest history change from the Series row (kept by a
// trigger, migration 0157), and it sorts in Go rather than in a database
// sort that spills to disk (docs/adr/0033).
func (s *Store) ScheduleCandidates(ctx context.Context, site string) ([]ScheduleCandidate, error) {
	rows, err := s.db.Query(ctx, `
		SELECT key, readers, created_at, last_poll_at, next_poll_at, hint_at, next_poll_reason,
			rhythm_at, last_change_at, last_change_prev_poll_at
		FROM series
		WHERE site = $1 AND readers > 0 AND gone_at IS NULL`, site)
	if err != nil {
		return nil, fmt.Errorf("schedule candidates of %s: %w", site, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ScheduleCandidate, error) {
		var c ScheduleCandidate
		var prev *time.Time
		err := row.Scan(&c.Key, &c.Readers, &c.CreatedAt, &c.LastPollAt, &c.NextPollAt, &c.HintAt, &c.NextPollReason,
			&c.RhythmAt, &c.LastChangeAt, &prev)
		if c.LastChangeAt != nil && prev != nil {
			c.LastRelease = &Release{Seen: *c.LastChangeAt, After: *prev}
		}
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("schedule candidates of %s: %w", site, err)
	}
	slices.SortFunc(out, func(a, b ScheduleCandidate) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// CachedRhythm is a Series' cached rhythm (JSON) and when it was estimated.
type CachedRhythm struct {
	Rhythm []byte
	At     time.Time
}

// CachedRhythms reads the cached rhythms of keys, by key; a Series without
// one is left out.
func (s *Store) CachedRhythms(ctx context.Context, keys []string) (map[string]CachedRhythm, error) {
	out := make(map[string]CachedRhythm, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, `
		SELECT key, rhythm, rhythm_at FROM series
		WHERE key = ANY($1) AND rhythm IS NOT NULL AND rhythm_at IS NOT NULL`, keys)
	if err != nil {
		return nil, fmt.Errorf("cached rhythms: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var r CachedRhythm
		if err := rows.Scan(&key, &r.Rhythm, &r.At); err != nil {
			return nil, fmt.Errorf("cached rhythms: %w", err)
		}
		out[key] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cached rhythms: %w", err)
	}
	return out, nil
}

// HeldSites lists the Sites with at least one held Series, by name.
func (s *Store) HeldSites(ctx context.Context) ([]string, error) {
	// Walks the Site index from one Site to the next (a handful of probes)
	// instead of reading every Series: this runs at every plan tick.
	rows, err := s.db.Query(ctx, `
		WITH RECURSIVE sites AS (
			(SELECT site FROM series ORDER BY site LIMIT 1)
			UNION ALL
			SELECT (SELECT site FROM series WHERE site > sites.site ORDER BY site LIMIT 1) FROM sites WHERE sites.site IS NOT NULL
		)
		SELECT site FROM sites
		WHERE site IS NOT NULL AND EXISTS (SELECT 1 FROM series WHERE series.site = sites.site AND readers > 0 AND gone_at IS NULL)
		ORDER BY site`)
	if err != nil {
		return nil, fmt.Errorf("held sites: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("held sites: %w", err)
	}
	return out, nil
}

// ReleaseHistory returns the releases of each Series first seen after
// since, oldest first. The first Latest Chapter ever found (no successful
// poll before it) is left out: it was released at some unknown time before
// the Series was first polled.
func (s *Store) ReleaseHistory(ctx context.Context, keys []string, since time.Time) (map[string][]Release, error) {
	out := make(map[string][]Release, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, `
		SELECT series_key, first_seen_at, prev_poll_at FROM latest_chapter_history
		WHERE series_key = ANY($1) AND prev_poll_at IS NOT NULL AND first_seen_at > $2
		ORDER BY series_key, first_seen_at, id`, keys, since)
	if err != nil {
		return nil, fmt.Errorf("release history: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var r Release
		if err := rows.Scan(&key, &r.Seen, &r.After); err != nil {
			return nil, fmt.Errorf("release history: %w", err)
		}
		out[key] = append(out[key], r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("release history: %w", err)
	}
	return out, nil
}

// RhythmRecord is a Series' estimated rhythm (JSON) and when it was made.
type RhythmRecord struct {
	Key    string
	Rhythm []byte
	At     time.Time
}

// SetRhythms caches estimated rhythms in one statement. Bookkeeping only:
// updated_at does not change.
func (s *Store) SetRhythms(ctx context.Context, recs []RhythmRecord) error {
	if len(recs) == 0 {
		return nil
	}
	keys := make([]string, len(recs))
	rhythms := make([]string, len(recs))
	ats := make([]time.Time, len(recs))
	for i, r := range recs {
		keys[i], rhythms[i], ats[i] = r.Key, string(r.Rhythm), r.At
	}
	_, err := s.db.Exec(ctx, `
		UPDATE series s SET rhythm = r.rhythm::jsonb, rhythm_at = r.at
		FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS r(key, rhythm, at)
		WHERE s.key = r.key`, keys, rhythms, ats)
	if err != nil {
		return fmt.Errorf("record rhythms: %w", err)
	}
	return nil
}

// ClaimPlan claims a Site's next planning horizon at now: when less than
// lead of it is planned ahead, the horizon [start, start+horizon) that
// follows the last one claimed (or starts now, when that one is over) is
// claimed and its start returned; otherwise ok is false. Horizons are
// claimed under the Site's row lock, so however many replicas or jobs ask,
// each stretch of time is planned once and no budget slot is handed out
// twice. A claim far ahead of now (the clock stepped back) is dropped.
func (s *Store) ClaimPlan(ctx context.Context, site string, now time.Time, lead, horizon time.Duration) (start time.Time, ok bool, err error) {
	err = s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, `INSERT INTO site_state (site) VALUES ($1) ON CONFLICT (site) DO NOTHING`, site); err != nil {
			return err
		}
		var until *time.Time
		if err := tx.db.QueryRow(ctx, `SELECT planned_until FROM site_state WHERE site = $1 FOR UPDATE`, site).Scan(&until); err != nil {
			return err
		}
		start = now
		if until != nil && until.After(now) {
			if until.Sub(now) >= lead && until.Sub(now) <= 2*horizon {
				return nil
			}
			if until.Sub(now) <= 2*horizon {
				start = *until
			}
		}
		ok = true
		_, err := tx.db.Exec(ctx, `UPDATE site_state SET planned_until = $2 WHERE site = $1`, site, start.Add(horizon))
		return err
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("claim plan of %s: %w", site, err)
	}
	return start, ok, nil
}

// QueuedPoll is a poll_series job queued or running.
type QueuedPoll struct {
	ID          int64
	Key, State  string
	Reason      string
	ScheduledAt time.Time
	// Attempted: the job ran at least once (a snoozed or retrying poll).
	Attempted bool
}

// QueuedPollJobs lists every poll queued or running, by key.
func (s *Store) QueuedPollJobs(ctx context.Context) ([]QueuedPoll, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id, coalesce(args->>'key', ''), state::text, coalesce(args->>'reason', ''), scheduled_at, attempted_at IS NOT NULL
		FROM river_job WHERE state IN (`+queuedStates+`) AND kind = $1
		ORDER BY args->>'key', scheduled_at, id`, pollKind)
	if err != nil {
		return nil, fmt.Errorf("queued poll jobs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueuedPoll, error) {
		var q QueuedPoll
		err := row.Scan(&q.ID, &q.Key, &q.State, &q.Reason, &q.ScheduledAt, &q.Attempted)
		return q, err
	})
	if err != nil {
		return nil, fmt.Errorf("queued poll jobs: %w", err)
	}
	return out, nil
}

// LockLastPolls locks the rows of keys for the rest of the transaction and
// returns their last_poll_at now (nil: never polled), so the plan can drop
// a Series polled since it read it: its decision was made on stale facts,
// and the next plan, minutes later, decides again.
func (s *Store) LockLastPolls(ctx context.Context, keys []string) (map[string]*time.Time, error) {
	return s.lockPollTimes(ctx, keys, `SELECT key, last_poll_at FROM series WHERE key = ANY($1) ORDER BY key FOR UPDATE`)
}

// SeriesSchedule is one held Series' schedule, for the Owner's lists.
type SeriesSchedule struct {
	Key, Site, Title string
	Readers          int
	LastPollAt       *time.Time
	NextPollAt       *time.Time
	NextPollReason   string
	Rhythm           []byte
}

// SiteSchedules lists a Site's held Series by next poll (unplanned first),
// at most limit.
func (s *Store) SiteSchedules(ctx context.Context, site string, limit int) ([]SeriesSchedule, error) {
	rows, err := s.db.Query(ctx, `
		SELECT key, site, title, readers, last_poll_at, next_poll_at, next_poll_reason, rhythm
		FROM series WHERE site = $1 AND readers > 0
		ORDER BY next_poll_at NULLS FIRST, key LIMIT $2`, site, limit)
	if err != nil {
		return nil, fmt.Errorf("schedules of %s: %w", site, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SeriesSchedule, error) {
		var c SeriesSchedule
		err := row.Scan(&c.Key, &c.Site, &c.Title, &c.Readers, &c.LastPollAt, &c.NextPollAt, &c.NextPollReason, &c.Rhythm)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("schedules of %s: %w", site, err)
	}
	return out, nil
}

// ReasonCount is how many held Series of a Site wait for their next poll
// for one reason.
type ReasonCount struct {
	Site, Reason string
	Count        int
}

// ScheduleReasons counts the held Series of every Site by the reason of
// their next poll.
func (s *Store) ScheduleReasons(ctx context.Context) ([]ReasonCount, error) {
	rows, err := s.db.Query(ctx, `
		SELECT site, next_poll_reason, count(*) FROM series WHERE readers > 0
		GROUP BY 1, 2 ORDER BY 1, 3 DESC, 2`)
	if err != nil {
		return nil, fmt.Errorf("schedule reasons: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReasonCount, error) {
		var c ReasonCount
		err := row.Scan(&c.Site, &c.Reason, &c.Count)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("schedule reasons: %w", err)
	}
	return out, nil
}

// SetNextPoll records one Series' next poll and its reason (an Owner's
// request). store.ErrNotFound for an unknown Series.
func (s *Store) SetNextPoll(ctx context.Context, key string, at time.Time, reason string) error {
	tag, err := s.db.Exec(ctx, `UPDATE series SET next_poll_at = $2, next_poll_reason = $3 WHERE key = $1`, key, at, reason)
	if err != nil {
		return fmt.Errorf("record next poll of %s: %w", key, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("record next poll of %s: %w", key, ErrNotFound)
	}
	return nil
}

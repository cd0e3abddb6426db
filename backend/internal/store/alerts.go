package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SitePolls counts a Site's Series by how their last poll within a window
// went: what the Owner alerts judge a Site by.
type SitePolls struct {
	Site string
	// Polled is every Series polled in the window; OK answered a Latest
	// Chapter (or 304).
	Polled, OK int
	// The failures by cause: the Site could not be reached or answered
	// an error; it refused us (a challenge, a block page, a back-off); its
	// pages no longer look as the extractor knows them.
	Unreachable, Refused, Shape int
}

// RecentPolls counts the last poll of every Series polled since since, by
// Site and cause (poll_problem is "code: detail"; the code names the cause).
func (s *Store) RecentPolls(ctx context.Context, since time.Time) ([]SitePolls, error) {
	rows, err := s.db.Query(ctx, `
		SELECT site, count(*),
		       count(*) FILTER (WHERE poll_status IN ('ok', 'not_modified')),
		       count(*) FILTER (WHERE poll_status = 'failed' OR (poll_status = 'problem' AND code IN ('empty_body', ''))),
		       count(*) FILTER (WHERE poll_status = 'backed_off' OR (poll_status = 'problem' AND code IN ('challenge', 'access_denied', 'login_wall'))),
		       count(*) FILTER (WHERE poll_status = 'problem' AND code IN ('not_series_page', 'no_chapters'))
		FROM (SELECT site, poll_status, split_part(poll_problem, ':', 1) AS code FROM series
		      WHERE last_poll_at >= $1 AND poll_status <> 'skipped') p
		GROUP BY site ORDER BY site`, since)
	if err != nil {
		return nil, fmt.Errorf("recent polls: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SitePolls, error) {
		var p SitePolls
		err := row.Scan(&p.Site, &p.Polled, &p.OK, &p.Unreachable, &p.Refused, &p.Shape)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("recent polls: %w", err)
	}
	return out, nil
}

// BackingOff is a Site paused by its back-off.
type BackingOff struct {
	Site          string
	Until         time.Time
	LastSuccessAt *time.Time
	LastProblem   string
}

// SitesBackingOff lists the Sites whose back-off runs past now.
func (s *Store) SitesBackingOff(ctx context.Context, now time.Time) ([]BackingOff, error) {
	rows, err := s.db.Query(ctx, `
		SELECT site, paused_until, last_success_at, last_problem FROM site_state
		WHERE paused_until > $1 ORDER BY site`, now)
	if err != nil {
		return nil, fmt.Errorf("sites backing off: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (BackingOff, error) {
		var b BackingOff
		err := row.Scan(&b.Site, &b.Until, &b.LastSuccessAt, &b.LastProblem)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("sites backing off: %w", err)
	}
	return out, nil
}

// StaleJobs counts the queue's jobs that could have run before olderThan
// and have not, and when the oldest could.
func (s *Store) StaleJobs(ctx context.Context, olderThan time.Time) (int, *time.Time, error) {
	var n int
	var oldest *time.Time
	err := s.db.QueryRow(ctx, `
		SELECT count(*), min(scheduled_at) FROM river_job
		WHERE state IN ('available', 'retryable') AND scheduled_at < $1`, olderThan).Scan(&n, &oldest)
	if err != nil {
		return 0, nil, fmt.Errorf("stale jobs: %w", err)
	}
	return n, oldest, nil
}

// MarkSitesHealthy records that these Sites answered mostly well at at.
func (s *Store) MarkSitesHealthy(ctx context.Context, sites []string, at time.Time) error {
	if len(sites) == 0 {
		return nil
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO site_health (site, healthy_at) SELECT unnest($1::text[]), $2
		ON CONFLICT (site) DO UPDATE SET healthy_at = EXCLUDED.healthy_at`, sites, at)
	if err != nil {
		return fmt.Errorf("mark sites healthy: %w", err)
	}
	return nil
}

// HealthySites returns when each Site was last seen healthy.
func (s *Store) HealthySites(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.db.Query(ctx, `SELECT site, healthy_at FROM site_health`)
	if err != nil {
		return nil, fmt.Errorf("healthy sites: %w", err)
	}
	out := map[string]time.Time{}
	var site string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&site, &at}, func() error { out[site] = at; return nil })
	if err != nil {
		return nil, fmt.Errorf("healthy sites: %w", err)
	}
	return out, nil
}

// OwnerAlert is one condition the watch has seen: pending while RaisedAt is
// nil.
type OwnerAlert struct {
	Key, Kind, Site, Cause, Message string
	FirstSeenAt                     time.Time
	RaisedAt                        *time.Time
}

// OwnerAlerts lists every alert row, pending and raised, oldest first.
func (s *Store) OwnerAlerts(ctx context.Context) ([]OwnerAlert, error) {
	rows, err := s.db.Query(ctx, `
		SELECT key, kind, site, cause, message, first_seen_at, raised_at FROM owner_alerts ORDER BY first_seen_at, key`)
	if err != nil {
		return nil, fmt.Errorf("owner alerts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OwnerAlert, error) {
		var a OwnerAlert
		err := row.Scan(&a.Key, &a.Kind, &a.Site, &a.Cause, &a.Message, &a.FirstSeenAt, &a.RaisedAt)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("owner alerts: %w", err)
	}
	return out, nil
}

// PutOwnerAlert inserts or updates an alert row.
func (s *Store) PutOwnerAlert(ctx context.Context, a OwnerAlert) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO owner_alerts (key, kind, site, cause, message, first_seen_at, raised_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (key) DO UPDATE SET cause = EXCLUDED.cause, message = EXCLUDED.message, raised_at = EXCLUDED.raised_at`,
		a.Key, a.Kind, a.Site, a.Cause, a.Message, a.FirstSeenAt, a.RaisedAt)
	if err != nil {
		return fmt.Errorf("put owner alert %s: %w", a.Key, err)
	}
	return nil
}

// DeleteOwnerAlert removes an alert row whose condition cleared.
func (s *Store) DeleteOwnerAlert(ctx context.Context, key string) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM owner_alerts WHERE key = $1`, key); err != nil {
		return fmt.Errorf("delete owner alert %s: %w", key, err)
	}
	return nil
}

// OwnerTargets lists the targets of every Owner.
func (s *Store) OwnerTargets(ctx context.Context) ([]Target, error) {
	rows, err := s.db.Query(ctx, `
		SELECT `+targetCols+`
		FROM notify_targets t JOIN readers r ON r.id = t.reader_id AND r.is_owner
		LEFT JOIN notify_deliveries d ON d.target_id = t.id
		GROUP BY t.id ORDER BY t.id`)
	if err != nil {
		return nil, fmt.Errorf("owner targets: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Target, error) { return scanTarget(row) })
	if err != nil {
		return nil, fmt.Errorf("owner targets: %w", err)
	}
	return out, nil
}

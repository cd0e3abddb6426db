package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SiteSettings are the Owner's run-time settings of one Site: a pause, and
// the pace and budget that replace the configured defaults (nil: the
// default).
type SiteSettings struct {
	Site     string
	Paused   bool
	PausedAt *time.Time
	Pace     *time.Duration
	// Budget is in scheduled polls per hour.
	Budget    *int
	UpdatedAt time.Time
}

// OwnerSettings are every Owner's run-time setting: the pause of all
// background work and each Site's settings (only the Sites that have any).
type OwnerSettings struct {
	AllPaused   bool
	AllPausedAt *time.Time
	Sites       map[string]SiteSettings
}

// OwnerSettings reads the Owner's run-time settings.
func (s *Store) OwnerSettings(ctx context.Context) (OwnerSettings, error) {
	out := OwnerSettings{Sites: map[string]SiteSettings{}}
	err := s.db.QueryRow(ctx, `SELECT paused, paused_at FROM background_pause`).Scan(&out.AllPaused, &out.AllPausedAt)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return OwnerSettings{}, fmt.Errorf("owner settings: %w", err)
	}
	rows, err := s.db.Query(ctx, `SELECT site, paused, paused_at, pace_ms, budget_per_hour, updated_at FROM site_settings`)
	if err != nil {
		return OwnerSettings{}, fmt.Errorf("owner settings: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SiteSettings, error) {
		var st SiteSettings
		var paceMS *int64
		err := row.Scan(&st.Site, &st.Paused, &st.PausedAt, &paceMS, &st.Budget, &st.UpdatedAt)
		if paceMS != nil {
			d := time.Duration(*paceMS) * time.Millisecond
			st.Pace = &d
		}
		return st, err
	})
	if err != nil {
		return OwnerSettings{}, fmt.Errorf("owner settings: %w", err)
	}
	for _, st := range list {
		out.Sites[st.Site] = st
	}
	return out, nil
}

// SetSitePaused pauses a Site (the Owner's decision) or lifts that pause.
// A Site's back-off is another matter (ResumeSite).
func (s *Store) SetSitePaused(ctx context.Context, site string, paused bool) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO site_settings (site, paused, paused_at) VALUES ($1, $2, CASE WHEN $2 THEN now() END)
		ON CONFLICT (site) DO UPDATE SET paused = $2,
			paused_at = CASE WHEN $2 THEN coalesce(site_settings.paused_at, now()) END, updated_at = now()`, site, paused)
	if err != nil {
		return fmt.Errorf("pause %s: %w", site, err)
	}
	return nil
}

// SiteChange changes a Site's pace and budget: a field whose Set is false
// is left as it is; a set field with a nil value goes back to the default.
type SiteChange struct {
	SetPace   bool
	Pace      *time.Duration
	SetBudget bool
	Budget    *int
}

// ChangeSiteSettings stores a Site's new pace and budget.
func (s *Store) ChangeSiteSettings(ctx context.Context, site string, c SiteChange) error {
	var paceMS *int64
	if c.Pace != nil {
		ms := c.Pace.Milliseconds()
		paceMS = &ms
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO site_settings (site, pace_ms, budget_per_hour) VALUES ($1, $3, $5)
		ON CONFLICT (site) DO UPDATE SET
			pace_ms = CASE WHEN $2 THEN $3 ELSE site_settings.pace_ms END,
			budget_per_hour = CASE WHEN $4 THEN $5 ELSE site_settings.budget_per_hour END,
			updated_at = now()`, site, c.SetPace, paceMS, c.SetBudget, c.Budget)
	if err != nil {
		return fmt.Errorf("change settings of %s: %w", site, err)
	}
	return nil
}

// SetAllPaused pauses all background work (the Owner's decision) or lifts
// that pause.
func (s *Store) SetAllPaused(ctx context.Context, paused bool) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO background_pause (paused, paused_at) VALUES ($1, CASE WHEN $1 THEN now() END)
		ON CONFLICT (only_row) DO UPDATE SET paused = $1,
			paused_at = CASE WHEN $1 THEN coalesce(background_pause.paused_at, now()) END, updated_at = now()`, paused)
	if err != nil {
		return fmt.Errorf("pause background work: %w", err)
	}
	return nil
}

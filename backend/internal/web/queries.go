package web

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

// seriesFacts are a Series' shared facts as the Series page shows them,
// whoever holds it.
type seriesFacts struct {
	Key, Site, Kind, SeriesURL, Title string
	CoverAddress, CoverType           string
	LatestLabel, LatestURL            string
	LatestNumber                      *float64
	LatestAt                          *time.Time
	Readers                           int
	CreatedAt                         time.Time
}

// loadSeries reads one Series row. It is the UI's only query of its own: the
// store has no Series reader yet, and this one is read-only.
func loadSeries(ctx context.Context, db store.DB, key string) (seriesFacts, error) {
	var s seriesFacts
	err := db.QueryRow(ctx, `
		SELECT key, site, kind, series_url, title, cover_address, cover_type,
		       latest_label, latest_url, latest_number, latest_at, readers, created_at
		FROM series WHERE key = $1`, key).
		Scan(&s.Key, &s.Site, &s.Kind, &s.SeriesURL, &s.Title, &s.CoverAddress, &s.CoverType,
			&s.LatestLabel, &s.LatestURL, &s.LatestNumber, &s.LatestAt, &s.Readers, &s.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return seriesFacts{}, store.ErrNotFound
	}
	if err != nil {
		return seriesFacts{}, fmt.Errorf("load series %s: %w", key, err)
	}
	return s, nil
}

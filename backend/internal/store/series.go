package store

import (
	"context"
	"fmt"
	"time"
)

// Series is one Series row: its shared facts and how its polling goes.
type Series struct {
	Key, Site, Kind, SeriesURL, Title string

	CoverAddress, CoverType, CoverSourceURL string
	CoverSize                               *int
	CoverAt                                 *time.Time

	LatestLabel, LatestURL string
	LatestNumber           *float64
	LatestLocked           bool
	LatestAt               *time.Time

	Readers int

	LastPollAt, NextPollAt, LastSuccessAt *time.Time
	PollStatus, PollProblem               string
	PollBodyLen, PollMS                   *int
	PollETag, PollLastModified            string
	PollFailures                          int

	CreatedAt, UpdatedAt time.Time
}

const seriesCols = `key, site, kind, series_url, title,
	cover_address, cover_type, cover_source_url, cover_size, cover_at,
	latest_label, latest_url, latest_number, latest_locked, latest_at,
	readers, last_poll_at, next_poll_at, last_success_at, poll_status, poll_problem,
	poll_body_len, poll_ms, poll_etag, poll_last_modified, poll_failures, created_at, updated_at`

func scanSeries(row interface{ Scan(...any) error }) (Series, error) {
	var s Series
	err := row.Scan(&s.Key, &s.Site, &s.Kind, &s.SeriesURL, &s.Title,
		&s.CoverAddress, &s.CoverType, &s.CoverSourceURL, &s.CoverSize, &s.CoverAt,
		&s.LatestLabel, &s.LatestURL, &s.LatestNumber, &s.LatestLocked, &s.LatestAt,
		&s.Readers, &s.LastPollAt, &s.NextPollAt, &s.LastSuccessAt, &s.PollStatus, &s.PollProblem,
		&s.PollBodyLen, &s.PollMS, &s.PollETag, &s.PollLastModified, &s.PollFailures, &s.CreatedAt, &s.UpdatedAt)
	return s, err
}

// SeriesByKey reads one Series.
func (s *Store) SeriesByKey(ctx context.Context, key string) (Series, error) {
	ser, err := scanSeries(s.db.QueryRow(ctx, `SELECT `+seriesCols+` FROM series WHERE key = $1`, key))
	if err != nil {
		if err = notFound(err); err == ErrNotFound {
			return Series{}, ErrNotFound
		}
		return Series{}, fmt.Errorf("load series %s: %w", key, err)
	}
	return ser, nil
}

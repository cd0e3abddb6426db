package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Bookmark is a Reader's hold on a Series joined with the Series' facts:
// everything one wire object or library card shows.
type Bookmark struct {
	ReaderID  int64
	SeriesKey string
	Site      string
	Kind      string
	SeriesURL string
	Title     string // the Series' title, or the Reader's hint while it has none

	CoverAddress string
	CoverType    string

	Chapter       string
	ChapterNumber *float64
	ChapterURL    string
	ProgressAt    *time.Time

	LatestLabel  string
	LatestNumber *float64
	LatestURL    string
	LatestLocked bool
	LatestAt     *time.Time

	CreatedAt time.Time
	UpdatedAt time.Time
	// SeriesUpdatedAt is when a Series fact last changed.
	SeriesUpdatedAt time.Time

	// WorkID is the Reader's Work the Bookmark is in, 0 when none (works.go).
	WorkID int64
	// GoneReason is why the Series is gone ("site removed", "not found
	// (404) since …"), "" while it is not.
	GoneReason string
}

const bookmarkCols = `
	b.reader_id, s.key, s.site, s.kind, s.series_url,
	CASE WHEN s.title <> '' THEN s.title ELSE b.title_hint END,
	s.cover_address, s.cover_type,
	b.chapter, b.chapter_number, b.chapter_url, b.progress_at,
	s.latest_label, s.latest_number, s.latest_url, s.latest_locked, s.latest_at,
	b.created_at, b.updated_at, s.updated_at,
	coalesce(b.work_id, 0), coalesce(s.gone_reason, '')`

func scanBookmark(row pgx.Row) (Bookmark, error) {
	var b Bookmark
	err := row.Scan(&b.ReaderID, &b.SeriesKey, &b.Site, &b.Kind, &b.SeriesURL, &b.Title,
		&b.CoverAddress, &b.CoverType,
		&b.Chapter, &b.ChapterNumber, &b.ChapterURL, &b.ProgressAt,
		&b.LatestLabel, &b.LatestNumber, &b.LatestURL, &b.LatestLocked, &b.LatestAt,
		&b.CreatedAt, &b.UpdatedAt, &b.SeriesUpdatedAt,
		&b.WorkID, &b.GoneReason)
	return b, err
}

// ListBookmarks lists a Reader's Bookmarks, of one Library when kind is set,
// oldest first so the order is stable across refreshes.
func (s *Store) ListBookmarks(ctx context.Context, readerID int64, kind string) ([]Bookmark, error) {
	rows, err := s.db.Query(ctx, `
		SELECT `+bookmarkCols+`
		FROM bookmarks b JOIN series s ON s.key = b.series_key
		WHERE b.reader_id = $1 AND ($2 = '' OR s.kind = $2)
		ORDER BY b.created_at, s.key`, readerID, kind)
	if err != nil {
		return nil, fmt.Errorf("list bookmarks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Bookmark, error) { return scanBookmark(row) })
	if err != nil {
		return nil, fmt.Errorf("list bookmarks: %w", err)
	}
	return out, nil
}

// ListVersion returns a Reader's list version: it changes whenever anything
// ListBookmarks would return for them changes, of either Library
// (migrations/0110_list_versions.up.sql keeps it).
func (s *Store) ListVersion(ctx context.Context, readerID int64) (int64, error) {
	var v int64
	err := s.db.QueryRow(ctx, `SELECT version FROM reader_lists WHERE reader_id = $1`, readerID).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("list version of reader %d: %w", readerID, notFound(err))
	}
	return v, nil
}

// ListBookmarksAt is ListBookmarks with the list version it shows, both read
// in one snapshot, so a body is never cached under a version it is not.
func (s *Store) ListBookmarksAt(ctx context.Context, readerID int64, kind string) (version int64, list []Bookmark, err error) {
	tx, err := s.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, nil, fmt.Errorf("list bookmarks: begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // read-only; nothing to keep
	in := &Store{Pool: s.Pool, db: tx, tx: tx}
	if version, err = in.ListVersion(ctx, readerID); err != nil {
		return 0, nil, err
	}
	if list, err = in.ListBookmarks(ctx, readerID, kind); err != nil {
		return 0, nil, err
	}
	return version, list, nil
}

// GetBookmark returns one of a Reader's Bookmarks.
func (s *Store) GetBookmark(ctx context.Context, readerID int64, key string) (Bookmark, error) {
	b, err := scanBookmark(s.db.QueryRow(ctx, `
		SELECT `+bookmarkCols+`
		FROM bookmarks b JOIN series s ON s.key = b.series_key
		WHERE b.reader_id = $1 AND b.series_key = $2`, readerID, key))
	return b, notFound(err)
}

// NewSeries is what a Bookmark needs to create its Series: identity only.
// The facts (title, Cover, Latest Chapter) come from the backend's fetches.
type NewSeries struct {
	Key, Site, Kind, SeriesURL string
}

// Progress is the chapter a Reader recorded.
type Progress struct {
	Chapter       string
	ChapterNumber *float64
	ChapterURL    string
}

// PutResult says what PutBookmark changed.
type PutResult struct {
	Bookmark      Bookmark
	Created       bool // the Bookmark is new
	SeriesCreated bool // the Series is new: its Acquisition must be queued
}

// ensureSeries creates the Series row unless it exists, reporting whether it
// did.
func (s *Store) ensureSeries(ctx context.Context, ns NewSeries) (bool, error) {
	var created bool
	err := s.db.QueryRow(ctx, `
		INSERT INTO series (key, site, kind, series_url) VALUES ($1, $2, $3, $4)
		ON CONFLICT (key) DO NOTHING RETURNING true`, ns.Key, ns.Site, ns.Kind, ns.SeriesURL).Scan(&created)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("create series %s: %w", ns.Key, err)
	}
	return created, nil
}

// PutBookmark creates or updates a Reader's Bookmark, creating the Series
// when nobody held it before. titleHint is the client's title, kept on the
// Bookmark only.
func (s *Store) PutBookmark(ctx context.Context, readerID int64, ns NewSeries, titleHint string, p Progress) (PutResult, error) {
	var res PutResult
	err := s.InTx(ctx, func(tx *Store) error {
		var err error
		if res.SeriesCreated, err = tx.ensureSeries(ctx, ns); err != nil {
			return err
		}
		err = tx.db.QueryRow(ctx, `
			INSERT INTO bookmarks (reader_id, series_key, title_hint, chapter, chapter_number, chapter_url, progress_at)
			VALUES ($1, $2, $3, $4, $5, $6, now())
			ON CONFLICT (reader_id, series_key) DO UPDATE SET
				title_hint = CASE WHEN EXCLUDED.title_hint <> '' THEN EXCLUDED.title_hint ELSE bookmarks.title_hint END,
				chapter = EXCLUDED.chapter, chapter_number = EXCLUDED.chapter_number,
				chapter_url = EXCLUDED.chapter_url, progress_at = now(), updated_at = now()
			RETURNING (xmax = 0)`,
			readerID, ns.Key, titleHint, p.Chapter, p.ChapterNumber, p.ChapterURL).Scan(&res.Created)
		if err != nil {
			return fmt.Errorf("put bookmark %s: %w", ns.Key, err)
		}
		res.Bookmark, err = tx.GetBookmark(ctx, readerID, ns.Key)
		return err
	})
	return res, err
}

// PutBookmarkKeepProgress creates a Bookmark without Progress, or on an
// existing one changes only the title hint: a PUT without a chapter must not
// erase what the Reader recorded before.
func (s *Store) PutBookmarkKeepProgress(ctx context.Context, readerID int64, ns NewSeries, titleHint string) (PutResult, error) {
	var res PutResult
	err := s.InTx(ctx, func(tx *Store) error {
		var err error
		if res.SeriesCreated, err = tx.ensureSeries(ctx, ns); err != nil {
			return err
		}
		err = tx.db.QueryRow(ctx, `
			INSERT INTO bookmarks (reader_id, series_key, title_hint) VALUES ($1, $2, $3)
			ON CONFLICT (reader_id, series_key) DO UPDATE SET
				title_hint = CASE WHEN EXCLUDED.title_hint <> '' THEN EXCLUDED.title_hint ELSE bookmarks.title_hint END,
				updated_at = now()
			RETURNING (xmax = 0)`, readerID, ns.Key, titleHint).Scan(&res.Created)
		if err != nil {
			return fmt.Errorf("put bookmark %s: %w", ns.Key, err)
		}
		res.Bookmark, err = tx.GetBookmark(ctx, readerID, ns.Key)
		return err
	})
	return res, err
}

// DeleteBookmark removes a Reader's Bookmark. The Series stays: its facts
// cost nothing to keep and return at once if someone bookmarks it again; an
// unheld Series is simply not polled.
//
// A member of a Work leaves it (the last-but-one dissolves it), so its Work
// row is locked first (works.go's lock order).
func (s *Store) DeleteBookmark(ctx context.Context, readerID int64, key string) error {
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.lockWorksOf(ctx, readerID, []string{key}); err != nil {
			return err
		}
		tag, err := tx.db.Exec(ctx, `DELETE FROM bookmarks WHERE reader_id = $1 AND series_key = $2`, readerID, key)
		if err != nil {
			return fmt.Errorf("delete bookmark %s: %w", key, err)
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return nil
	})
}

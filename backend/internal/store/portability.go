package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ImportRow is one Bookmark an import writes: created when the Reader has
// none on the Series, otherwise given this Progress.
type ImportRow struct {
	Series    NewSeries
	TitleHint string
	// Progress is nil for a Bookmark without Progress; an existing
	// Bookmark is only ever passed here with Progress to record.
	Progress *Progress
	// ProgressAt and CreatedAt keep the times an export carried; nil means
	// now (CreatedAt is ignored for an existing Bookmark).
	ProgressAt *time.Time
	CreatedAt  *time.Time
}

// LockReaderBookmarks takes the Reader's row lock and returns their
// Bookmarks on keys, locked too. The Reader lock conflicts with the key
// share lock every new Bookmark's foreign key takes, so no PUT can create a
// Bookmark of this Reader (and no second import can start) until the
// transaction ends: what an import decides from these rows stays true until
// it writes. It must run inside InTx.
func (s *Store) LockReaderBookmarks(ctx context.Context, readerID int64, keys []string) (map[string]Bookmark, error) {
	if s.tx == nil {
		return nil, fmt.Errorf("lock bookmarks: not in a transaction")
	}
	var one int
	if err := s.db.QueryRow(ctx, `SELECT 1 FROM readers WHERE id = $1 FOR UPDATE`, readerID).Scan(&one); err != nil {
		return nil, fmt.Errorf("lock reader %d: %w", readerID, notFound(err))
	}
	rows, err := s.db.Query(ctx, `
		SELECT `+bookmarkCols+`
		FROM bookmarks b JOIN series s ON s.key = b.series_key
		WHERE b.reader_id = $1 AND b.series_key = ANY($2)
		FOR UPDATE OF b`, readerID, keys)
	if err != nil {
		return nil, fmt.Errorf("lock bookmarks: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Bookmark, error) { return scanBookmark(row) })
	if err != nil {
		return nil, fmt.Errorf("lock bookmarks: %w", err)
	}
	out := make(map[string]Bookmark, len(list))
	for _, b := range list {
		out[b.SeriesKey] = b
	}
	return out, nil
}

// ExistingSeries returns which of keys name a Series row already.
func (s *Store) ExistingSeries(ctx context.Context, keys []string) (map[string]bool, error) {
	rows, err := s.db.Query(ctx, `SELECT key FROM series WHERE key = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("existing series: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("existing series: %w", err)
	}
	out := make(map[string]bool, len(found))
	for _, k := range found {
		out[k] = true
	}
	return out, nil
}

// ImportBookmarks writes rows in two set-based statements (Series, then
// Bookmarks) and returns the keys of the Series it created, whose
// Acquisition the caller queues in the same transaction. Keys must be
// distinct. It must run inside InTx.
func (s *Store) ImportBookmarks(ctx context.Context, readerID int64, rows []ImportRow) (seriesCreated []string, err error) {
	if s.tx == nil {
		return nil, fmt.Errorf("import bookmarks: not in a transaction")
	}
	if len(rows) == 0 {
		return nil, nil
	}
	n := len(rows)
	keys, sites, kinds, urls := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	hints, chapters, chapterURLs := make([]string, n), make([]string, n), make([]string, n)
	numbers := make([]*float64, n)
	progressAt, createdAt := make([]*time.Time, n), make([]*time.Time, n)
	hasProgress := make([]bool, n)
	for i, r := range rows {
		keys[i], sites[i], kinds[i], urls[i] = r.Series.Key, r.Series.Site, r.Series.Kind, r.Series.SeriesURL
		hints[i] = r.TitleHint
		createdAt[i] = r.CreatedAt
		if r.Progress != nil {
			hasProgress[i] = true
			chapters[i], numbers[i], chapterURLs[i] = r.Progress.Chapter, r.Progress.ChapterNumber, r.Progress.ChapterURL
			progressAt[i] = r.ProgressAt
		}
	}

	created, err := s.db.Query(ctx, `
		INSERT INTO series (key, site, kind, series_url)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(k, s, kd, u)
		ORDER BY x.k
		ON CONFLICT (key) DO NOTHING
		RETURNING key`, keys, sites, kinds, urls)
	if err != nil {
		return nil, fmt.Errorf("import series: %w", err)
	}
	if seriesCreated, err = pgx.CollectRows(created, pgx.RowTo[string]); err != nil {
		return nil, fmt.Errorf("import series: %w", err)
	}

	// A Bookmark without Progress has no progress time; one with Progress
	// and no time carried gets now(), as a PUT would.
	_, err = s.db.Exec(ctx, `
		INSERT INTO bookmarks (reader_id, series_key, title_hint, chapter, chapter_number, chapter_url, progress_at, created_at)
		SELECT $1, x.k, x.h, x.c, x.n, x.u,
		       CASE WHEN x.p THEN coalesce(x.pa, now()) END,
		       coalesce(x.ca, now())
		FROM unnest($2::text[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::bool[], $8::timestamptz[], $9::timestamptz[])
		     AS x(k, h, c, n, u, p, pa, ca)
		ORDER BY x.k -- Series rows (their Reader counts) locked in key order: docs/adr/0017
		ON CONFLICT (reader_id, series_key) DO UPDATE SET
			title_hint = CASE WHEN EXCLUDED.title_hint <> '' THEN EXCLUDED.title_hint ELSE bookmarks.title_hint END,
			chapter = EXCLUDED.chapter, chapter_number = EXCLUDED.chapter_number,
			chapter_url = EXCLUDED.chapter_url, progress_at = EXCLUDED.progress_at, updated_at = now()`,
		readerID, keys, hints, chapters, numbers, chapterURLs, hasProgress, progressAt, createdAt)
	if err != nil {
		return nil, fmt.Errorf("import bookmarks: %w", err)
	}
	return seriesCreated, nil
}

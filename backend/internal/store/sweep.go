package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lectern-reader/lectern/backend/internal/riverjob"
)

// What the archive's sweep reads and writes: the chapters of followed
// Series ("keep archiving") that should be archived and are not.

// MissedChapter is a Latest Chapter a poll found after a Reader began to
// keep archiving its Series, which has no archive row: its follow was lost.
type MissedChapter struct {
	SeriesKey string
	LatestChapter
}

// MissedFollowedChapters lists the Latest Chapters of followed Series first
// seen after the Series' earliest follow and before seenBefore, that no
// archive row names, oldest first, at most limit.
func (s *Store) MissedFollowedChapters(ctx context.Context, seenBefore time.Time, limit int) ([]MissedChapter, error) {
	rows, err := s.db.Query(ctx, `
		SELECT h.series_key, h.label, h.number, h.url, h.locked
		FROM latest_chapter_history h
		JOIN (SELECT series_key, min(created_at) AS since FROM archive_follows GROUP BY series_key) f
			ON f.series_key = h.series_key
		WHERE h.first_seen_at > f.since AND h.first_seen_at < $1 AND h.url <> ''
			AND NOT EXISTS (SELECT 1 FROM archive_chapters c WHERE c.url = h.url)
		ORDER BY h.first_seen_at, h.id LIMIT $2`, seenBefore, limit)
	if err != nil {
		return nil, fmt.Errorf("missed followed chapters: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (MissedChapter, error) {
		var m MissedChapter
		err := row.Scan(&m.SeriesKey, &m.Label, &m.Number, &m.URL, &m.Locked)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("missed followed chapters: %w", err)
	}
	return out, nil
}

// ExhaustedArchiveChapters lists the chapters of followed Series that
// failed because their attempts ran out before before, oldest first, at
// most limit.
func (s *Store) ExhaustedArchiveChapters(ctx context.Context, before time.Time, limit int) ([]ArchiveChapter, error) {
	out, err := collectArchiveChapters(s.db.Query(ctx, `
		SELECT `+archiveChapterCols+` FROM archive_chapters c
		WHERE state = 'failed' AND exhausted_at < $1
			AND EXISTS (SELECT 1 FROM archive_follows f WHERE f.series_key = c.series_key)
		ORDER BY exhausted_at, id LIMIT $2`, before, limit))
	if err != nil {
		return nil, fmt.Errorf("exhausted archive chapters: %w", err)
	}
	return out, nil
}

// StoredPage is one stored file of an archived chapter.
type StoredPage struct {
	ChapterID int64
	Address   string
	Size      int
}

// FollowedArchivedPages calls fn with every page of every archived chapter
// of a followed Series, by chapter, so the sweep can check their files.
func (s *Store) FollowedArchivedPages(ctx context.Context, fn func(StoredPage) error) error {
	rows, err := s.db.Query(ctx, `
		SELECT p.chapter_id, p.address, p.size FROM archive_pages p
		JOIN archive_chapters c ON c.id = p.chapter_id
		WHERE c.state = 'archived'
			AND EXISTS (SELECT 1 FROM archive_follows f WHERE f.series_key = c.series_key)
		ORDER BY p.chapter_id, p.idx`)
	if err != nil {
		return fmt.Errorf("archived pages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p StoredPage
		if err := rows.Scan(&p.ChapterID, &p.Address, &p.Size); err != nil {
			return fmt.Errorf("archived pages: %w", err)
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("archived pages: %w", err)
	}
	return nil
}

// RequeueArchivedChapter makes an archived chapter whose files are lost
// queued again, in the caller's transaction: its pages become its
// checkpoint (a page whose file is still there is not fetched again) and
// it is hidden until it is archived anew. ErrArchiveNotQueued when it is
// not archived (any more).
func (s *Store) RequeueArchivedChapter(ctx context.Context, chapterID int64, detail string) (ArchiveChapter, error) {
	var out ArchiveChapter
	err := s.InTx(ctx, func(tx *Store) error {
		var state string
		err := tx.db.QueryRow(ctx, `SELECT state FROM archive_chapters WHERE id = $1 FOR UPDATE`, chapterID).Scan(&state)
		if err != nil {
			return notFound(err)
		}
		if state != ArchiveArchived {
			return ErrArchiveNotQueued
		}
		if _, err := tx.db.Exec(ctx, `
			INSERT INTO archive_staging (chapter_id, idx, page_url, address, content_type, size, crc32, width, height)
			SELECT chapter_id, idx, source_url, address, content_type, size, crc32, width, height
			FROM archive_pages WHERE chapter_id = $1
			ON CONFLICT (chapter_id, idx) DO NOTHING`, chapterID); err != nil {
			return err
		}
		if _, err := tx.db.Exec(ctx, `DELETE FROM archive_pages WHERE chapter_id = $1`, chapterID); err != nil {
			return err
		}
		out, err = scanArchiveChapter(tx.db.QueryRow(ctx, `
			UPDATE archive_chapters SET state = 'queued', archived_at = NULL, detail = $2, queued_at = now(), updated_at = now()
			WHERE id = $1 RETURNING `+archiveChapterCols, chapterID, truncateDetail(detail)))
		return err
	})
	if err != nil {
		if errors.Is(err, ErrArchiveNotQueued) {
			return ArchiveChapter{}, err
		}
		return ArchiveChapter{}, fmt.Errorf("queue lost chapter %d again: %w", chapterID, err)
	}
	return out, nil
}

// strandedWhere names the stranded chapters (c): queued before $1 with no
// archive_chapter job in flight for that queueing (a job whose "queued" is
// another queued_at archives nothing; one without it predates the field).
var strandedWhere = `c.state = 'queued' AND c.queued_at < $1
	AND NOT EXISTS (SELECT 1 FROM river_job j
		WHERE j.kind = '` + riverjob.ArchiveChapter + `' AND j.state IN (` + riverjob.InFlightSQL + `)
			AND j.args->>'url' = c.url
			AND (j.args->>'queued' IS NULL OR (j.args->>'queued')::timestamptz = c.queued_at))`

// StrandedArchiveChapters lists the queued chapters, of any Series, that
// were queued before before and that no job in flight archives: their job
// ended without archiving them (River discarded it, or it was lost), oldest
// first, at most limit. A chapter's row and its job commit together, so
// such a chapter would stay queued, charged and never archived.
func (s *Store) StrandedArchiveChapters(ctx context.Context, before time.Time, limit int) ([]ArchiveChapter, error) {
	out, err := collectArchiveChapters(s.db.Query(ctx, `
		SELECT `+archiveChapterCols+` FROM archive_chapters c
		WHERE `+strandedWhere+`
		ORDER BY queued_at, id LIMIT $2`, before, limit))
	if err != nil {
		return nil, fmt.Errorf("stranded archive chapters: %w", err)
	}
	return out, nil
}

// RequeueStrandedChapter queues a stranded chapter (StrandedArchiveChapters)
// again, in the caller's transaction, for the caller to give it a job: its
// checkpoint stays. ErrArchiveNotQueued when it is no longer stranded.
func (s *Store) RequeueStrandedChapter(ctx context.Context, chapterID int64, before time.Time, detail string) (ArchiveChapter, error) {
	var out ArchiveChapter
	err := s.InTx(ctx, func(tx *Store) error {
		var id int64
		err := tx.db.QueryRow(ctx, `
			SELECT c.id FROM archive_chapters c WHERE c.id = $2 AND `+strandedWhere+`
			FOR UPDATE OF c`, before, chapterID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrArchiveNotQueued
		}
		if err != nil {
			return err
		}
		out, err = scanArchiveChapter(tx.db.QueryRow(ctx, `
			UPDATE archive_chapters SET detail = $2, queued_at = now(), updated_at = now()
			WHERE id = $1 RETURNING `+archiveChapterCols, chapterID, truncateDetail(detail)))
		return err
	})
	if err != nil {
		if errors.Is(err, ErrArchiveNotQueued) {
			return ArchiveChapter{}, err
		}
		return ArchiveChapter{}, fmt.Errorf("queue stranded chapter %d again: %w", chapterID, err)
	}
	return out, nil
}

// LastRun is when the periodic chore name last ran to its end; nil: never.
func (s *Store) LastRun(ctx context.Context, name string) (*time.Time, error) {
	var at time.Time
	err := s.db.QueryRow(ctx, `SELECT last_run_at FROM periodic_runs WHERE name = $1`, name).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("last run of %s: %w", name, err)
	}
	return &at, nil
}

// SetLastRun records that the periodic chore name ran to its end, having
// started at.
func (s *Store) SetLastRun(ctx context.Context, name string, at time.Time) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO periodic_runs (name, last_run_at) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET last_run_at = greatest(periodic_runs.last_run_at, $2)`, name, at)
	if err != nil {
		return fmt.Errorf("record run of %s: %w", name, err)
	}
	return nil
}

// LockArchiveSeries serialises, until the caller's transaction ends, the
// archive's changes to one Series' chapters (positions, the cap), without
// blocking its polls.
func (s *Store) LockArchiveSeries(ctx context.Context, key string) error {
	if _, err := s.db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('archive:' || $1))`, key); err != nil {
		return fmt.Errorf("lock archive of %s: %w", key, err)
	}
	return nil
}

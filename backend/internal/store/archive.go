package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
)

// Archive states of a chapter. Only 'archived' is ever shown to a Reader.
const (
	ArchiveQueued    = "queued"
	ArchiveArchived  = "archived"
	ArchiveFailed    = "failed"
	ArchiveCancelled = "cancelled"
	// ArchiveRequestDone is a request resolved into chapter jobs.
	ArchiveRequestDone = "done"
)

// ErrArchiveNotQueued is returned when a chapter being published or failed
// is no longer queued: the Owner cancelled it meanwhile, or another attempt
// finished it.
var ErrArchiveNotQueued = errors.New("archive chapter is no longer queued")

// ArchiveAllowance is what a Reader may archive: the Owner's switch and cap,
// and how many chapters are charged to them already.
type ArchiveAllowance struct {
	ReaderID int64
	IsOwner  bool
	// Enabled is the Owner's switch for this Reader (an Owner is always
	// enabled and never capped).
	Enabled     bool
	MaxChapters *int
	// Charged counts the chapters queued or archived at this Reader's request.
	Charged int
}

// Remaining is how many more chapters may be charged, or -1 for no cap.
func (a ArchiveAllowance) Remaining() int {
	if a.IsOwner || a.MaxChapters == nil {
		return -1
	}
	return max(*a.MaxChapters-a.Charged, 0)
}

// ArchiveAllowanceOf reads a Reader's allowance. Inside a transaction it
// locks the Reader's row, so two requests resolving at once cannot both take
// the last chapters under the cap.
func (s *Store) ArchiveAllowanceOf(ctx context.Context, readerID int64) (ArchiveAllowance, error) {
	lock := ""
	if s.tx != nil {
		lock = " FOR UPDATE OF r"
	}
	a := ArchiveAllowance{ReaderID: readerID}
	err := s.db.QueryRow(ctx, `
		SELECT r.is_owner, coalesce(ar.enabled, false), ar.max_chapters
		FROM readers r LEFT JOIN archive_readers ar ON ar.reader_id = r.id
		WHERE r.id = $1`+lock, readerID).Scan(&a.IsOwner, &a.Enabled, &a.MaxChapters)
	if err != nil {
		return ArchiveAllowance{}, notFound(err)
	}
	if a.IsOwner {
		a.Enabled, a.MaxChapters = true, nil
	}
	err = s.db.QueryRow(ctx, `
		SELECT count(*) FROM archive_chapters WHERE requested_by = $1 AND state IN ('queued', 'archived')`, readerID).Scan(&a.Charged)
	if err != nil {
		return ArchiveAllowance{}, fmt.Errorf("archive allowance of reader %d: %w", readerID, err)
	}
	return a, nil
}

// SetArchiveReader sets the Owner's switch and cap for a Reader; a nil cap
// means none.
func (s *Store) SetArchiveReader(ctx context.Context, readerID int64, enabled bool, maxChapters *int) error {
	tag, err := s.db.Exec(ctx, `
		INSERT INTO archive_readers (reader_id, enabled, max_chapters)
		SELECT id, $2, $3 FROM readers WHERE id = $1
		ON CONFLICT (reader_id) DO UPDATE SET enabled = EXCLUDED.enabled, max_chapters = EXCLUDED.max_chapters, updated_at = now()`,
		readerID, enabled, maxChapters)
	if err != nil {
		return fmt.Errorf("set archive allowance of reader %d: %w", readerID, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// ArchiveReaderRow is one line of the Owner's view of Readers' archives.
type ArchiveReaderRow struct {
	ID          int64
	Name        string
	IsOwner     bool
	Enabled     bool
	MaxChapters *int
	Charged     int
	Archived    int
	Bytes       int64
	Following   int
}

// ListArchiveReaders lists every Reader with their switch, cap and use.
func (s *Store) ListArchiveReaders(ctx context.Context) ([]ArchiveReaderRow, error) {
	rows, err := s.db.Query(ctx, `
		SELECT r.id, r.name, r.is_owner, coalesce(ar.enabled, false), ar.max_chapters,
			(SELECT count(*) FROM archive_chapters c WHERE c.requested_by = r.id AND c.state IN ('queued', 'archived')),
			(SELECT count(*) FROM archive_chapters c WHERE c.requested_by = r.id AND c.state = 'archived'),
			(SELECT coalesce(sum(c.bytes), 0) FROM archive_chapters c WHERE c.requested_by = r.id AND c.state = 'archived'),
			(SELECT count(*) FROM archive_follows f WHERE f.reader_id = r.id)
		FROM readers r LEFT JOIN archive_readers ar ON ar.reader_id = r.id
		ORDER BY r.name`)
	if err != nil {
		return nil, fmt.Errorf("list archive readers: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArchiveReaderRow, error) {
		var a ArchiveReaderRow
		err := row.Scan(&a.ID, &a.Name, &a.IsOwner, &a.Enabled, &a.MaxChapters, &a.Charged, &a.Archived, &a.Bytes, &a.Following)
		if a.IsOwner {
			a.Enabled = true
		}
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("list archive readers: %w", err)
	}
	return out, nil
}

// SetArchiveFollow turns "keep archiving" on or off for a Reader's Bookmark.
// ErrNotFound means the Reader holds no Bookmark on the Series.
func (s *Store) SetArchiveFollow(ctx context.Context, readerID int64, key string, on bool) error {
	if !on {
		_, err := s.db.Exec(ctx, `DELETE FROM archive_follows WHERE reader_id = $1 AND series_key = $2`, readerID, key)
		if err != nil {
			return fmt.Errorf("stop following %s: %w", key, err)
		}
		return nil
	}
	tag, err := s.db.Exec(ctx, `
		INSERT INTO archive_follows (reader_id, series_key)
		SELECT reader_id, series_key FROM bookmarks WHERE reader_id = $1 AND series_key = $2
		ON CONFLICT DO NOTHING`, readerID, key)
	if err != nil {
		return fmt.Errorf("follow %s: %w", key, err)
	}
	if tag.RowsAffected() == 0 {
		var held bool
		if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM bookmarks WHERE reader_id = $1 AND series_key = $2)`, readerID, key).Scan(&held); err != nil {
			return fmt.Errorf("follow %s: %w", key, err)
		}
		if !held {
			return ErrNotFound
		}
	}
	return nil
}

// ArchiveFollowing reports whether a Reader keeps archiving a Series.
func (s *Store) ArchiveFollowing(ctx context.Context, readerID int64, key string) (bool, error) {
	var on bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM archive_follows WHERE reader_id = $1 AND series_key = $2)`, readerID, key).Scan(&on)
	if err != nil {
		return false, fmt.Errorf("archive follow of %s: %w", key, err)
	}
	return on, nil
}

// ArchiveFollowers lists the Readers who keep archiving a Series, earliest
// first: the first allowed one is charged for a new chapter.
func (s *Store) ArchiveFollowers(ctx context.Context, key string) ([]int64, error) {
	rows, err := s.db.Query(ctx, `SELECT reader_id FROM archive_follows WHERE series_key = $1 ORDER BY created_at, reader_id`, key)
	if err != nil {
		return nil, fmt.Errorf("archive followers of %s: %w", key, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("archive followers of %s: %w", key, err)
	}
	return ids, nil
}

// ArchiveRequest is a Reader's request to archive a Series with a scope.
type ArchiveRequest struct {
	ID                      int64
	ReaderID                *int64
	SeriesKey, Scope, State string
	Selected, Queued        *int
	Capped                  *int
	Problem, Detail         string
	JobID                   *int64
	CreatedAt               time.Time
	ResolvedAt              *time.Time
}

const archiveRequestCols = `id, reader_id, series_key, scope, state, selected, queued, capped, problem, detail, job_id, created_at, resolved_at`

func scanArchiveRequest(row pgx.Row) (ArchiveRequest, error) {
	var r ArchiveRequest
	err := row.Scan(&r.ID, &r.ReaderID, &r.SeriesKey, &r.Scope, &r.State, &r.Selected, &r.Queued, &r.Capped,
		&r.Problem, &r.Detail, &r.JobID, &r.CreatedAt, &r.ResolvedAt)
	return r, notFound(err)
}

// CreateArchiveRequest records a request, queued.
func (s *Store) CreateArchiveRequest(ctx context.Context, readerID int64, key, scope string) (ArchiveRequest, error) {
	r, err := scanArchiveRequest(s.db.QueryRow(ctx, `
		INSERT INTO archive_requests (reader_id, series_key, scope) VALUES ($1, $2, $3) RETURNING `+archiveRequestCols,
		readerID, key, scope))
	if err != nil {
		return ArchiveRequest{}, fmt.Errorf("create archive request for %s: %w", key, err)
	}
	return r, nil
}

// SetArchiveRequestJob records the job that resolves a request.
func (s *Store) SetArchiveRequestJob(ctx context.Context, id, jobID int64) error {
	if _, err := s.db.Exec(ctx, `UPDATE archive_requests SET job_id = $2 WHERE id = $1`, id, jobID); err != nil {
		return fmt.Errorf("archive request %d job: %w", id, err)
	}
	return nil
}

// ArchiveRequestByID reads one request.
func (s *Store) ArchiveRequestByID(ctx context.Context, id int64) (ArchiveRequest, error) {
	return scanArchiveRequest(s.db.QueryRow(ctx, `SELECT `+archiveRequestCols+` FROM archive_requests WHERE id = $1`, id))
}

// ArchiveRequestOutcome is how a request ended.
type ArchiveRequestOutcome struct {
	State                    string
	Selected, Queued, Capped int
	Problem, Detail          string
}

// FinishArchiveRequest records how a queued request ended; a request that
// is no longer queued (cancelled) gives ErrArchiveNotQueued.
func (s *Store) FinishArchiveRequest(ctx context.Context, id int64, o ArchiveRequestOutcome) error {
	tag, err := s.db.Exec(ctx, `
		UPDATE archive_requests SET state = $2, selected = $3, queued = $4, capped = $5, problem = $6, detail = $7, resolved_at = now()
		WHERE id = $1 AND state = 'queued'`, id, o.State, o.Selected, o.Queued, o.Capped, o.Problem, truncateDetail(o.Detail))
	if err != nil {
		return fmt.Errorf("finish archive request %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrArchiveNotQueued
	}
	return nil
}

// NoteArchiveRequestError records the last retryable error of a request.
func (s *Store) NoteArchiveRequestError(ctx context.Context, id int64, detail string) error {
	if _, err := s.db.Exec(ctx, `UPDATE archive_requests SET detail = $2 WHERE id = $1 AND state = 'queued'`, id, truncateDetail(detail)); err != nil {
		return fmt.Errorf("note archive request %d error: %w", id, err)
	}
	return nil
}

// CancelArchiveRequest cancels a queued request and returns its job id.
func (s *Store) CancelArchiveRequest(ctx context.Context, id int64) (*int64, error) {
	var job *int64
	err := s.db.QueryRow(ctx, `
		UPDATE archive_requests SET state = 'cancelled', resolved_at = now() WHERE id = $1 AND state = 'queued'
		RETURNING job_id`, id).Scan(&job)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrArchiveNotQueued
	}
	if err != nil {
		return nil, fmt.Errorf("cancel archive request %d: %w", id, err)
	}
	return job, nil
}

// ListArchiveRequests lists the newest requests, of one Series when key is set.
func (s *Store) ListArchiveRequests(ctx context.Context, key string, limit int) ([]ArchiveRequest, error) {
	rows, err := s.db.Query(ctx, `
		SELECT `+archiveRequestCols+` FROM archive_requests
		WHERE $1 = '' OR series_key = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, key, limit)
	if err != nil {
		return nil, fmt.Errorf("list archive requests: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArchiveRequest, error) { return scanArchiveRequest(row) })
	if err != nil {
		return nil, fmt.Errorf("list archive requests: %w", err)
	}
	return out, nil
}

// SetArchiveChapterCount records how many chapters the Site listed.
func (s *Store) SetArchiveChapterCount(ctx context.Context, key string, n int) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO archive_series (series_key, chapter_count) VALUES ($1, $2)
		ON CONFLICT (series_key) DO UPDATE SET chapter_count = EXCLUDED.chapter_count, listed_at = now()`, key, n)
	if err != nil {
		return fmt.Errorf("record chapter count of %s: %w", key, err)
	}
	return nil
}

// ArchiveChapter is one chapter Lectern was asked to archive.
type ArchiveChapter struct {
	ID                  int64
	SeriesKey           string
	URL, Label          string
	Number              *float64
	Position            int
	State               string
	Problem, Detail     string
	RequestedBy         *int64
	JobID               *int64
	PageCount           int
	Bytes, FetchedBytes int64
	QueuedAt            time.Time
	ArchivedAt          *time.Time
	UpdatedAt           time.Time
}

const archiveChapterCols = `id, series_key, url, label, number, position, state, problem, detail, requested_by, job_id,
	page_count, bytes, fetched_bytes, queued_at, archived_at, updated_at`

func scanArchiveChapter(row pgx.Row) (ArchiveChapter, error) {
	var c ArchiveChapter
	err := row.Scan(&c.ID, &c.SeriesKey, &c.URL, &c.Label, &c.Number, &c.Position, &c.State, &c.Problem, &c.Detail,
		&c.RequestedBy, &c.JobID, &c.PageCount, &c.Bytes, &c.FetchedBytes, &c.QueuedAt, &c.ArchivedAt, &c.UpdatedAt)
	return c, notFound(err)
}

func collectArchiveChapters(rows pgx.Rows, err error) ([]ArchiveChapter, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArchiveChapter, error) { return scanArchiveChapter(row) })
}

// ArchiveChapterInput names a chapter as the Site lists it.
type ArchiveChapterInput struct {
	URL, Label string
	Number     *float64
	Position   int
}

// EnsureArchiveChapter makes sure a chapter has a row in the wanted state,
// and reports whether it now needs a job. A chapter archived or queued
// already is left as it is (queue reports false); a new one, or one that
// failed or was cancelled before, becomes state (queued, or failed with
// problem and detail for a chapter known to be unarchivable) and is charged
// to requestedBy. Label, number and position follow the latest listing.
func (s *Store) EnsureArchiveChapter(ctx context.Context, key string, in ArchiveChapterInput, requestedBy *int64, state, problem, detail string) (ArchiveChapter, bool, error) {
	var out ArchiveChapter
	var queue bool
	err := s.InTx(ctx, func(tx *Store) error {
		c, err := scanArchiveChapter(tx.db.QueryRow(ctx, `SELECT `+archiveChapterCols+` FROM archive_chapters WHERE url = $1 FOR UPDATE`, in.URL))
		switch {
		case errors.Is(err, ErrNotFound):
			c, err = scanArchiveChapter(tx.db.QueryRow(ctx, `
				INSERT INTO archive_chapters (series_key, url, label, number, position, state, problem, detail, requested_by)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
				ON CONFLICT (url) DO NOTHING
				RETURNING `+archiveChapterCols, key, in.URL, in.Label, in.Number, in.Position, state, problem, truncateDetail(detail), requestedBy))
			if errors.Is(err, ErrNotFound) {
				// Inserted by a concurrent request since the SELECT: that one queues it.
				out, err = scanArchiveChapter(tx.db.QueryRow(ctx, `SELECT `+archiveChapterCols+` FROM archive_chapters WHERE url = $1`, in.URL))
				return err
			}
			if err != nil {
				return fmt.Errorf("insert archive chapter %s: %w", in.URL, err)
			}
			out, queue = c, state == ArchiveQueued
			return nil
		case err != nil:
			return fmt.Errorf("load archive chapter %s: %w", in.URL, err)
		}
		if c.SeriesKey != key {
			return fmt.Errorf("archive chapter %s belongs to %s, not %s: %w", in.URL, c.SeriesKey, key, ErrConflict)
		}
		again := c.State == ArchiveFailed || c.State == ArchiveCancelled
		c, err = scanArchiveChapter(tx.db.QueryRow(ctx, `
			UPDATE archive_chapters SET label = $2, number = $3, position = $4,
				state = CASE WHEN $5 THEN $6 ELSE state END,
				problem = CASE WHEN $5 THEN $7 ELSE problem END,
				detail = CASE WHEN $5 THEN $8 ELSE detail END,
				requested_by = CASE WHEN $5 THEN $9 ELSE requested_by END,
				queued_at = CASE WHEN $5 THEN now() ELSE queued_at END,
				exhausted_at = CASE WHEN $5 THEN NULL ELSE exhausted_at END,
				updated_at = now()
			WHERE id = $1 RETURNING `+archiveChapterCols, c.ID, in.Label, in.Number, in.Position, again, state, problem, truncateDetail(detail), requestedBy))
		if err != nil {
			return fmt.Errorf("update archive chapter %s: %w", in.URL, err)
		}
		out, queue = c, again && state == ArchiveQueued
		return nil
	})
	return out, queue, err
}

// SetArchivePositions moves the known chapters of a Series to their index in
// the Site's latest listing, so reading order follows the Site's.
func (s *Store) SetArchivePositions(ctx context.Context, key string, urls []string) error {
	if len(urls) == 0 {
		return nil
	}
	_, err := s.db.Exec(ctx, `
		UPDATE archive_chapters c SET position = l.pos - 1
		FROM unnest($2::text[]) WITH ORDINALITY AS l(url, pos)
		WHERE c.series_key = $1 AND c.url = l.url AND c.position <> l.pos - 1`, key, urls)
	if err != nil {
		return fmt.Errorf("set archive positions of %s: %w", key, err)
	}
	return nil
}

// NextArchivePosition is one past the last known position of a Series.
func (s *Store) NextArchivePosition(ctx context.Context, key string) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT coalesce(max(position) + 1, 0) FROM archive_chapters WHERE series_key = $1`, key).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("next archive position of %s: %w", key, err)
	}
	return n, nil
}

// ArchiveChapterByID reads one chapter, in any state.
func (s *Store) ArchiveChapterByID(ctx context.Context, id int64) (ArchiveChapter, error) {
	return scanArchiveChapter(s.db.QueryRow(ctx, `SELECT `+archiveChapterCols+` FROM archive_chapters WHERE id = $1`, id))
}

// ArchiveChapterByURL reads one chapter by its URL, in any state.
func (s *Store) ArchiveChapterByURL(ctx context.Context, url string) (ArchiveChapter, error) {
	return scanArchiveChapter(s.db.QueryRow(ctx, `SELECT `+archiveChapterCols+` FROM archive_chapters WHERE url = $1`, url))
}

// ArchiveChaptersOf lists every chapter row of a Series, in any state, in
// the Site's order.
func (s *Store) ArchiveChaptersOf(ctx context.Context, key string) ([]ArchiveChapter, error) {
	out, err := collectArchiveChapters(s.db.Query(ctx, `
		SELECT `+archiveChapterCols+` FROM archive_chapters WHERE series_key = $1 ORDER BY position, id`, key))
	if err != nil {
		return nil, fmt.Errorf("archive chapters of %s: %w", key, err)
	}
	return out, nil
}

// ArchivedChapters lists the visible (archived) chapters of a Series in the
// Site's order.
func (s *Store) ArchivedChapters(ctx context.Context, key string) ([]ArchiveChapter, error) {
	out, err := collectArchiveChapters(s.db.Query(ctx, `
		SELECT `+archiveChapterCols+` FROM archive_chapters WHERE series_key = $1 AND state = 'archived' ORDER BY position, id`, key))
	if err != nil {
		return nil, fmt.Errorf("archived chapters of %s: %w", key, err)
	}
	return out, nil
}

// SetArchiveChapterJob records the job archiving a chapter.
func (s *Store) SetArchiveChapterJob(ctx context.Context, id, jobID int64) error {
	if _, err := s.db.Exec(ctx, `UPDATE archive_chapters SET job_id = $2 WHERE id = $1`, id, jobID); err != nil {
		return fmt.Errorf("archive chapter %d job: %w", id, err)
	}
	return nil
}

// ArchivePage is one stored page image of a chapter.
type ArchivePage struct {
	Index         int
	Address       string
	ContentType   string
	Size          int
	CRC32         uint32
	Width, Height int
	SourceURL     string
}

// StagedArchivePages is the checkpoint of a chapter being archived: the
// pages already stored, by index.
func (s *Store) StagedArchivePages(ctx context.Context, chapterID int64) (map[int]ArchivePage, error) {
	rows, err := s.db.Query(ctx, `
		SELECT idx, address, content_type, size, crc32, width, height, page_url
		FROM archive_staging WHERE chapter_id = $1`, chapterID)
	if err != nil {
		return nil, fmt.Errorf("staged pages of chapter %d: %w", chapterID, err)
	}
	defer rows.Close()
	out := map[int]ArchivePage{}
	for rows.Next() {
		var p ArchivePage
		var crc int64
		if err := rows.Scan(&p.Index, &p.Address, &p.ContentType, &p.Size, &crc, &p.Width, &p.Height, &p.SourceURL); err != nil {
			return nil, fmt.Errorf("staged pages of chapter %d: %w", chapterID, err)
		}
		p.CRC32 = uint32(crc)
		out[p.Index] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("staged pages of chapter %d: %w", chapterID, err)
	}
	return out, nil
}

// StageArchivePage checkpoints one stored page and counts the bytes fetched
// for it. It commits on its own: a crash after it keeps the page.
func (s *Store) StageArchivePage(ctx context.Context, chapterID int64, p ArchivePage, fetched int) error {
	return s.InTx(ctx, func(tx *Store) error {
		_, err := tx.db.Exec(ctx, `
			INSERT INTO archive_staging (chapter_id, idx, page_url, address, content_type, size, crc32, width, height)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (chapter_id, idx) DO UPDATE SET page_url = EXCLUDED.page_url, address = EXCLUDED.address,
				content_type = EXCLUDED.content_type, size = EXCLUDED.size, crc32 = EXCLUDED.crc32,
				width = EXCLUDED.width, height = EXCLUDED.height, stored_at = now()`,
			chapterID, p.Index, p.SourceURL, p.Address, p.ContentType, p.Size, int64(p.CRC32), p.Width, p.Height)
		if err != nil {
			return fmt.Errorf("stage page %d of chapter %d: %w", p.Index, chapterID, err)
		}
		return tx.AddArchiveFetched(ctx, chapterID, fetched)
	})
}

// AddArchiveFetched counts bytes downloaded for a chapter.
func (s *Store) AddArchiveFetched(ctx context.Context, chapterID int64, n int) error {
	if n == 0 {
		return nil
	}
	if _, err := s.db.Exec(ctx, `UPDATE archive_chapters SET fetched_bytes = fetched_bytes + $2 WHERE id = $1`, chapterID, n); err != nil {
		return fmt.Errorf("count fetched bytes of chapter %d: %w", chapterID, err)
	}
	return nil
}

// PublishArchiveChapter makes a queued chapter visible: its pages (manga) or
// its text (novel) and its archived state commit together, and its
// checkpoint goes. A chapter no longer queued gives ErrArchiveNotQueued and
// nothing changes.
func (s *Store) PublishArchiveChapter(ctx context.Context, chapterID int64, pages []ArchivePage, body *string) error {
	return s.InTx(ctx, func(tx *Store) error {
		var state string
		err := tx.db.QueryRow(ctx, `SELECT state FROM archive_chapters WHERE id = $1 FOR UPDATE`, chapterID).Scan(&state)
		if err != nil {
			return fmt.Errorf("publish chapter %d: %w", chapterID, notFound(err))
		}
		if state != ArchiveQueued {
			return ErrArchiveNotQueued
		}
		var bytes int64
		if len(pages) > 0 {
			rows := make([][]any, len(pages))
			for i, p := range pages {
				rows[i] = []any{chapterID, p.Index, p.Address, p.ContentType, p.Size, int64(p.CRC32), p.Width, p.Height, p.SourceURL}
				bytes += int64(p.Size)
			}
			_, err := tx.tx.CopyFrom(ctx, pgx.Identifier{"archive_pages"},
				[]string{"chapter_id", "idx", "address", "content_type", "size", "crc32", "width", "height", "source_url"},
				pgx.CopyFromRows(rows))
			if err != nil {
				return fmt.Errorf("publish pages of chapter %d: %w", chapterID, err)
			}
		}
		if body != nil {
			bytes = int64(len(*body))
		}
		_, err = tx.db.Exec(ctx, `
			UPDATE archive_chapters SET state = 'archived', problem = '', detail = '', page_count = $2, bytes = $3, body = $4,
				archived_at = now(), updated_at = now()
			WHERE id = $1`, chapterID, len(pages), bytes, body)
		if err != nil {
			return fmt.Errorf("publish chapter %d: %w", chapterID, err)
		}
		if _, err := tx.db.Exec(ctx, `DELETE FROM archive_staging WHERE chapter_id = $1`, chapterID); err != nil {
			return fmt.Errorf("clear checkpoint of chapter %d: %w", chapterID, err)
		}
		return nil
	})
}

// FailArchiveChapter ends a queued chapter with a named problem.
// exhausted says its attempts ran out (the problem may pass), rather than a
// problem retrying cannot change: the sweep queues such a chapter again
// after a day (ExhaustedArchiveChapters).
func (s *Store) FailArchiveChapter(ctx context.Context, chapterID int64, problem, detail string, exhausted bool) error {
	tag, err := s.db.Exec(ctx, `
		UPDATE archive_chapters SET state = 'failed', problem = $2, detail = $3, updated_at = now(),
			exhausted_at = CASE WHEN $4 THEN now() END
		WHERE id = $1 AND state = 'queued'`, chapterID, problem, truncateDetail(detail), exhausted)
	if err != nil {
		return fmt.Errorf("fail chapter %d: %w", chapterID, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrArchiveNotQueued
	}
	return nil
}

// NoteArchiveError records the last retryable error of a queued chapter.
func (s *Store) NoteArchiveError(ctx context.Context, chapterID int64, detail string) error {
	_, err := s.db.Exec(ctx, `UPDATE archive_chapters SET detail = $2, updated_at = now() WHERE id = $1 AND state = 'queued'`, chapterID, truncateDetail(detail))
	if err != nil {
		return fmt.Errorf("note error of chapter %d: %w", chapterID, err)
	}
	return nil
}

// CancelArchiveChapter cancels a queued chapter and returns its job id.
func (s *Store) CancelArchiveChapter(ctx context.Context, chapterID int64) (*int64, error) {
	var job *int64
	err := s.db.QueryRow(ctx, `
		UPDATE archive_chapters SET state = 'cancelled', detail = 'cancelled by the Owner', updated_at = now()
		WHERE id = $1 AND state = 'queued' RETURNING job_id`, chapterID).Scan(&job)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrArchiveNotQueued
	}
	if err != nil {
		return nil, fmt.Errorf("cancel chapter %d: %w", chapterID, err)
	}
	return job, nil
}

// ArchivePagesOf lists an archived chapter's pages in reading order.
func (s *Store) ArchivePagesOf(ctx context.Context, chapterID int64) ([]ArchivePage, error) {
	rows, err := s.db.Query(ctx, `
		SELECT p.idx, p.address, p.content_type, p.size, p.crc32, p.width, p.height, p.source_url
		FROM archive_pages p WHERE p.chapter_id = $1 ORDER BY p.idx`, chapterID)
	if err != nil {
		return nil, fmt.Errorf("pages of chapter %d: %w", chapterID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArchivePage, error) {
		var p ArchivePage
		var crc int64
		err := row.Scan(&p.Index, &p.Address, &p.ContentType, &p.Size, &crc, &p.Width, &p.Height, &p.SourceURL)
		p.CRC32 = uint32(crc)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("pages of chapter %d: %w", chapterID, err)
	}
	return out, nil
}

// ArchiveChapterBody reads an archived novel chapter's text.
func (s *Store) ArchiveChapterBody(ctx context.Context, chapterID int64) (string, error) {
	var body *string
	err := s.db.QueryRow(ctx, `SELECT body FROM archive_chapters WHERE id = $1 AND state = 'archived'`, chapterID).Scan(&body)
	if err != nil {
		return "", notFound(err)
	}
	if body == nil {
		return "", nil
	}
	return *body, nil
}

// ArchivePageType returns the content type of a page stored at address for
// an archived chapter of the Series; ErrNotFound when no such page exists,
// so one Series' reader cannot read another's pages by address.
func (s *Store) ArchivePageType(ctx context.Context, key, address string) (string, error) {
	var ct string
	err := s.db.QueryRow(ctx, `
		SELECT p.content_type FROM archive_pages p JOIN archive_chapters c ON c.id = p.chapter_id
		WHERE c.series_key = $1 AND c.state = 'archived' AND p.address = $2 LIMIT 1`, key, address).Scan(&ct)
	return ct, notFound(err)
}

// ArchiveStatus sums up a Series' archive.
type ArchiveStatus struct {
	Listed                              *int // chapters the Site listed at the last listing
	ListedAt                            *time.Time
	Archived, Queued, Failed, Cancelled int
	Pages                               int
	Bytes, FetchedBytes                 int64
}

// ArchiveStatusOf sums up a Series' archive.
func (s *Store) ArchiveStatusOf(ctx context.Context, key string) (ArchiveStatus, error) {
	var st ArchiveStatus
	err := s.db.QueryRow(ctx, `
		SELECT
			(SELECT chapter_count FROM archive_series WHERE series_key = $1),
			(SELECT listed_at FROM archive_series WHERE series_key = $1),
			count(*) FILTER (WHERE state = 'archived'), count(*) FILTER (WHERE state = 'queued'),
			count(*) FILTER (WHERE state = 'failed'), count(*) FILTER (WHERE state = 'cancelled'),
			coalesce(sum(page_count) FILTER (WHERE state = 'archived'), 0),
			coalesce(sum(bytes) FILTER (WHERE state = 'archived'), 0),
			coalesce(sum(fetched_bytes), 0)
		FROM archive_chapters WHERE series_key = $1`, key).
		Scan(&st.Listed, &st.ListedAt, &st.Archived, &st.Queued, &st.Failed, &st.Cancelled, &st.Pages, &st.Bytes, &st.FetchedBytes)
	if err != nil {
		return ArchiveStatus{}, fmt.Errorf("archive status of %s: %w", key, err)
	}
	return st, nil
}

// ArchiveTotals sums up every archive of the deployment.
type ArchiveTotals struct {
	Chapters, Pages int
	// Bytes counts every archived page or text; StoredBytes counts each
	// distinct page file once (what the volume holds); FetchedBytes is what
	// was downloaded, retries included.
	Bytes, StoredBytes, FetchedBytes int64
}

// ArchiveTotalsAll sums up every archive of the deployment.
func (s *Store) ArchiveTotalsAll(ctx context.Context) (ArchiveTotals, error) {
	var t ArchiveTotals
	err := s.db.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE state = 'archived'),
			coalesce(sum(page_count) FILTER (WHERE state = 'archived'), 0),
			coalesce(sum(bytes) FILTER (WHERE state = 'archived'), 0),
			coalesce(sum(fetched_bytes), 0),
			coalesce((SELECT sum(size) FROM (SELECT DISTINCT ON (address) size FROM archive_pages ORDER BY address) d), 0)
			  + coalesce(sum(bytes) FILTER (WHERE state = 'archived' AND page_count = 0), 0)
		FROM archive_chapters`).Scan(&t.Chapters, &t.Pages, &t.Bytes, &t.FetchedBytes, &t.StoredBytes)
	if err != nil {
		return ArchiveTotals{}, fmt.Errorf("archive totals: %w", err)
	}
	return t, nil
}

// ArchiveJob is one chapter as the Owner's view of archive jobs shows it:
// the chapter's state with its River job's.
type ArchiveJob struct {
	ArchiveChapter
	SeriesTitle string
	Site        string
	ReaderName  string
	// JobState is River's state of the chapter's job ("" when it has none
	// any more); Attempt and MaxAttempts are River's counters.
	JobState             string
	Attempt, MaxAttempts int
	ScheduledAt          *time.Time
}

// ListArchiveJobs lists chapters with their jobs, newest change first, of
// one state when state is set.
func (s *Store) ListArchiveJobs(ctx context.Context, state string, limit int) ([]ArchiveJob, error) {
	rows, err := s.db.Query(ctx, `
		SELECT c.id, c.series_key, c.url, c.label, c.number, c.position, c.state, c.problem, c.detail, c.requested_by, c.job_id,
			c.page_count, c.bytes, c.fetched_bytes, c.queued_at, c.archived_at, c.updated_at,
			s.title, s.site, coalesce(r.name, ''), coalesce(j.state::text, ''), coalesce(j.attempt, 0), coalesce(j.max_attempts, 0), j.scheduled_at
		FROM archive_chapters c
		JOIN series s ON s.key = c.series_key
		LEFT JOIN readers r ON r.id = c.requested_by
		LEFT JOIN river_job j ON j.id = c.job_id
		WHERE $1 = '' OR c.state = $1
		ORDER BY (c.state = 'queued') DESC, c.updated_at DESC, c.id DESC
		LIMIT $2`, state, limit)
	if err != nil {
		return nil, fmt.Errorf("list archive jobs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ArchiveJob, error) {
		var j ArchiveJob
		c := &j.ArchiveChapter
		err := row.Scan(&c.ID, &c.SeriesKey, &c.URL, &c.Label, &c.Number, &c.Position, &c.State, &c.Problem, &c.Detail,
			&c.RequestedBy, &c.JobID, &c.PageCount, &c.Bytes, &c.FetchedBytes, &c.QueuedAt, &c.ArchivedAt, &c.UpdatedAt,
			&j.SeriesTitle, &j.Site, &j.ReaderName, &j.JobState, &j.Attempt, &j.MaxAttempts, &j.ScheduledAt)
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("list archive jobs: %w", err)
	}
	return out, nil
}

// maxDetail bounds the stored error text: details come from third-party
// answers and must not grow a row without limit.
const maxDetail = 1000

// truncateDetail makes error text storable (valid UTF-8 without NUL) and
// bounds it.
func truncateDetail(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= maxDetail {
		return s
	}
	cut := maxDetail
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// WaitingArchiveJobs returns the ids of a Site's archive jobs waiting for a
// later time, oldest first, at most limit: snoozed ones (through a back-off,
// or for a free place; River keeps a short snooze "available" with a later
// time), and with retryable also those waiting to retry
// after an error. They are the jobs to wake when the Owner lifts the Site's
// back-off, or (snoozed only) when a place frees.
func (s *Store) WaitingArchiveJobs(ctx context.Context, site string, retryable bool, limit int) ([]int64, error) {
	rows, err := s.db.Query(ctx, `
		SELECT id FROM river_job
		WHERE kind IN ('`+riverjob.ArchiveChapter+`', '`+riverjob.ArchiveSeries+`')
			AND (`+riverjob.WaitingSQL+` OR $2 AND state = 'retryable')
			AND args->>'series' LIKE $1
		ORDER BY scheduled_at, id LIMIT $3`, likePrefix(site)+":%", retryable, limit)
	if err != nil {
		return nil, fmt.Errorf("waiting archive jobs of %s: %w", site, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("waiting archive jobs of %s: %w", site, err)
	}
	return ids, nil
}

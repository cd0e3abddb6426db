package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Series is one Series row: its shared facts and how its polling goes.
type Series struct {
	Key, Site, Kind, SeriesURL, Title string

	CoverAddress, CoverType, CoverSourceURL string
	CoverSize                               *int
	CoverAt                                 *time.Time
	// CoverProblem is why the last Cover fetch failed ("" after a success or
	// before any); CoverTriedAt is when it ran.
	CoverProblem string
	CoverTriedAt *time.Time
	// CoverRefetchAt is set while an Owner's request for a fresh Cover waits
	// for the next poll.
	CoverRefetchAt *time.Time

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
	// HintAt is when a Reader last recorded Progress beyond the Latest Chapter.
	HintAt *time.Time
	// NextPollReason says why NextPollAt is what it is ("" while the next
	// poll is being planned); Rhythm is the release rhythm learned from the
	// Latest Chapter history (JSON of a schedule.Rhythm, nil until
	// estimated) at RhythmAt.
	NextPollReason string
	Rhythm         []byte
	RhythmAt       *time.Time

	CreatedAt, UpdatedAt time.Time
}

const seriesCols = `key, site, kind, series_url, title,
	cover_address, cover_type, cover_source_url, cover_size, cover_at, cover_problem, cover_tried_at, cover_refetch_at,
	latest_label, latest_url, latest_number, latest_locked, latest_at,
	readers, last_poll_at, next_poll_at, last_success_at, poll_status, poll_problem,
	poll_body_len, poll_ms, poll_etag, poll_last_modified, poll_failures, hint_at, created_at, updated_at,
	next_poll_reason, rhythm, rhythm_at`

func scanSeries(row interface{ Scan(...any) error }) (Series, error) {
	var s Series
	err := row.Scan(&s.Key, &s.Site, &s.Kind, &s.SeriesURL, &s.Title,
		&s.CoverAddress, &s.CoverType, &s.CoverSourceURL, &s.CoverSize, &s.CoverAt, &s.CoverProblem, &s.CoverTriedAt, &s.CoverRefetchAt,
		&s.LatestLabel, &s.LatestURL, &s.LatestNumber, &s.LatestLocked, &s.LatestAt,
		&s.Readers, &s.LastPollAt, &s.NextPollAt, &s.LastSuccessAt, &s.PollStatus, &s.PollProblem,
		&s.PollBodyLen, &s.PollMS, &s.PollETag, &s.PollLastModified, &s.PollFailures, &s.HintAt, &s.CreatedAt, &s.UpdatedAt,
		&s.NextPollReason, &s.Rhythm, &s.RhythmAt)
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

// PollCandidate is a held Series as the Poll's scheduler sees it.
type PollCandidate struct {
	Key, Site              string
	Readers                int
	LastPollAt, NextPollAt *time.Time
}

// PollCandidates lists the Series held by at least one Reader whose next poll
// is unplanned or before `before`: most Readers first, then the oldest last
// poll (never polled first), so that whatever order the scheduler hands out
// follows popularity. A Series nobody holds is never listed.
func (s *Store) PollCandidates(ctx context.Context, before time.Time) ([]PollCandidate, error) {
	rows, err := s.db.Query(ctx, `
		SELECT key, site, readers, last_poll_at, next_poll_at FROM series
		WHERE readers > 0 AND gone_at IS NULL AND (next_poll_at IS NULL OR next_poll_at < $1)
		ORDER BY readers DESC, last_poll_at ASC NULLS FIRST, key`, before)
	if err != nil {
		return nil, fmt.Errorf("list poll candidates: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (PollCandidate, error) {
		var c PollCandidate
		err := row.Scan(&c.Key, &c.Site, &c.Readers, &c.LastPollAt, &c.NextPollAt)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list poll candidates: %w", err)
	}
	return out, nil
}

// LockNextPolls locks the rows of keys for the rest of the transaction and
// returns their next_poll_at now (nil: unplanned), so a planner can drop the
// Series a poll recorded since it read them: a poll records its outcome
// under the same row lock, so it either ran before (and changed the value)
// or waits for the plan to commit.
func (s *Store) LockNextPolls(ctx context.Context, keys []string) (map[string]*time.Time, error) {
	return s.lockPollTimes(ctx, keys, `SELECT key, next_poll_at FROM series WHERE key = ANY($1) ORDER BY key FOR UPDATE`)
}

// lockPollTimes runs one of the row-locking reads above (always in key
// order, so two planners never deadlock) and maps key to the time read.
func (s *Store) lockPollTimes(ctx context.Context, keys []string, query string) (map[string]*time.Time, error) {
	rows, err := s.db.Query(ctx, query, keys)
	if err != nil {
		return nil, fmt.Errorf("lock poll times: %w", err)
	}
	defer rows.Close()
	out := make(map[string]*time.Time, len(keys))
	for rows.Next() {
		var key string
		var at *time.Time
		if err := rows.Scan(&key, &at); err != nil {
			return nil, fmt.Errorf("lock poll times: %w", err)
		}
		out[key] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock poll times: %w", err)
	}
	return out, nil
}

// NextPoll is when one Series' next poll is planned, and why.
type NextPoll struct {
	Key    string
	At     time.Time
	Reason string
}

// SetNextPolls records planned polls in one statement. Bookkeeping only:
// updated_at does not change. A row whose plan is already the one given is
// not written (IS DISTINCT FROM): no new row version, no WAL, nothing for
// vacuum; and since no index names next_poll_at (migration 0156), a
// changed plan is a heap-only update.
func (s *Store) SetNextPolls(ctx context.Context, plans []NextPoll) error {
	if len(plans) == 0 {
		return nil
	}
	keys := make([]string, len(plans))
	ats := make([]time.Time, len(plans))
	reasons := make([]string, len(plans))
	for i, p := range plans {
		keys[i], ats[i], reasons[i] = p.Key, p.At, p.Reason
	}
	_, err := s.db.Exec(ctx, `
		UPDATE series s SET next_poll_at = p.at, next_poll_reason = p.reason
		FROM unnest($1::text[], $2::timestamptz[], $3::text[]) AS p(key, at, reason)
		WHERE s.key = p.key AND (s.next_poll_at IS DISTINCT FROM p.at OR s.next_poll_reason IS DISTINCT FROM p.reason)`, keys, ats, reasons)
	if err != nil {
		return fmt.Errorf("record next polls: %w", err)
	}
	return nil
}

// The poll statuses stored in series.poll_status.
const (
	PollOK          = "ok"           // the page answered with a Latest Chapter
	PollNotModified = "not_modified" // 304: nothing changed since the last answer
	PollProblem     = "problem"      // the body gave no Latest Chapter (poll_problem names why)
	PollFailed      = "failed"       // the fetch itself failed (network, status, cap)
	PollBackedOff   = "backed_off"   // the Site refused us; the Site is paused
	PollSkipped     = "skipped"      // not fetched (a browser Site with no browser configured)
)

// LatestChapter is a Latest Chapter as a poll found it.
type LatestChapter struct {
	Label  string
	Number *float64
	URL    string
	Locked bool
}

func (c LatestChapter) same(o LatestChapter) bool {
	if c.Label != o.Label || c.URL != o.URL || c.Locked != o.Locked {
		return false
	}
	if c.Number == nil || o.Number == nil {
		return c.Number == nil && o.Number == nil
	}
	return *c.Number == *o.Number
}

// PollResult is what one poll learned and how it went.
type PollResult struct {
	Status string // one of the Poll* statuses
	// Problem names why the poll gave no answer ("code: detail"), "" when it did.
	Problem string
	// BodyLen is recorded with a problem, so a changed page can be told from
	// an empty or truncated one.
	BodyLen  *int
	Duration time.Duration
	// Success resets the failure count and stamps last_success_at; Failed
	// adds one failure; neither (a skipped poll) leaves both as they are.
	Success, Failed bool
	// Latest is the Latest Chapter found, nil when none was.
	Latest *LatestChapter
	// Title is the Series' title when the page gave one.
	Title string
	// ETag and LastModified are the validators of a response that answered;
	// stored only with Latest, so a 304 always stands for a page that did.
	ETag, LastModified string
	// NextPollAt is the forecast of the next poll, NextPollReason why; nil
	// keeps the stored one.
	NextPollAt     *time.Time
	NextPollReason string
	// Unplanned clears the next poll and its reason: under the adaptive
	// policy the plan decides the next poll within minutes of this one.
	Unplanned bool
	// GoneWhy, on a failed poll, says the series page itself is gone (a
	// 404/410, the Site's not-found page, a redirect off the Site): after
	// GoneAfter without a successful poll the Series is marked gone with
	// this reason (CONTEXT.md "Gone").
	GoneWhy string
}

// GoneAfter is how long a series page must keep saying it is gone, with no
// successful poll between, before its Series is marked gone: long enough
// that a Site's bad day or a moved page that comes back is not a death.
const GoneAfter = 3 * 24 * time.Hour

// PollRecorded says which Series facts a poll changed.
type PollRecorded struct {
	LatestChanged, TitleChanged bool
	// Previous is the Latest Chapter the Series had before this poll (zero
	// when it had none).
	Previous LatestChapter
}

// RecordPoll stores a poll's outcome in one transaction: a changed Latest
// Chapter (with its history row) and title, and the bookkeeping. updated_at
// moves only when a fact a client sees changed, because the Bookmark list's
// ETag is built on it.
func (s *Store) RecordPoll(ctx context.Context, key string, r PollResult) (PollRecorded, error) {
	var out PollRecorded
	err := s.InTx(ctx, func(tx *Store) error {
		var cur LatestChapter
		var title string
		var lastSuccess *time.Time
		err := tx.db.QueryRow(ctx, `
			SELECT latest_label, latest_number, latest_url, latest_locked, title, last_success_at
			FROM series WHERE key = $1 FOR UPDATE`, key).
			Scan(&cur.Label, &cur.Number, &cur.URL, &cur.Locked, &title, &lastSuccess)
		if err != nil {
			return notFound(err)
		}
		out.Previous = cur
		l := r.Latest
		out.LatestChanged = l != nil && l.Label != "" && !l.same(cur)
		out.TitleChanged = r.Title != "" && r.Title != title
		if out.LatestChanged {
			if _, err := tx.db.Exec(ctx, `
				INSERT INTO latest_chapter_history (series_key, label, number, url, locked, prev_poll_at)
				VALUES ($1, $2, $3, $4, $5, $6)`, key, l.Label, l.Number, l.URL, l.Locked, lastSuccess); err != nil {
				return err
			}
		}
		if out.LatestChanged || out.TitleChanged {
			// One statement for every fact, so the transaction moves its
			// Readers' list versions once (the lock order of
			// docs/adr/0017-list-versions-and-lock-order.md).
			var nl LatestChapter
			if out.LatestChanged {
				nl = *l
			}
			if _, err := tx.db.Exec(ctx, `
				UPDATE series SET
					latest_label = CASE WHEN $2 THEN $3 ELSE latest_label END,
					latest_number = CASE WHEN $2 THEN $4 ELSE latest_number END,
					latest_url = CASE WHEN $2 THEN $5 ELSE latest_url END,
					latest_locked = CASE WHEN $2 THEN $6 ELSE latest_locked END,
					latest_at = CASE WHEN $2 THEN now() ELSE latest_at END,
					title = CASE WHEN $7 THEN $8 ELSE title END,
					updated_at = now()
				WHERE key = $1`, key, out.LatestChanged, nl.Label, nl.Number, nl.URL, nl.Locked,
				out.TitleChanged, r.Title); err != nil {
				return err
			}
		}
		ms := int(r.Duration / time.Millisecond)
		_, err = tx.db.Exec(ctx, `
			UPDATE series SET
				last_poll_at = now(), poll_status = $2, poll_problem = $3, poll_body_len = $4, poll_ms = $5,
				poll_etag = CASE WHEN $6 THEN $7 ELSE poll_etag END,
				poll_last_modified = CASE WHEN $6 THEN $8 ELSE poll_last_modified END,
				poll_failures = CASE WHEN $9 THEN 0 WHEN $10 THEN poll_failures + 1 ELSE poll_failures END,
				last_success_at = CASE WHEN $9 THEN now() ELSE last_success_at END,
				next_poll_at = CASE WHEN $13 THEN NULL ELSE coalesce($11, next_poll_at) END,
				next_poll_reason = CASE WHEN $13 THEN '' WHEN $11::timestamptz IS NULL THEN next_poll_reason ELSE $12 END,
				gone_at = CASE WHEN $14 <> '' AND gone_at IS NULL AND coalesce(last_success_at, created_at) < now() - $15::interval
				               THEN now() ELSE gone_at END,
				gone_reason = CASE WHEN $14 <> '' AND gone_at IS NULL AND coalesce(last_success_at, created_at) < now() - $15::interval
				                   THEN $14 ELSE gone_reason END
			WHERE key = $1`,
			key, r.Status, r.Problem, r.BodyLen, ms,
			r.Latest != nil, r.ETag, r.LastModified, r.Success, r.Failed, r.NextPollAt, r.NextPollReason, r.Unplanned,
			r.GoneWhy, GoneAfter)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return PollRecorded{}, fmt.Errorf("record poll of %s: %w", key, ErrNotFound)
		}
		return PollRecorded{}, fmt.Errorf("record poll of %s: %w", key, err)
	}
	return out, nil
}

// LatestChange is one row of a Series' Latest Chapter history.
type LatestChange struct {
	LatestChapter
	FirstSeenAt time.Time
	// PrevPollAt is the successful poll before, which did not see it (nil
	// for the first Latest Chapter ever found).
	PrevPollAt *time.Time
}

// LatestHistory returns a Series' Latest Chapter changes, oldest first, at
// most limit of the newest.
func (s *Store) LatestHistory(ctx context.Context, key string, limit int) ([]LatestChange, error) {
	rows, err := s.db.Query(ctx, `
		SELECT label, number, url, locked, first_seen_at, prev_poll_at FROM (
			SELECT * FROM latest_chapter_history WHERE series_key = $1 ORDER BY first_seen_at DESC, id DESC LIMIT $2
		) h ORDER BY first_seen_at, id`, key, limit)
	if err != nil {
		return nil, fmt.Errorf("latest chapter history of %s: %w", key, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LatestChange, error) {
		var c LatestChange
		err := row.Scan(&c.Label, &c.Number, &c.URL, &c.Locked, &c.FirstSeenAt, &c.PrevPollAt)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("latest chapter history of %s: %w", key, err)
	}
	return out, nil
}

// RecordHint notes that a Reader recorded Progress beyond the stored Latest
// Chapter, and returns when the Series was last polled (nil: never). The
// hint is not a Series fact: updated_at does not change.
func (s *Store) RecordHint(ctx context.Context, key string) (lastPoll *time.Time, err error) {
	err = s.db.QueryRow(ctx, `UPDATE series SET hint_at = now() WHERE key = $1 RETURNING last_poll_at`, key).Scan(&lastPoll)
	if err != nil {
		if err = notFound(err); err == ErrNotFound {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("record hint for %s: %w", key, err)
	}
	return lastPoll, nil
}

// CoverFacts describe stored Cover bytes.
type CoverFacts struct {
	Address, Type, SourceURL string
	Size                     int
}

// SetCover records a stored Cover on a Series. Without replace it fills only
// a Series that has none (a poll never replaces a Cover); with replace (an
// Owner's refetch) it changes the Cover only when the bytes differ. It
// reports whether the Cover changed; when it did, updated_at moves, since
// clients see the Cover.
func (s *Store) SetCover(ctx context.Context, key string, c CoverFacts, replace bool) (bool, error) {
	tag, err := s.db.Exec(ctx, `
		UPDATE series SET cover_address = $2, cover_type = $3, cover_size = $4, cover_source_url = $5,
			cover_at = now(), cover_problem = '', cover_tried_at = now(), updated_at = now()
		WHERE key = $1 AND (cover_address = '' OR ($6 AND cover_address <> $2))`,
		key, c.Address, c.Type, c.Size, c.SourceURL, replace)
	if err != nil {
		return false, fmt.Errorf("record cover of %s: %w", key, err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	// Nothing changed: say the attempt went well, without touching facts.
	if _, err := s.db.Exec(ctx, `UPDATE series SET cover_problem = '', cover_tried_at = now() WHERE key = $1`, key); err != nil {
		return false, fmt.Errorf("record cover of %s: %w", key, err)
	}
	return false, nil
}

// RecordCoverProblem notes why a Cover fetch failed; the Cover itself, the
// Latest Chapter and every Bookmark stay as they are.
func (s *Store) RecordCoverProblem(ctx context.Context, key, problem string) error {
	_, err := s.db.Exec(ctx, `UPDATE series SET cover_problem = $2, cover_tried_at = now() WHERE key = $1`, key, problem)
	if err != nil {
		return fmt.Errorf("record cover problem of %s: %w", key, err)
	}
	return nil
}

// RequestCoverRefetch marks a Series for a fresh Cover at its next poll.
func (s *Store) RequestCoverRefetch(ctx context.Context, key string) error {
	tag, err := s.db.Exec(ctx, `UPDATE series SET cover_refetch_at = now() WHERE key = $1`, key)
	if err != nil {
		return fmt.Errorf("request cover refetch of %s: %w", key, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// TakeCoverRefetch consumes a pending refetch request; true when there was one.
func (s *Store) TakeCoverRefetch(ctx context.Context, key string) (bool, error) {
	tag, err := s.db.Exec(ctx, `UPDATE series SET cover_refetch_at = NULL WHERE key = $1 AND cover_refetch_at IS NOT NULL`, key)
	if err != nil {
		return false, fmt.Errorf("take cover refetch of %s: %w", key, err)
	}
	return tag.RowsAffected() == 1, nil
}

// FailingSeries is a Series whose recent polls failed, for the Owner.
type FailingSeries struct {
	Key, Site, Title, SeriesURL string
	Readers                     int
	Status, Problem             string
	BodyLen                     *int
	Failures                    int
	LastPollAt, LastSuccessAt   *time.Time
	CoverProblem                string
	// NextPollAt and NextPollReason are the Series' schedule.
	NextPollAt     *time.Time
	NextPollReason string
}

// FailingSeriesList lists the Series whose last poll failed, most recent
// first, at most limit.
func (s *Store) FailingSeriesList(ctx context.Context, limit int) ([]FailingSeries, error) {
	rows, err := s.db.Query(ctx, `
		SELECT key, site, title, series_url, readers, poll_status, poll_problem, poll_body_len, poll_failures,
			last_poll_at, last_success_at, cover_problem, next_poll_at, next_poll_reason
		FROM series WHERE poll_failures > 0
		ORDER BY last_poll_at DESC NULLS LAST, key LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list failing series: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (FailingSeries, error) {
		var f FailingSeries
		err := row.Scan(&f.Key, &f.Site, &f.Title, &f.SeriesURL, &f.Readers, &f.Status, &f.Problem, &f.BodyLen,
			&f.Failures, &f.LastPollAt, &f.LastSuccessAt, &f.CoverProblem, &f.NextPollAt, &f.NextPollReason)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("list failing series: %w", err)
	}
	return out, nil
}

// CoverByPrefix returns the one Cover address starting with prefix that a
// Series names or once named (the short Cover reference, docs/adr/0032):
// none, or more than one, is ErrNotFound, for the Cover route never guesses.
// Postgres decides, not the blob store, so the answer is the same whichever
// store holds the bytes.
func (s *Store) CoverByPrefix(ctx context.Context, prefix string) (string, error) {
	// [prefix, prefix+"g") holds exactly the lower-case hex addresses that
	// start with prefix: 'g' sorts after every hex digit (the key is
	// COLLATE "C", ordered byte-wise).
	rows, err := s.db.Query(ctx, `
		SELECT address FROM cover_addresses WHERE address >= $1 AND address < $2 ORDER BY address LIMIT 2`,
		prefix, prefix+"g")
	if err != nil {
		return "", fmt.Errorf("find cover %s: %w", prefix, err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", fmt.Errorf("find cover %s: %w", prefix, err)
	}
	if len(found) != 1 {
		return "", ErrNotFound
	}
	return found[0], nil
}

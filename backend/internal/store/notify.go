package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// FeedSecret is a Reader's live feed secret, as listed to them; the secret
// itself is never stored, only its SHA-256.
type FeedSecret struct {
	ReaderID   int64
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// SetFeedSecret stores the hash of a Reader's new feed secret, replacing
// (and so revoking) the one before.
func (s *Store) SetFeedSecret(ctx context.Context, readerID int64, hash []byte) (FeedSecret, error) {
	var f FeedSecret
	err := s.db.QueryRow(ctx, `
		INSERT INTO feed_secrets (reader_id, secret_hash) VALUES ($1, $2)
		ON CONFLICT (reader_id) DO UPDATE SET secret_hash = EXCLUDED.secret_hash, created_at = now(), last_used_at = NULL
		RETURNING reader_id, created_at, last_used_at`, readerID, hash).Scan(&f.ReaderID, &f.CreatedAt, &f.LastUsedAt)
	if err != nil {
		return FeedSecret{}, fmt.Errorf("set feed secret: %w", err)
	}
	return f, nil
}

// RevokeFeedSecret deletes a Reader's feed secret; ErrNotFound when there is
// none.
func (s *Store) RevokeFeedSecret(ctx context.Context, readerID int64) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM feed_secrets WHERE reader_id = $1`, readerID)
	if err != nil {
		return fmt.Errorf("revoke feed secret: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// FeedSecretOf returns a Reader's live feed secret; ErrNotFound when none.
func (s *Store) FeedSecretOf(ctx context.Context, readerID int64) (FeedSecret, error) {
	var f FeedSecret
	err := s.db.QueryRow(ctx, `SELECT reader_id, created_at, last_used_at FROM feed_secrets WHERE reader_id = $1`, readerID).
		Scan(&f.ReaderID, &f.CreatedAt, &f.LastUsedAt)
	if err != nil {
		if err = notFound(err); errors.Is(err, ErrNotFound) {
			return FeedSecret{}, ErrNotFound
		}
		return FeedSecret{}, fmt.Errorf("feed secret: %w", err)
	}
	return f, nil
}

// ReaderByFeedSecret finds the Reader whose live feed secret has this hash,
// recording the use at most once a minute (feed readers poll often).
func (s *Store) ReaderByFeedSecret(ctx context.Context, hash []byte) (Reader, FeedSecret, error) {
	var r Reader
	var f FeedSecret
	err := s.db.QueryRow(ctx, `
		SELECT r.id, r.name, r.password_hash, r.is_owner, r.created_at, f.created_at, f.last_used_at
		FROM feed_secrets f JOIN readers r ON r.id = f.reader_id
		WHERE f.secret_hash = $1`, hash).
		Scan(&r.ID, &r.Name, &r.PasswordHash, &r.IsOwner, &r.CreatedAt, &f.CreatedAt, &f.LastUsedAt)
	if err != nil {
		return Reader{}, FeedSecret{}, notFound(err)
	}
	f.ReaderID = r.ID
	if f.LastUsedAt == nil || time.Since(*f.LastUsedAt) > tokenTouchEvery {
		if _, err := s.db.Exec(ctx, `UPDATE feed_secrets SET last_used_at = now() WHERE reader_id = $1`, r.ID); err != nil {
			return Reader{}, FeedSecret{}, fmt.Errorf("record feed use: %w", err)
		}
	}
	return r, f, nil
}

// ChapterEvent is one change of a Latest Chapter on a Series a Reader holds,
// with what a feed entry or a notification shows of it.
type ChapterEvent struct {
	HistoryID    int64
	SeriesKey    string
	Site, Kind   string
	SeriesURL    string
	Title        string // the Series' title, or the Reader's hint while it has none
	CoverAddress string
	CoverType    string
	Label        string
	Number       *float64
	URL          string
	Locked       bool
	FirstSeenAt  time.Time
}

// workFirstSite is true for a Latest Chapter change h of the Bookmark b
// unless b is in a Work and another member's Site had the same chapter
// number first: a Work's chapter is news once, from the first Site that
// has it (issue 21). Changes without a number stay per Site.
const workFirstSite = `NOT (b.work_id IS NOT NULL AND h.number IS NOT NULL AND EXISTS (
	SELECT 1 FROM bookmarks m JOIN latest_chapter_history h2 ON h2.series_key = m.series_key
	WHERE m.reader_id = b.reader_id AND m.work_id = b.work_id AND m.series_key <> b.series_key
	  AND h2.number = h.number AND (h2.first_seen_at, h2.id) < (h.first_seen_at, h.id)))`

// workUnread is true unless b is in a Work and a member's Progress already
// reaches h (read on another Site is read).
const workUnread = `NOT (b.work_id IS NOT NULL AND h.number IS NOT NULL AND EXISTS (
	SELECT 1 FROM bookmarks m WHERE m.reader_id = b.reader_id AND m.work_id = b.work_id
	  AND m.chapter_number IS NOT NULL AND m.chapter_number >= h.number))`

// workNews is workFirstSite and workUnread: what enters a push queue.
const workNews = `(` + workFirstSite + ` AND ` + workUnread + `)`

// FeedWindow bounds how far back a feed reaches: feed readers keep what
// they saw, so older entries only make every fetch larger.
const FeedWindow = 90 * 24 * time.Hour

// FeedEntries returns the newest Latest Chapter changes on Series the
// Reader holds, newest first. A Series' first Latest Chapter ever found (no
// successful poll before it) is its Acquisition, not a change, and is left
// out.
func (s *Store) FeedEntries(ctx context.Context, readerID int64, limit int) ([]ChapterEvent, error) {
	rows, err := s.db.Query(ctx, `
		SELECT h.id, s.key, s.site, s.kind, s.series_url,
		       CASE WHEN s.title <> '' THEN s.title ELSE b.title_hint END,
		       s.cover_address, s.cover_type, h.label, h.number, h.url, h.locked, h.first_seen_at
		FROM bookmarks b
		JOIN latest_chapter_history h ON h.series_key = b.series_key
		JOIN series s ON s.key = b.series_key
		WHERE b.reader_id = $1 AND h.prev_poll_at IS NOT NULL AND h.first_seen_at > now() - $3::interval
		  AND `+workFirstSite+`
		ORDER BY h.first_seen_at DESC, h.id DESC
		LIMIT $2`, readerID, limit, FeedWindow)
	if err != nil {
		return nil, fmt.Errorf("feed entries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ChapterEvent, error) { return scanEvent(row) })
	if err != nil {
		return nil, fmt.Errorf("feed entries: %w", err)
	}
	return out, nil
}

func scanEvent(row pgx.Row, extra ...any) (ChapterEvent, error) {
	var e ChapterEvent
	dst := append([]any{&e.HistoryID, &e.SeriesKey, &e.Site, &e.Kind, &e.SeriesURL, &e.Title,
		&e.CoverAddress, &e.CoverType, &e.Label, &e.Number, &e.URL, &e.Locked, &e.FirstSeenAt}, extra...)
	err := row.Scan(dst...)
	return e, err
}

// Target is a Reader's push notification target with how its deliveries go.
type Target struct {
	ID       int64
	ReaderID int64
	Kind     string // the service: discord, tgram, gotify, matrix, ntfy, json
	// URL is the Apprise URL as shown: masked when SealedURL holds the full
	// one, else in full (it has no secret).
	URL           string
	SealedURL     []byte
	SigningSecret []byte // sealed whsec_ secret of a signed webhook
	CreatedAt     time.Time
	TargetTerms

	Sent        int
	Pending     int
	Failed      int
	LastSentAt  *time.Time
	LastError   string
	LastErrorAt *time.Time
}

// TargetTerms are the Reader's terms for one target: when it sends.
type TargetTerms struct {
	Name         string
	Mode         string // "each", "threshold" or "digest"
	Threshold    int
	Digest       string // "daily" or "weekly"
	DigestHour   int
	TimeZone     string
	LastDigestAt *time.Time
}

// NewTarget is a target to save; the caller has validated and sealed it.
type NewTarget struct {
	Kind, URL                string
	SealedURL, SigningSecret []byte
	TargetTerms
}

// CreateTarget adds a push target; the same kind and URL twice is
// ErrConflict.
func (s *Store) CreateTarget(ctx context.Context, readerID int64, in NewTarget) (Target, error) {
	t := Target{ReaderID: readerID, Kind: in.Kind, URL: in.URL, SealedURL: in.SealedURL, SigningSecret: in.SigningSecret, TargetTerms: in.TargetTerms}
	if t.Mode == "" {
		t.Mode = "each"
	}
	if t.Threshold == 0 {
		t.Threshold = 1
	}
	if t.Digest == "" {
		t.Digest = "daily"
	}
	if t.TimeZone == "" {
		t.TimeZone = "UTC"
	}
	err := s.db.QueryRow(ctx, `
		INSERT INTO notify_targets (reader_id, kind, url, sealed_url, signing_secret, name, mode, threshold, digest, digest_hour, time_zone)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id, created_at`,
		readerID, t.Kind, t.URL, t.SealedURL, t.SigningSecret, t.Name, t.Mode, t.Threshold, t.Digest, t.DigestHour, t.TimeZone).
		Scan(&t.ID, &t.CreatedAt)
	if isUniqueViolation(err) {
		return Target{}, fmt.Errorf("target %s: %w", in.Kind, ErrConflict)
	}
	if err != nil {
		return Target{}, fmt.Errorf("create target: %w", err)
	}
	return t, nil
}

const targetCols = `t.id, t.reader_id, t.kind, t.url, t.sealed_url, t.signing_secret, t.created_at,
	t.name, t.mode, t.threshold, t.digest, t.digest_hour, t.time_zone, t.last_digest_at,
	count(*) FILTER (WHERE d.status = 'sent'), count(*) FILTER (WHERE d.status = 'pending'),
	count(*) FILTER (WHERE d.status = 'failed'),
	max(d.done_at) FILTER (WHERE d.status = 'sent'),
	coalesce((array_agg(d.last_error ORDER BY coalesce(d.done_at, d.created_at) DESC) FILTER (WHERE d.last_error <> ''))[1], ''),
	max(coalesce(d.done_at, d.created_at)) FILTER (WHERE d.last_error <> '')`

func scanTarget(row pgx.Row) (Target, error) {
	var t Target
	err := row.Scan(&t.ID, &t.ReaderID, &t.Kind, &t.URL, &t.SealedURL, &t.SigningSecret, &t.CreatedAt,
		&t.Name, &t.Mode, &t.Threshold, &t.Digest, &t.DigestHour, &t.TimeZone, &t.LastDigestAt,
		&t.Sent, &t.Pending, &t.Failed, &t.LastSentAt, &t.LastError, &t.LastErrorAt)
	return t, err
}

// SetDigestSent records when a target's digest left.
func (s *Store) SetDigestSent(ctx context.Context, targetID int64, at time.Time) error {
	if _, err := s.db.Exec(ctx, `UPDATE notify_targets SET last_digest_at = $2 WHERE id = $1`, targetID, at); err != nil {
		return fmt.Errorf("record digest of target %d: %w", targetID, err)
	}
	return nil
}

// SetMute mutes or unmutes a Series for a Reader's notifications; muting
// drops the Series' pending deliveries too.
func (s *Store) SetMute(ctx context.Context, readerID int64, seriesKey string, muted bool) error {
	var held bool
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM bookmarks WHERE reader_id = $1 AND series_key = $2)`, readerID, seriesKey).Scan(&held); err != nil {
		return fmt.Errorf("mute %s: %w", seriesKey, err)
	}
	if !held {
		return ErrNotFound
	}
	if !muted {
		if _, err := s.db.Exec(ctx, `DELETE FROM notify_mutes WHERE reader_id = $1 AND series_key = $2`, readerID, seriesKey); err != nil {
			return fmt.Errorf("unmute %s: %w", seriesKey, err)
		}
		return nil
	}
	if _, err := s.db.Exec(ctx, `INSERT INTO notify_mutes (reader_id, series_key) VALUES ($1, $2) ON CONFLICT DO NOTHING`, readerID, seriesKey); err != nil {
		return fmt.Errorf("mute %s: %w", seriesKey, err)
	}
	if _, err := s.db.Exec(ctx, `
		DELETE FROM notify_deliveries d USING latest_chapter_history h
		WHERE d.reader_id = $1 AND d.status = 'pending' AND h.id = d.history_id AND h.series_key = $2`, readerID, seriesKey); err != nil {
		return fmt.Errorf("mute %s: %w", seriesKey, err)
	}
	return nil
}

// Muted lists the keys of a Reader's muted Series.
func (s *Store) Muted(ctx context.Context, readerID int64) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT series_key FROM notify_mutes WHERE reader_id = $1 ORDER BY series_key`, readerID)
	if err != nil {
		return nil, fmt.Errorf("muted series: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("muted series: %w", err)
	}
	return out, nil
}

// ListTargets lists a Reader's targets, oldest first, with delivery counts.
func (s *Store) ListTargets(ctx context.Context, readerID int64) ([]Target, error) {
	rows, err := s.db.Query(ctx, `
		SELECT `+targetCols+`
		FROM notify_targets t LEFT JOIN notify_deliveries d ON d.target_id = t.id
		WHERE t.reader_id = $1
		GROUP BY t.id ORDER BY t.created_at, t.id`, readerID)
	if err != nil {
		return nil, fmt.Errorf("list targets: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Target, error) { return scanTarget(row) })
	if err != nil {
		return nil, fmt.Errorf("list targets: %w", err)
	}
	return out, nil
}

// TargetByID returns a target; readerID 0 means any Reader's (the sender),
// otherwise another Reader's target is ErrNotFound, so ids reveal nothing.
func (s *Store) TargetByID(ctx context.Context, readerID, id int64) (Target, error) {
	t, err := scanTarget(s.db.QueryRow(ctx, `
		SELECT `+targetCols+`
		FROM notify_targets t LEFT JOIN notify_deliveries d ON d.target_id = t.id
		WHERE t.id = $1 AND ($2 = 0 OR t.reader_id = $2)
		GROUP BY t.id`, id, readerID))
	if err != nil {
		if err = notFound(err); errors.Is(err, ErrNotFound) {
			return Target{}, ErrNotFound
		}
		return Target{}, fmt.Errorf("target %d: %w", id, err)
	}
	return t, nil
}

// DeleteTarget removes one of a Reader's targets and its ledger.
func (s *Store) DeleteTarget(ctx context.Context, readerID, id int64) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM notify_targets WHERE id = $1 AND reader_id = $2`, id, readerID)
	if err != nil {
		return fmt.Errorf("delete target: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// CountTargets counts a Reader's targets.
func (s *Store) CountTargets(ctx context.Context, readerID int64) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM notify_targets WHERE reader_id = $1`, readerID).Scan(&n)
	return n, err
}

// QueueDeliveries enters each Latest Chapter change first seen within
// window into the ledger of every target whose Reader holds the Series, and
// returns how many entered and the targets that now have deliveries
// pending. A change is left out for a Reader whose Progress already reaches
// it, for a Series the Reader muted, for a Bookmark or target made after it was seen, and when it is the
// Series' first Latest Chapter (its Acquisition). The primary key keeps a
// change from entering a target's ledger twice, whichever replica scans.
func (s *Store) QueueDeliveries(ctx context.Context, window time.Duration) (queued int, targets []int64, err error) {
	tag, err := s.db.Exec(ctx, `
		INSERT INTO notify_deliveries (target_id, history_id, reader_id)
		SELECT t.id, h.id, t.reader_id
		FROM latest_chapter_history h
		JOIN bookmarks b ON b.series_key = h.series_key
		JOIN notify_targets t ON t.reader_id = b.reader_id
		WHERE h.first_seen_at > now() - $1::interval
		  AND h.prev_poll_at IS NOT NULL
		  AND h.first_seen_at >= t.created_at AND h.first_seen_at >= b.created_at
		  -- Changes a Work held back stay held back once the Bookmark leaves it.
		  AND (b.work_left_at IS NULL OR h.first_seen_at >= b.work_left_at)
		  AND NOT (b.chapter_number IS NOT NULL AND h.number IS NOT NULL AND b.chapter_number >= h.number)
		  AND NOT EXISTS (SELECT 1 FROM notify_deliveries d WHERE d.target_id = t.id AND d.history_id = h.id)
		  AND NOT EXISTS (SELECT 1 FROM notify_mutes m WHERE m.reader_id = t.reader_id AND m.series_key = h.series_key)
		  AND `+workNews+`
		  -- One delivery per chapter number of a Work, even when the Site
		  -- that had it first commits its poll after another's was queued.
		  AND NOT (b.work_id IS NOT NULL AND h.number IS NOT NULL AND EXISTS (
		      SELECT 1 FROM notify_deliveries d2
		      JOIN latest_chapter_history h3 ON h3.id = d2.history_id
		      JOIN bookmarks m ON m.reader_id = b.reader_id AND m.series_key = h3.series_key
		      WHERE d2.target_id = t.id AND m.work_id = b.work_id AND h3.number = h.number))
		ON CONFLICT (target_id, history_id) DO NOTHING`, window)
	if err != nil {
		return 0, nil, fmt.Errorf("queue deliveries: %w", err)
	}
	rows, err := s.db.Query(ctx, `SELECT DISTINCT target_id FROM notify_deliveries WHERE status = 'pending' ORDER BY target_id`)
	if err != nil {
		return 0, nil, fmt.Errorf("targets with pending deliveries: %w", err)
	}
	targets, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, nil, fmt.Errorf("targets with pending deliveries: %w", err)
	}
	return int(tag.RowsAffected()), targets, nil
}

// PruneDeliveries deletes finished ledger rows of changes first seen more
// than keep ago. keep must be longer than the scan's window: a row the scan
// could still consider must stay, or its change would be sent again.
func (s *Store) PruneDeliveries(ctx context.Context, keep time.Duration) (int64, error) {
	tag, err := s.db.Exec(ctx, `
		DELETE FROM notify_deliveries d USING latest_chapter_history h
		WHERE h.id = d.history_id AND d.status <> 'pending' AND h.first_seen_at < now() - $1::interval`, keep)
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Delivery is one pending ledger row with the change it announces.
type Delivery struct {
	TargetID, ReaderID int64
	Attempts           int
	Event              ChapterEvent
}

// ClaimDeliveries locks up to limit of a target's pending deliveries, oldest
// change first, skipping rows another sender holds: the caller sends them
// and records the outcome before its transaction ends, so two senders never
// hold the same row. Deliveries whose Bookmark is gone are dropped first.
// It must run inside InTx.
func (s *Store) ClaimDeliveries(ctx context.Context, targetID int64, limit int) ([]Delivery, error) {
	if s.tx == nil {
		return nil, fmt.Errorf("claim deliveries: not in a transaction")
	}
	if err := s.dropStale(ctx, targetID); err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `
		SELECT h.id, s.key, s.site, s.kind, s.series_url,
		       CASE WHEN s.title <> '' THEN s.title ELSE b.title_hint END,
		       s.cover_address, s.cover_type, h.label, h.number, h.url, h.locked, h.first_seen_at,
		       d.reader_id, d.attempts
		FROM notify_deliveries d
		JOIN latest_chapter_history h ON h.id = d.history_id
		JOIN series s ON s.key = h.series_key
		JOIN bookmarks b ON b.reader_id = d.reader_id AND b.series_key = h.series_key
		WHERE d.target_id = $1 AND d.status = 'pending'
		ORDER BY h.first_seen_at, h.id
		LIMIT $2
		FOR UPDATE OF d SKIP LOCKED`, targetID, limit)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Delivery, error) {
		d := Delivery{TargetID: targetID}
		var err error
		d.Event, err = scanEvent(row, &d.ReaderID, &d.Attempts)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return out, nil
}

// dropStale deletes a target's pending deliveries that are no news any
// more: the Bookmark is gone, the Series was muted, or the Reader's Progress
// (on any member of its Work) reached the chapter since it was queued.
func (s *Store) dropStale(ctx context.Context, targetID int64) error {
	if _, err := s.db.Exec(ctx, `
		DELETE FROM notify_deliveries d
		USING latest_chapter_history h
		WHERE d.target_id = $1 AND d.status = 'pending' AND h.id = d.history_id
		  AND (NOT EXISTS (SELECT 1 FROM bookmarks b WHERE b.reader_id = d.reader_id AND b.series_key = h.series_key)
		       OR EXISTS (SELECT 1 FROM bookmarks b WHERE b.reader_id = d.reader_id AND b.series_key = h.series_key
		                  AND b.chapter_number IS NOT NULL AND h.number IS NOT NULL AND b.chapter_number >= h.number)
		       OR EXISTS (SELECT 1 FROM notify_mutes m WHERE m.reader_id = d.reader_id AND m.series_key = h.series_key)
		       -- Only the Progress part: a queued delivery stays even if another
		       -- member's Site turns out to have had the chapter first (its own
		       -- change is then not queued: one message either way).
		       OR EXISTS (SELECT 1 FROM bookmarks b WHERE b.reader_id = d.reader_id AND b.series_key = h.series_key
		                  AND NOT `+workUnread+`))`, targetID); err != nil {
		return fmt.Errorf("drop stale deliveries of target %d: %w", targetID, err)
	}
	return nil
}

// PendingDeliveries counts a target's pending deliveries that are still
// news (dropping the others) and says when the oldest entered the queue.
func (s *Store) PendingDeliveries(ctx context.Context, targetID int64) (int, time.Time, error) {
	if err := s.dropStale(ctx, targetID); err != nil {
		return 0, time.Time{}, err
	}
	var n int
	var oldest *time.Time
	err := s.db.QueryRow(ctx, `SELECT count(*), min(created_at) FROM notify_deliveries WHERE target_id = $1 AND status = 'pending'`, targetID).
		Scan(&n, &oldest)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("pending deliveries of target %d: %w", targetID, err)
	}
	if oldest == nil {
		return n, time.Time{}, nil
	}
	return n, *oldest, nil
}

// Delivery outcomes.
const (
	DeliverySent    = "sent"
	DeliveryFailed  = "failed"  // given up: not sent, and never will be
	DeliveryPending = "pending" // a failed attempt that will be retried
)

// FinishDeliveries records the outcome of one attempt at sending a target's
// deliveries; errMsg is the reason of a failure.
func (s *Store) FinishDeliveries(ctx context.Context, targetID int64, historyIDs []int64, status, errMsg string) error {
	_, err := s.db.Exec(ctx, `
		UPDATE notify_deliveries SET status = $3, attempts = attempts + 1, last_error = $4,
			done_at = CASE WHEN $3 = 'pending' THEN NULL ELSE now() END
		WHERE target_id = $1 AND history_id = ANY($2)`, targetID, historyIDs, status, errMsg)
	if err != nil {
		return fmt.Errorf("record deliveries of target %d: %w", targetID, err)
	}
	return nil
}

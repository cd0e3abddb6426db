package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TrackerAccount is a Reader's link to a tracker. Token and RefreshToken are
// sealed (package secretbox): the store never sees a token in the clear.
type TrackerAccount struct {
	ReaderID       int64
	Tracker        string
	UserID         string
	UserName       string
	Token          []byte // nil when unlinked
	RefreshToken   []byte
	ExpiresAt      *time.Time
	LinkedAt       time.Time
	UnlinkedAt     *time.Time
	UnlinkedReason string
	LastSyncAt     *time.Time
	LastError      string
	LastErrorAt    *time.Time
}

// Linked reports whether the account holds a token.
func (a TrackerAccount) Linked() bool { return a.Token != nil }

const accountCols = `reader_id, tracker, user_id, user_name, token, refresh_token, expires_at, linked_at,
	unlinked_at, unlinked_reason, last_sync_at, last_error, last_error_at`

func scanAccount(row pgx.Row) (TrackerAccount, error) {
	var a TrackerAccount
	err := row.Scan(&a.ReaderID, &a.Tracker, &a.UserID, &a.UserName, &a.Token, &a.RefreshToken, &a.ExpiresAt, &a.LinkedAt,
		&a.UnlinkedAt, &a.UnlinkedReason, &a.LastSyncAt, &a.LastError, &a.LastErrorAt)
	return a, err
}

// LinkTracker stores a freshly linked account, replacing any earlier link
// of the Reader's to that tracker.
func (s *Store) LinkTracker(ctx context.Context, a TrackerAccount) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO tracker_accounts (reader_id, tracker, user_id, user_name, token, refresh_token, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (reader_id, tracker) DO UPDATE SET
			user_id = EXCLUDED.user_id, user_name = EXCLUDED.user_name, token = EXCLUDED.token,
			refresh_token = EXCLUDED.refresh_token, expires_at = EXCLUDED.expires_at, linked_at = now(),
			unlinked_at = NULL, unlinked_reason = '', last_error = '', last_error_at = NULL`,
		a.ReaderID, a.Tracker, a.UserID, a.UserName, a.Token, a.RefreshToken, a.ExpiresAt)
	if err != nil {
		return fmt.Errorf("link %s: %w", a.Tracker, err)
	}
	return nil
}

// TrackerAccount returns a Reader's account on a tracker, linked or not.
func (s *Store) TrackerAccount(ctx context.Context, readerID int64, tracker string) (TrackerAccount, error) {
	a, err := scanAccount(s.db.QueryRow(ctx, `SELECT `+accountCols+` FROM tracker_accounts WHERE reader_id = $1 AND tracker = $2`, readerID, tracker))
	if err != nil {
		return a, fmt.Errorf("tracker account %s: %w", tracker, notFound(err))
	}
	return a, nil
}

// TrackerAccounts lists a Reader's accounts.
func (s *Store) TrackerAccounts(ctx context.Context, readerID int64) ([]TrackerAccount, error) {
	rows, err := s.db.Query(ctx, `SELECT `+accountCols+` FROM tracker_accounts WHERE reader_id = $1 ORDER BY tracker`, readerID)
	if err != nil {
		return nil, fmt.Errorf("tracker accounts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TrackerAccount, error) { return scanAccount(r) })
	if err != nil {
		return nil, fmt.Errorf("tracker accounts: %w", err)
	}
	return out, nil
}

// UnlinkTracker drops an account's tokens and says why; the row, its
// mappings and its history stay. ErrNotFound when there was no account.
func (s *Store) UnlinkTracker(ctx context.Context, readerID int64, tracker, reason string) error {
	tag, err := s.db.Exec(ctx, `
		UPDATE tracker_accounts SET token = NULL, refresh_token = NULL, expires_at = NULL,
			unlinked_at = coalesce(unlinked_at, now()), unlinked_reason = $3
		WHERE reader_id = $1 AND tracker = $2`, readerID, tracker, reason)
	if err != nil {
		return fmt.Errorf("unlink %s: %w", tracker, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// SetTrackerTokens replaces a linked account's tokens after a refresh.
func (s *Store) SetTrackerTokens(ctx context.Context, readerID int64, tracker string, token, refresh []byte, expires *time.Time) error {
	_, err := s.db.Exec(ctx, `
		UPDATE tracker_accounts SET token = $3, refresh_token = $4, expires_at = $5
		WHERE reader_id = $1 AND tracker = $2 AND token IS NOT NULL`, readerID, tracker, token, refresh, expires)
	if err != nil {
		return fmt.Errorf("refresh %s tokens: %w", tracker, err)
	}
	return nil
}

// TrackerOutcome records on an account how its last sync went: errMsg ""
// is a success.
func (s *Store) TrackerOutcome(ctx context.Context, readerID int64, tracker, errMsg string) error {
	var err error
	if errMsg == "" {
		_, err = s.db.Exec(ctx, `UPDATE tracker_accounts SET last_sync_at = now(), last_error = '', last_error_at = NULL
			WHERE reader_id = $1 AND tracker = $2`, readerID, tracker)
	} else {
		_, err = s.db.Exec(ctx, `UPDATE tracker_accounts SET last_error = $3, last_error_at = now()
			WHERE reader_id = $1 AND tracker = $2`, readerID, tracker, errMsg)
	}
	if err != nil {
		return fmt.Errorf("record %s sync: %w", tracker, err)
	}
	return nil
}

// TrackerEntry is a Bookmark's entry on a tracker.
type TrackerEntry struct {
	ID             int64
	ReaderID       int64
	SeriesKey      string
	Tracker        string
	EntryID        string
	Title          string
	Source         string
	SyncedProgress *int
	SyncedStatus   string
	LastSyncAt     *time.Time
	LastError      string
	LastErrorAt    *time.Time
	Dirty          bool
	CreatedAt      time.Time
}

const entryCols = `id, reader_id, series_key, tracker, entry_id, title, source, synced_progress, synced_status,
	last_sync_at, last_error, last_error_at, dirty_since IS NOT NULL, created_at`

func scanEntry(row pgx.Row) (TrackerEntry, error) {
	var e TrackerEntry
	err := row.Scan(&e.ID, &e.ReaderID, &e.SeriesKey, &e.Tracker, &e.EntryID, &e.Title, &e.Source, &e.SyncedProgress, &e.SyncedStatus,
		&e.LastSyncAt, &e.LastError, &e.LastErrorAt, &e.Dirty, &e.CreatedAt)
	return e, err
}

// The sources of a mapping.
const (
	EntryByReader = "reader"
	EntryBySite   = "site"
	EntryByImport = "import"
)

// PutTrackerEntry maps a Reader's Bookmark to a tracker entry, replacing
// the mapping it had on that tracker; a changed entry starts its sync
// bookkeeping afresh. ErrNotFound when the Reader holds no Bookmark on key.
func (s *Store) PutTrackerEntry(ctx context.Context, readerID int64, key, tracker, entryID, title, source string) (TrackerEntry, bool, error) {
	var created bool
	e, err := scanEntryCreated(s.db.QueryRow(ctx, `
		INSERT INTO tracker_entries (reader_id, series_key, tracker, entry_id, title, source)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (reader_id, series_key, tracker) DO UPDATE SET
			title = EXCLUDED.title, source = EXCLUDED.source, entry_id = EXCLUDED.entry_id,
			synced_progress = CASE WHEN tracker_entries.entry_id = EXCLUDED.entry_id THEN tracker_entries.synced_progress END,
			synced_status = CASE WHEN tracker_entries.entry_id = EXCLUDED.entry_id THEN tracker_entries.synced_status ELSE '' END,
			last_error = CASE WHEN tracker_entries.entry_id = EXCLUDED.entry_id THEN tracker_entries.last_error ELSE '' END,
			failures = 0
		RETURNING `+entryCols+`, (xmax = 0)`, readerID, key, tracker, entryID, title, source), &created)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" {
		return TrackerEntry{}, false, ErrNotFound
	}
	if err != nil {
		return TrackerEntry{}, false, fmt.Errorf("map %s to %s %s: %w", key, tracker, entryID, err)
	}
	return e, created, nil
}

func scanEntryCreated(row pgx.Row, created *bool) (TrackerEntry, error) {
	var e TrackerEntry
	err := row.Scan(&e.ID, &e.ReaderID, &e.SeriesKey, &e.Tracker, &e.EntryID, &e.Title, &e.Source, &e.SyncedProgress, &e.SyncedStatus,
		&e.LastSyncAt, &e.LastError, &e.LastErrorAt, &e.Dirty, &e.CreatedAt, created)
	return e, err
}

// DeleteTrackerEntry removes a mapping; ErrNotFound when there was none.
func (s *Store) DeleteTrackerEntry(ctx context.Context, readerID int64, key, tracker string) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM tracker_entries WHERE reader_id = $1 AND series_key = $2 AND tracker = $3`, readerID, key, tracker)
	if err != nil {
		return fmt.Errorf("unmap %s from %s: %w", key, tracker, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// TrackerEntries lists the mappings of one Bookmark (key set) or of all a
// Reader's Bookmarks on one tracker (tracker set), or both.
func (s *Store) TrackerEntries(ctx context.Context, readerID int64, key, tracker string) ([]TrackerEntry, error) {
	rows, err := s.db.Query(ctx, `SELECT `+entryCols+` FROM tracker_entries
		WHERE reader_id = $1 AND ($2 = '' OR series_key = $2) AND ($3 = '' OR tracker = $3)
		ORDER BY series_key, tracker`, readerID, key, tracker)
	if err != nil {
		return nil, fmt.Errorf("tracker entries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TrackerEntry, error) { return scanEntry(r) })
	if err != nil {
		return nil, fmt.Errorf("tracker entries: %w", err)
	}
	return out, nil
}

// SyncTicket is a sync job to queue: the entry, the round it sends, and
// when its first unsent record was made.
type SyncTicket struct {
	EntryID    int64
	Round      int64
	DirtySince time.Time
}

// ForgetSynced drops what Lectern knew of a Reader's entries on a tracker,
// so their next syncs read the tracker again: after a link, whatever
// happened there meanwhile is backfilled.
func (s *Store) ForgetSynced(ctx context.Context, readerID int64, tracker string) error {
	_, err := s.db.Exec(ctx, `UPDATE tracker_entries SET synced_progress = NULL, synced_status = ''
		WHERE reader_id = $1 AND tracker = $2`, readerID, tracker)
	if err != nil {
		return fmt.Errorf("forget %s sync state: %w", tracker, err)
	}
	return nil
}

// MarkUnsynced records that the Bookmarks on keys have Progress their
// linked trackers have not been sent (all the Reader's Bookmarks when keys
// is nil), except on the tracker named by except, and returns the sync
// jobs to queue. A record already waiting keeps its first time: the job is
// due a fixed delay after the first unsent record, however many follow.
func (s *Store) MarkUnsynced(ctx context.Context, readerID int64, keys []string, tracker, except string) ([]SyncTicket, error) {
	rows, err := s.db.Query(ctx, `
		UPDATE tracker_entries e SET dirty_since = coalesce(e.dirty_since, now())
		FROM tracker_accounts a
		WHERE e.reader_id = $1 AND ($2::text[] IS NULL OR e.series_key = ANY($2))
		  AND ($3 = '' OR e.tracker = $3) AND e.tracker <> $4
		  AND a.reader_id = e.reader_id AND a.tracker = e.tracker AND a.token IS NOT NULL
		RETURNING e.id, e.round, e.dirty_since`, readerID, keys, tracker, except)
	if err != nil {
		return nil, fmt.Errorf("mark unsynced: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SyncTicket, error) {
		var t SyncTicket
		return t, r.Scan(&t.EntryID, &t.Round, &t.DirtySince)
	})
	if err != nil {
		return nil, fmt.Errorf("mark unsynced: %w", err)
	}
	return out, nil
}

// SyncWork is what one sync job sends: the entry, the account, and the
// Reader's Progress as it is when the job runs.
type SyncWork struct {
	Entry         TrackerEntry
	Account       TrackerAccount
	Title         string
	ChapterNumber *float64
	Completed     bool
}

// ClaimSync takes round of an entry's sync: the round moves on and the
// entry is no longer waiting, so a Progress record from now on queues the
// next round's job. ok is false when the round is not the entry's (a later
// job has it) or the entry or its link is gone.
func (s *Store) ClaimSync(ctx context.Context, entryID, round int64) (SyncWork, bool, error) {
	var w SyncWork
	e := &w.Entry
	a := &w.Account
	err := s.db.QueryRow(ctx, `
		WITH claimed AS (
			UPDATE tracker_entries SET round = round + 1, dirty_since = NULL
			WHERE id = $1 AND round = $2
			RETURNING `+entryCols+`)
		SELECT c.*, `+prefixed("a", accountCols)+`,
		       CASE WHEN s.title <> '' THEN s.title ELSE b.title_hint END, b.chapter_number, b.completed_at IS NOT NULL
		FROM claimed c
		JOIN bookmarks b ON b.reader_id = c.reader_id AND b.series_key = c.series_key
		JOIN series s ON s.key = c.series_key
		JOIN tracker_accounts a ON a.reader_id = c.reader_id AND a.tracker = c.tracker`, entryID, round).Scan(
		&e.ID, &e.ReaderID, &e.SeriesKey, &e.Tracker, &e.EntryID, &e.Title, &e.Source, &e.SyncedProgress, &e.SyncedStatus,
		&e.LastSyncAt, &e.LastError, &e.LastErrorAt, &e.Dirty, &e.CreatedAt,
		&a.ReaderID, &a.Tracker, &a.UserID, &a.UserName, &a.Token, &a.RefreshToken, &a.ExpiresAt, &a.LinkedAt,
		&a.UnlinkedAt, &a.UnlinkedReason, &a.LastSyncAt, &a.LastError, &a.LastErrorAt,
		&w.Title, &w.ChapterNumber, &w.Completed)
	if errors.Is(err, pgx.ErrNoRows) {
		return SyncWork{}, false, nil
	}
	if err != nil {
		return SyncWork{}, false, fmt.Errorf("claim sync of entry %d: %w", entryID, err)
	}
	return w, true, nil
}

func prefixed(alias, cols string) string {
	out := ""
	for i, c := range splitCols(cols) {
		if i > 0 {
			out += ", "
		}
		out += alias + "." + c
	}
	return out
}

func splitCols(cols string) []string {
	var out []string
	cur := ""
	for _, r := range cols {
		switch r {
		case ',':
			out = append(out, cur)
			cur = ""
		case ' ', '\n', '\t':
		default:
			cur += string(r)
		}
	}
	return append(out, cur)
}

// SyncDone records a sync that left the tracker at progress and status.
func (s *Store) SyncDone(ctx context.Context, entryID int64, progress int, status string) error {
	_, err := s.db.Exec(ctx, `
		UPDATE tracker_entries SET synced_progress = $2, synced_status = $3, last_sync_at = now(),
			failures = 0, last_error = '', last_error_at = NULL
		WHERE id = $1`, entryID, progress, status)
	if err != nil {
		return fmt.Errorf("record sync of entry %d: %w", entryID, err)
	}
	return nil
}

// SyncFailed records a failed sync. With again, the entry waits to be
// sent once more and the ticket of the job to queue comes back, with the
// number of failures in a row for its back-off.
func (s *Store) SyncFailed(ctx context.Context, entryID int64, msg string, again bool) (SyncTicket, int, error) {
	var t SyncTicket
	var failures int
	var since *time.Time
	err := s.db.QueryRow(ctx, `
		UPDATE tracker_entries SET last_error = $2, last_error_at = now(), failures = failures + 1,
			dirty_since = CASE WHEN $3 THEN coalesce(dirty_since, now()) ELSE dirty_since END
		WHERE id = $1
		RETURNING id, round, dirty_since, failures`, entryID, msg, again).Scan(&t.EntryID, &t.Round, &since, &failures)
	if err != nil {
		return t, 0, fmt.Errorf("record failed sync of entry %d: %w", entryID, notFound(err))
	}
	if since != nil {
		t.DirtySince = *since
	}
	return t, failures, nil
}

// RaiseProgress sets a Bookmark's Progress to chapter number n (labelled
// label, without a chapter URL) when its own is lower or has no number:
// a tracker's higher count wins, a lower one never touches it.
func (s *Store) RaiseProgress(ctx context.Context, readerID int64, key string, n float64, label string) (bool, error) {
	tag, err := s.db.Exec(ctx, `
		UPDATE bookmarks SET chapter = $3, chapter_number = $4, chapter_url = '', progress_at = now(), updated_at = now()
		WHERE reader_id = $1 AND series_key = $2 AND (chapter_number IS NULL OR chapter_number < $4)`, readerID, key, label, n)
	if err != nil {
		return false, fmt.Errorf("raise progress of %s: %w", key, err)
	}
	return tag.RowsAffected() > 0, nil
}

// SetCompleted records (or clears) the Reader's "completed" mark on a
// Bookmark; ErrNotFound when they hold none on key.
func (s *Store) SetCompleted(ctx context.Context, readerID int64, key string, done bool) error {
	tag, err := s.db.Exec(ctx, `
		UPDATE bookmarks SET completed_at = CASE WHEN $3 THEN coalesce(completed_at, now()) END, updated_at = now()
		WHERE reader_id = $1 AND series_key = $2`, readerID, key, done)
	if err != nil {
		return fmt.Errorf("mark %s completed: %w", key, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Completed reports the Reader's "completed" mark on a Bookmark.
func (s *Store) Completed(ctx context.Context, readerID int64, key string) (bool, error) {
	var done bool
	err := s.db.QueryRow(ctx, `SELECT completed_at IS NOT NULL FROM bookmarks WHERE reader_id = $1 AND series_key = $2`, readerID, key).Scan(&done)
	if err != nil {
		return false, fmt.Errorf("completed %s: %w", key, notFound(err))
	}
	return done, nil
}

// trackerNames are the trackers the schema's checks allow.
var trackerNames = map[string]bool{"anilist": true, "myanimelist": true, "mangaupdates": true}

// entryIDShape is a tracker entry id as stored: the tracker's API number.
var entryIDShape = regexp.MustCompile(`^[1-9][0-9]{0,18}$`)

// SetSeriesTrackerIDs records the tracker ids a Series' page publishes
// (a Series fact, from the backend's own poll), replacing the earlier ones.
// Ids that are not a known tracker's number (a page's typo) are left out.
func (s *Store) SetSeriesTrackerIDs(ctx context.Context, key string, ids map[string]string) error {
	trackers, entries := make([]string, 0, len(ids)), make([]string, 0, len(ids))
	for t, id := range ids {
		if trackerNames[t] && entryIDShape.MatchString(id) {
			trackers, entries = append(trackers, t), append(entries, id)
		}
	}
	return s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, `DELETE FROM series_tracker_ids WHERE series_key = $1 AND NOT tracker = ANY($2)`, key, trackers); err != nil {
			return fmt.Errorf("series tracker ids of %s: %w", key, err)
		}
		_, err := tx.db.Exec(ctx, `
			INSERT INTO series_tracker_ids (series_key, tracker, entry_id)
			SELECT $1, t, e FROM unnest($2::text[], $3::text[]) AS x(t, e)
			ON CONFLICT (series_key, tracker) DO UPDATE SET entry_id = EXCLUDED.entry_id, seen_at = now()`, key, trackers, entries)
		if err != nil {
			return fmt.Errorf("series tracker ids of %s: %w", key, err)
		}
		return nil
	})
}

// SeriesTrackerIDs returns the tracker ids a Series' page published.
func (s *Store) SeriesTrackerIDs(ctx context.Context, key string) (map[string]string, error) {
	rows, err := s.db.Query(ctx, `SELECT tracker, entry_id FROM series_tracker_ids WHERE series_key = $1`, key)
	if err != nil {
		return nil, fmt.Errorf("series tracker ids of %s: %w", key, err)
	}
	out := map[string]string{}
	var t, id string
	_, err = pgx.ForEachRow(rows, []any{&t, &id}, func() error { out[t] = id; return nil })
	if err != nil {
		return nil, fmt.Errorf("series tracker ids of %s: %w", key, err)
	}
	return out, nil
}

// Placed is where an entry naming a tracker id goes: a Series Lectern knows.
type Placed struct {
	Key, Site, SeriesURL string
}

// PlaceTrackerIDs finds the Series of tracker entries: the Reader's own
// mapping first, then the ids Sites' pages published. Ids that place
// nowhere are absent from the answer.
func (s *Store) PlaceTrackerIDs(ctx context.Context, readerID int64, tracker string, ids []string) (map[string]Placed, error) {
	rows, err := s.db.Query(ctx, `
		SELECT DISTINCT ON (x.id) x.id, s.key, s.site, s.series_url
		FROM unnest($3::text[]) AS x(id)
		JOIN LATERAL (
			SELECT e.series_key, 0 AS rank FROM tracker_entries e
			WHERE e.reader_id = $1 AND e.tracker = $2 AND e.entry_id = x.id
			UNION ALL
			SELECT t.series_key, 1 FROM series_tracker_ids t WHERE t.tracker = $2 AND t.entry_id = x.id
		) m ON true
		JOIN series s ON s.key = m.series_key
		ORDER BY x.id, m.rank, s.readers DESC, s.key`, readerID, tracker, ids)
	if err != nil {
		return nil, fmt.Errorf("place %s ids: %w", tracker, err)
	}
	out := map[string]Placed{}
	var id string
	var p Placed
	_, err = pgx.ForEachRow(rows, []any{&id, &p.Key, &p.Site, &p.SeriesURL}, func() error { out[id] = p; return nil })
	if err != nil {
		return nil, fmt.Errorf("place %s ids: %w", tracker, err)
	}
	return out, nil
}

// NewTrackerEntry is a mapping an import carries.
type NewTrackerEntry struct {
	SeriesKey, Tracker, EntryID, Title string
}

// ImportTrackerEntries adds mappings an import carried to the Reader's
// Bookmarks, keeping any mapping the Reader already has on that tracker.
// It returns how many were added. It must run inside InTx.
func (s *Store) ImportTrackerEntries(ctx context.Context, readerID int64, list []NewTrackerEntry) (int, error) {
	if len(list) == 0 {
		return 0, nil
	}
	keys, trackers, ids, titles := make([]string, len(list)), make([]string, len(list)), make([]string, len(list)), make([]string, len(list))
	for i, e := range list {
		keys[i], trackers[i], ids[i], titles[i] = e.SeriesKey, e.Tracker, e.EntryID, e.Title
	}
	tag, err := s.db.Exec(ctx, `
		INSERT INTO tracker_entries (reader_id, series_key, tracker, entry_id, title, source)
		SELECT $1, k, t, i, n, 'import' FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS x(k, t, i, n)
		ON CONFLICT (reader_id, series_key, tracker) DO NOTHING`, readerID, keys, trackers, ids, titles)
	if err != nil {
		return 0, fmt.Errorf("import tracker entries: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// OAuthState is an authorisation under way.
type OAuthState struct {
	ReaderID  int64
	Tracker   string
	Verifier  []byte // sealed
	ExpiresAt time.Time
}

// PutOAuthState stores an authorisation under way by its state's hash, and
// forgets the expired ones.
func (s *Store) PutOAuthState(ctx context.Context, stateHash []byte, st OAuthState) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM tracker_oauth_states WHERE expires_at < now()`); err != nil {
		return fmt.Errorf("oauth state: %w", err)
	}
	_, err := s.db.Exec(ctx, `INSERT INTO tracker_oauth_states (state_hash, reader_id, tracker, verifier, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		stateHash, st.ReaderID, st.Tracker, st.Verifier, st.ExpiresAt)
	if err != nil {
		return fmt.Errorf("oauth state: %w", err)
	}
	return nil
}

// TakeOAuthState removes and returns the authorisation a state names: a
// state is good for one callback. ErrNotFound for an unknown state.
func (s *Store) TakeOAuthState(ctx context.Context, stateHash []byte) (OAuthState, error) {
	var st OAuthState
	err := s.db.QueryRow(ctx, `DELETE FROM tracker_oauth_states WHERE state_hash = $1 RETURNING reader_id, tracker, verifier, expires_at`,
		stateHash).Scan(&st.ReaderID, &st.Tracker, &st.Verifier, &st.ExpiresAt)
	if err != nil {
		return st, fmt.Errorf("oauth state: %w", notFound(err))
	}
	return st, nil
}

// ReserveTrackerSlot takes a tracker's next request slot, every after the
// one before (every replica shares it), when it is at most maxWait away,
// and says how long the caller waits for it. When the slot is further off
// (a Retry-After pushed it out, or a backlog) nothing is taken: reserved is
// false and wait is how far off it is.
func (s *Store) ReserveTrackerSlot(ctx context.Context, tracker string, every, maxWait time.Duration) (time.Duration, bool, error) {
	var waitUS int64
	var reserved bool
	// taken_slot is scratch: the slot this statement handed out, or NULL
	// when it handed none (RETURNING sees only the new row).
	err := s.db.QueryRow(ctx, `
		INSERT INTO tracker_pace AS p (tracker, next_at, taken_slot) VALUES ($1, now() + $2::interval, now())
		ON CONFLICT (tracker) DO UPDATE SET
			taken_slot = CASE WHEN greatest(p.next_at, now()) - now() <= $3::interval THEN greatest(p.next_at, now()) END,
			next_at = CASE WHEN greatest(p.next_at, now()) - now() <= $3::interval THEN greatest(p.next_at, now()) + $2::interval ELSE p.next_at END
		RETURNING (extract(epoch FROM (coalesce(taken_slot, next_at) - now())) * 1e6)::bigint, taken_slot IS NOT NULL`,
		tracker, every, maxWait).Scan(&waitUS, &reserved)
	if err != nil {
		return 0, false, fmt.Errorf("pace %s: %w", tracker, err)
	}
	return max(time.Duration(waitUS)*time.Microsecond, 0), reserved, nil
}

// BlockTracker holds every request to a tracker until until (a
// Retry-After), across replicas.
func (s *Store) BlockTracker(ctx context.Context, tracker string, until time.Time) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO tracker_pace AS p (tracker, next_at, blocked_until) VALUES ($1, $2, $2)
		ON CONFLICT (tracker) DO UPDATE SET next_at = greatest(p.next_at, $2), blocked_until = greatest(p.blocked_until, $2)`, tracker, until)
	if err != nil {
		return fmt.Errorf("block %s: %w", tracker, err)
	}
	return nil
}

// TrackerOfEntry names the tracker of a mapping; ErrNotFound when it is
// gone.
func (s *Store) TrackerOfEntry(ctx context.Context, entryID int64) (string, error) {
	var tracker string
	err := s.db.QueryRow(ctx, `SELECT tracker FROM tracker_entries WHERE id = $1`, entryID).Scan(&tracker)
	if err != nil {
		return "", fmt.Errorf("entry %d: %w", entryID, notFound(err))
	}
	return tracker, nil
}

// TrackerBlockedUntil is when a Retry-After stops holding a tracker; nil
// when none holds it.
func (s *Store) TrackerBlockedUntil(ctx context.Context, tracker string) (*time.Time, error) {
	var until *time.Time
	err := s.db.QueryRow(ctx, `SELECT blocked_until FROM tracker_pace WHERE tracker = $1 AND blocked_until > now()`, tracker).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pace %s: %w", tracker, err)
	}
	return until, nil
}

// TrackerFacts are what an export carries of a Bookmark's trackers.
type TrackerFacts struct {
	Completed bool
	// MAL is the MyAnimeList entry id, "" when unmapped.
	MAL string
}

// TrackerFactsOf returns the tracker facts of a Reader's Bookmarks that
// have any, by Series key.
func (s *Store) TrackerFactsOf(ctx context.Context, readerID int64) (map[string]TrackerFacts, error) {
	rows, err := s.db.Query(ctx, `
		SELECT b.series_key, b.completed_at IS NOT NULL, coalesce(e.entry_id, '')
		FROM bookmarks b LEFT JOIN tracker_entries e
			ON e.reader_id = b.reader_id AND e.series_key = b.series_key AND e.tracker = 'myanimelist'
		WHERE b.reader_id = $1 AND (b.completed_at IS NOT NULL OR e.entry_id IS NOT NULL)`, readerID)
	if err != nil {
		return nil, fmt.Errorf("tracker facts: %w", err)
	}
	out := map[string]TrackerFacts{}
	var key string
	var f TrackerFacts
	_, err = pgx.ForEachRow(rows, []any{&key, &f.Completed, &f.MAL}, func() error { out[key] = f; return nil })
	if err != nil {
		return nil, fmt.Errorf("tracker facts: %w", err)
	}
	return out, nil
}

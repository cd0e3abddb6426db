package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
)

// Works (CONTEXT.md "Work"; migrations/0160_works.up.sql): a Reader's link
// between two or more of their own Bookmarks that are one story. A Work
// stores only who its members are; its Progress and Latest Chapter are
// computed from the members when a list is rendered (package bookmark), so
// nothing here has to be kept in step with a poll or a PUT.
//
// Lock order (docs/adr/0027-works-lock-order.md), on top of docs/adr/0017:
// every change to a Work's members takes the Reader's membership lock
// (lockReaderMembership), then locks the works row(s), in id order
// (lockWork), then the Bookmark rows in key order, and the list version
// rows last at commit (the deferred triggers). The deferred
// dissolve trigger frees the last member at commit; without the Work lock
// two removals from one two-member Work would each wait for the other's
// Bookmark row (40P01).

// WorkRefusal is a Work change that names Bookmarks it cannot take:
// errs.Invalid (422), with the offending keys so a client can mark them.
type WorkRefusal struct {
	Msg  string
	Keys []string
}

func (e *WorkRefusal) Error() string { return e.Msg }

// ErrorCode makes a WorkRefusal an errs.Coder.
func (e *WorkRefusal) ErrorCode() errs.Code { return errs.Invalid }

// ErrNoWork is a Work that does not exist or is another Reader's: the same
// 404 either way, so a Work id says nothing about other Readers.
var ErrNoWork = errs.New(errs.NotFound, "no such work")

// WorkRow is a Work as stored: its id, when it was made, and its members'
// Series keys in key order.
type WorkRow struct {
	ID        int64
	CreatedAt time.Time
	Keys      []string
}

// lockReaderMembership takes the Reader's membership lock, the first step
// of every change to any of their Works' members: a transaction-scoped
// advisory lock on the Reader. The Work rows alone are not enough: which
// Work a Bookmark is in is read before its row is locked, and a link
// committed in between (a new Work, or a Bookmark joining one) leaves a
// transaction holding a Bookmark row a dissolve at another's commit needs,
// while it waits for a row that one holds (40P01; found by
// TestWorkChangesAtOnceNeverDeadlock). One Reader's membership changes are
// rare and short; serialising them costs nothing a Reader would see. A
// PUT of Progress takes no part: it changes no membership and locks only
// its own row.
func (s *Store) lockReaderMembership(ctx context.Context, readerID int64) error {
	if _, err := s.db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('works:' || $1::bigint))`, readerID); err != nil {
		return fmt.Errorf("lock works of reader %d: %w", readerID, err)
	}
	return nil
}

// lockWork locks one of the Reader's Works (after the Reader's membership
// lock); ErrNoWork when it is not theirs or no longer exists.
func (s *Store) lockWork(ctx context.Context, readerID, workID int64) error {
	if err := s.lockReaderMembership(ctx, readerID); err != nil {
		return err
	}
	var id int64
	err := s.db.QueryRow(ctx, `SELECT id FROM works WHERE id = $1 AND reader_id = $2 FOR UPDATE`, workID, readerID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNoWork
	}
	if err != nil {
		return fmt.Errorf("lock work %d: %w", workID, err)
	}
	return nil
}

// lockWorksOf takes the Reader's membership lock, then locks the Works the
// given Bookmarks belong to, in id order.
func (s *Store) lockWorksOf(ctx context.Context, readerID int64, keys []string) error {
	if err := s.lockReaderMembership(ctx, readerID); err != nil {
		return err
	}
	_, err := s.db.Exec(ctx, `
		SELECT w.id FROM works w
		WHERE w.reader_id = $1 AND w.id IN (SELECT work_id FROM bookmarks WHERE reader_id = $1 AND series_key = ANY($2))
		ORDER BY w.id FOR UPDATE`, readerID, keys)
	if err != nil {
		return fmt.Errorf("lock works: %w", err)
	}
	return nil
}

type heldBookmark struct {
	key    string
	kind   string
	workID *int64
}

// lockMembers locks the Reader's Bookmarks on keys in key order and returns
// what it found; keys the Reader does not hold are absent.
func (s *Store) lockMembers(ctx context.Context, readerID int64, keys []string) (map[string]heldBookmark, error) {
	rows, err := s.db.Query(ctx, `
		SELECT b.series_key, s.kind, b.work_id
		FROM bookmarks b JOIN series s ON s.key = b.series_key
		WHERE b.reader_id = $1 AND b.series_key = ANY($2)
		ORDER BY b.series_key FOR UPDATE OF b`, readerID, keys)
	if err != nil {
		return nil, fmt.Errorf("lock bookmarks: %w", err)
	}
	out := map[string]heldBookmark{}
	for rows.Next() {
		var h heldBookmark
		if err := rows.Scan(&h.key, &h.kind, &h.workID); err != nil {
			rows.Close()
			return nil, fmt.Errorf("lock bookmarks: %w", err)
		}
		out[h.key] = h
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock bookmarks: %w", err)
	}
	return out, nil
}

// checkJoin refuses keys the Reader does not hold, keys already in another
// Work than into, and a mix of Libraries (a Work is one story, so one
// Library: manga and its novel adaptation stay two Bookmarks). kind is the
// Library the Work already has, "" for a new Work.
func checkJoin(keys []string, held map[string]heldBookmark, into int64, kind string) (string, error) {
	var missing, taken []string
	for _, k := range keys {
		h, ok := held[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case h.workID != nil && *h.workID != into:
			taken = append(taken, k)
		}
	}
	if len(missing) > 0 {
		return "", &WorkRefusal{Msg: "you hold no bookmark on " + strings.Join(missing, ", "), Keys: missing}
	}
	if len(taken) > 0 {
		return "", &WorkRefusal{Msg: "already in another work: " + strings.Join(taken, ", ") + " (unlink it there first)", Keys: taken}
	}
	for _, k := range keys {
		if kind == "" {
			kind = held[k].kind
		}
		if held[k].kind != kind {
			return "", &WorkRefusal{Msg: fmt.Sprintf("a work is one Library: %s is %s, not %s", k, held[k].kind, kind), Keys: []string{k}}
		}
	}
	return kind, nil
}

// CreateWork links two or more of the Reader's Bookmarks into a new Work.
// A WorkRefusal (422) names keys the Reader does not hold, keys already in
// another Work, or a key of the other Library; fewer than two distinct keys
// is refused too.
func (s *Store) CreateWork(ctx context.Context, readerID int64, keys []string) (WorkRow, error) {
	keys = distinctSorted(keys)
	if len(keys) < 2 {
		return WorkRow{}, &WorkRefusal{Msg: "a work links two or more of your bookmarks: send at least two different keys", Keys: keys}
	}
	var w WorkRow
	err := s.InTx(ctx, func(tx *Store) error {
		// No Work row exists yet; the members' own Works (none, or the
		// refusal below) are locked before their Bookmarks all the same.
		if err := tx.lockWorksOf(ctx, readerID, keys); err != nil {
			return err
		}
		held, err := tx.lockMembers(ctx, readerID, keys)
		if err != nil {
			return err
		}
		if _, err := checkJoin(keys, held, 0, ""); err != nil {
			return err
		}
		if err := tx.db.QueryRow(ctx, `INSERT INTO works (reader_id) VALUES ($1) RETURNING id, created_at`, readerID).
			Scan(&w.ID, &w.CreatedAt); err != nil {
			return fmt.Errorf("create work: %w", err)
		}
		if _, err := tx.db.Exec(ctx, `UPDATE bookmarks SET work_id = $3, updated_at = now() WHERE reader_id = $1 AND series_key = ANY($2)`,
			readerID, keys, w.ID); err != nil {
			return fmt.Errorf("link work %d: %w", w.ID, err)
		}
		w.Keys = keys
		return nil
	})
	if err != nil {
		return WorkRow{}, err
	}
	return w, nil
}

// AddToWork links one more of the Reader's Bookmarks into their Work.
// ErrNoWork for a Work that is not theirs; a WorkRefusal for a key they do
// not hold, one in another Work, or one of the other Library. Adding a
// member already in it changes nothing.
func (s *Store) AddToWork(ctx context.Context, readerID, workID int64, key string) (WorkRow, error) {
	var w WorkRow
	err := s.InTx(ctx, func(tx *Store) error {
		if err := tx.lockWork(ctx, readerID, workID); err != nil {
			return err
		}
		var kind string
		if err := tx.db.QueryRow(ctx, `
			SELECT s.kind FROM bookmarks b JOIN series s ON s.key = b.series_key
			WHERE b.work_id = $1 LIMIT 1`, workID).Scan(&kind); err != nil {
			return fmt.Errorf("kind of work %d: %w", workID, notFound(err))
		}
		held, err := tx.lockMembers(ctx, readerID, []string{key})
		if err != nil {
			return err
		}
		if _, err := checkJoin([]string{key}, held, workID, kind); err != nil {
			return err
		}
		if _, err := tx.db.Exec(ctx, `
			UPDATE bookmarks SET work_id = $3, updated_at = now()
			WHERE reader_id = $1 AND series_key = $2 AND work_id IS DISTINCT FROM $3`, readerID, key, workID); err != nil {
			return fmt.Errorf("link %s to work %d: %w", key, workID, err)
		}
		w, err = tx.work(ctx, readerID, workID)
		return err
	})
	return w, err
}

// RemoveFromWork unlinks one member from the Reader's Work. The
// last-but-one removal dissolves the Work (the trigger, at commit):
// dissolved is then true and the remaining Bookmark is free. ErrNoWork for
// a Work that is not theirs; ErrNotFound for a key that is not a member.
func (s *Store) RemoveFromWork(ctx context.Context, readerID, workID int64, key string) (dissolved bool, err error) {
	err = s.InTx(ctx, func(tx *Store) error {
		if err := tx.lockWork(ctx, readerID, workID); err != nil {
			return err
		}
		tag, err := tx.db.Exec(ctx, `
			UPDATE bookmarks SET work_id = NULL, work_left_at = now(), updated_at = now()
			WHERE reader_id = $1 AND series_key = $2 AND work_id = $3`, readerID, key, workID)
		if err != nil {
			return fmt.Errorf("unlink %s from work %d: %w", key, workID, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%s is not in work %d: %w", key, workID, ErrNotFound)
		}
		var left int
		if err := tx.db.QueryRow(ctx, `SELECT count(*) FROM bookmarks WHERE work_id = $1`, workID).Scan(&left); err != nil {
			return fmt.Errorf("members of work %d: %w", workID, err)
		}
		dissolved = left < 2
		return nil
	})
	return dissolved, err
}

// work reads one of the Reader's Works with its members.
func (s *Store) work(ctx context.Context, readerID, workID int64) (WorkRow, error) {
	w := WorkRow{ID: workID}
	err := s.db.QueryRow(ctx, `
		SELECT w.created_at, coalesce(array_agg(b.series_key ORDER BY b.series_key) FILTER (WHERE b.series_key IS NOT NULL), '{}')
		FROM works w LEFT JOIN bookmarks b ON b.work_id = w.id
		WHERE w.id = $1 AND w.reader_id = $2
		GROUP BY w.id`, workID, readerID).Scan(&w.CreatedAt, &w.Keys)
	if errors.Is(err, pgx.ErrNoRows) {
		return WorkRow{}, ErrNoWork
	}
	if err != nil {
		return WorkRow{}, fmt.Errorf("work %d: %w", workID, err)
	}
	return w, nil
}

// Work returns one of the Reader's Works; ErrNoWork when it is not theirs.
func (s *Store) Work(ctx context.Context, readerID, workID int64) (WorkRow, error) {
	return s.work(ctx, readerID, workID)
}

// ListWorks returns the Reader's Works, oldest first, with their members.
// The members' Bookmarks (and so the Works' Progress and Latest Chapter)
// come from ListBookmarks: package bookmark joins the two.
func (s *Store) ListWorks(ctx context.Context, readerID int64) ([]WorkRow, error) {
	rows, err := s.db.Query(ctx, `
		SELECT w.id, w.created_at, array_agg(b.series_key ORDER BY b.series_key)
		FROM works w JOIN bookmarks b ON b.work_id = w.id
		WHERE w.reader_id = $1
		GROUP BY w.id ORDER BY w.created_at, w.id`, readerID)
	if err != nil {
		return nil, fmt.Errorf("list works: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkRow, error) {
		var w WorkRow
		err := row.Scan(&w.ID, &w.CreatedAt, &w.Keys)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("list works: %w", err)
	}
	return out, nil
}

// WorkMembers returns the Bookmarks of one of the Reader's Works (none when
// it is not theirs), as ListBookmarks shows them.
func (s *Store) WorkMembers(ctx context.Context, readerID, workID int64) ([]Bookmark, error) {
	rows, err := s.db.Query(ctx, `
		SELECT `+bookmarkCols+`
		FROM bookmarks b JOIN series s ON s.key = b.series_key
		WHERE b.reader_id = $1 AND b.work_id = $2
		ORDER BY b.created_at, s.key`, readerID, workID)
	if err != nil {
		return nil, fmt.Errorf("members of work %d: %w", workID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Bookmark, error) { return scanBookmark(row) })
	if err != nil {
		return nil, fmt.Errorf("members of work %d: %w", workID, err)
	}
	return out, nil
}

// DismissPair records that two Series the suggestions paired are not one
// story for this Reader: the pair is never suggested to them again.
func (s *Store) DismissPair(ctx context.Context, readerID int64, a, b string) error {
	if a == b {
		return &WorkRefusal{Msg: "a pair is two different keys", Keys: []string{a}}
	}
	if b < a {
		a, b = b, a
	}
	if _, err := s.db.Exec(ctx, `INSERT INTO work_dismissals (reader_id, key_a, key_b) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		readerID, a, b); err != nil {
		return fmt.Errorf("dismiss %s / %s: %w", a, b, err)
	}
	return nil
}

// DismissedPairs returns the pairs the Reader dismissed, each as
// "key_a\x00key_b" with key_a < key_b.
func (s *Store) DismissedPairs(ctx context.Context, readerID int64) (map[string]bool, error) {
	rows, err := s.db.Query(ctx, `SELECT key_a, key_b FROM work_dismissals WHERE reader_id = $1`, readerID)
	if err != nil {
		return nil, fmt.Errorf("dismissed pairs: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			return nil, fmt.Errorf("dismissed pairs: %w", err)
		}
		out[PairKey(a, b)] = true
	}
	return out, rows.Err()
}

// PairKey is the one name of an unordered pair of Series keys.
func PairKey(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + "\x00" + b
}

// StoryFacts are what the suggestions compare of one Series a Reader holds.
type StoryFacts struct {
	Key, Site, Kind, Title, SeriesURL string
	AltTitles                         []string
	// TrackerIDs are "tracker:entry" of the entries the Series is known by:
	// read from its page by the poll, or the Reader's own confirmed entry.
	TrackerIDs []string
	WorkID     int64
}

// StoryFactsOf returns the facts of every Series the Reader holds, in key
// order.
func (s *Store) StoryFactsOf(ctx context.Context, readerID int64) ([]StoryFacts, error) {
	rows, err := s.db.Query(ctx, `
		SELECT s.key, s.site, s.kind, CASE WHEN s.title <> '' THEN s.title ELSE b.title_hint END, s.series_url,
		       s.alt_titles, coalesce(b.work_id, 0),
		       ARRAY(SELECT tracker || ':' || entry_id FROM series_tracker_ids WHERE series_key = s.key
		             UNION SELECT tracker || ':' || entry_id FROM tracker_entries e
		                   WHERE e.reader_id = b.reader_id AND e.series_key = s.key AND e.entry_id <> '')
		FROM bookmarks b JOIN series s ON s.key = b.series_key
		WHERE b.reader_id = $1
		ORDER BY s.key`, readerID)
	if err != nil {
		return nil, fmt.Errorf("story facts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (StoryFacts, error) {
		var f StoryFacts
		err := row.Scan(&f.Key, &f.Site, &f.Kind, &f.Title, &f.SeriesURL, &f.AltTitles, &f.WorkID, &f.TrackerIDs)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("story facts: %w", err)
	}
	return out, nil
}

// SetAltTitles stores the alternative titles a poll read for a Series (the
// registry's AltTitles question). Not a fact a Bookmark object shows, so
// the list version does not move.
func (s *Store) SetAltTitles(ctx context.Context, key string, titles []string) error {
	if titles == nil {
		titles = []string{}
	}
	if _, err := s.db.Exec(ctx, `UPDATE series SET alt_titles = $2 WHERE key = $1 AND alt_titles IS DISTINCT FROM $2`, key, titles); err != nil {
		return fmt.Errorf("alt titles of %s: %w", key, err)
	}
	return nil
}

// ProgressMove is one reviewed move of Progress from a Bookmark (on a Site
// that is dying, say) to another of the Reader's Bookmarks of the same
// story.
type ProgressMove struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// MoveProgress carries Progress across in one transaction, as the Reader
// reviewed it ("Move these Bookmarks to another Site"): each To takes its
// From's chapter label and number when they are further than its own (the
// chapter URL stays To's own, since a URL of another Site is no chapter of
// this one), and From and To are linked into one Work (From's Work when it
// has one). Nothing is moved unless every pair is valid: a WorkRefusal
// names the keys that are not.
func (s *Store) MoveProgress(ctx context.Context, readerID int64, moves []ProgressMove) error {
	if len(moves) == 0 {
		return &WorkRefusal{Msg: "nothing to move: send one or more {\"from\", \"to\"} pairs"}
	}
	var keys []string
	for _, m := range moves {
		if m.From == m.To {
			return &WorkRefusal{Msg: "a move goes to another bookmark: " + m.From, Keys: []string{m.From}}
		}
		keys = append(keys, m.From, m.To)
	}
	keys = distinctSorted(keys)
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.lockWorksOf(ctx, readerID, keys); err != nil {
			return err
		}
		held, err := tx.lockMembers(ctx, readerID, keys)
		if err != nil {
			return err
		}
		var missing []string
		for _, k := range keys {
			if _, ok := held[k]; !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return &WorkRefusal{Msg: "you hold no bookmark on " + strings.Join(missing, ", "), Keys: missing}
		}
		for _, m := range moves {
			f, t := held[m.From], held[m.To]
			if f.kind != t.kind {
				return &WorkRefusal{Msg: fmt.Sprintf("%s is %s and %s is %s: a move stays in one Library", m.From, f.kind, m.To, t.kind), Keys: []string{m.To}}
			}
			if f.workID != nil && t.workID != nil && *f.workID != *t.workID {
				return &WorkRefusal{Msg: m.To + " is already in another work", Keys: []string{m.To}}
			}
			if _, err := tx.db.Exec(ctx, `
				UPDATE bookmarks t SET chapter = f.chapter, chapter_number = f.chapter_number, chapter_url = '',
				       progress_at = now(), updated_at = now()
				FROM bookmarks f
				WHERE t.reader_id = $1 AND t.series_key = $3 AND f.reader_id = $1 AND f.series_key = $2
				  AND f.chapter <> ''
				  AND (t.chapter = '' OR (f.chapter_number IS NOT NULL AND (t.chapter_number IS NULL OR f.chapter_number > t.chapter_number)))`,
				readerID, m.From, m.To); err != nil {
				return fmt.Errorf("move progress %s → %s: %w", m.From, m.To, err)
			}
			work := f.workID
			if work == nil {
				work = t.workID
			}
			if work == nil {
				var id int64
				if err := tx.db.QueryRow(ctx, `INSERT INTO works (reader_id) VALUES ($1) RETURNING id`, readerID).Scan(&id); err != nil {
					return fmt.Errorf("create work: %w", err)
				}
				work = &id
			}
			if _, err := tx.db.Exec(ctx, `
				UPDATE bookmarks SET work_id = $3, updated_at = now()
				WHERE reader_id = $1 AND series_key = ANY($2) AND work_id IS DISTINCT FROM $3`,
				readerID, []string{m.From, m.To}, *work); err != nil {
				return fmt.Errorf("link %s and %s: %w", m.From, m.To, err)
			}
			f.workID, t.workID = work, work
			held[m.From], held[m.To] = f, t
		}
		return nil
	})
}

func distinctSorted(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out)
}

// SeriesStoryFacts returns what the suggestions compare of one Series,
// held by the Reader or not (the panel's offer on a Series page they do
// not hold yet); ErrNotFound when Lectern has no such Series.
func (s *Store) SeriesStoryFacts(ctx context.Context, key string) (StoryFacts, error) {
	f := StoryFacts{Key: key}
	err := s.db.QueryRow(ctx, `
		SELECT s.site, s.kind, s.title, s.series_url, s.alt_titles,
		       ARRAY(SELECT tracker || ':' || entry_id FROM series_tracker_ids WHERE series_key = s.key)
		FROM series s WHERE s.key = $1`, key).Scan(&f.Site, &f.Kind, &f.Title, &f.SeriesURL, &f.AltTitles, &f.TrackerIDs)
	return f, notFound(err)
}

// LockReaderWorks locks every Work of the Reader, in id order: the first
// step of a transaction that may change any of their members (an import,
// which writes Bookmarks before it knows which Works its labels touch).
func (s *Store) LockReaderWorks(ctx context.Context, readerID int64) error {
	if err := s.lockReaderMembership(ctx, readerID); err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, `SELECT id FROM works WHERE reader_id = $1 ORDER BY id FOR UPDATE`, readerID); err != nil {
		return fmt.Errorf("lock works: %w", err)
	}
	return nil
}

// ImportWorks links the Series keys of each group (an import's entries
// sharing one Work label) into one Work, inside the import's transaction,
// and returns how many Works it made or added to. The Reader's Works are
// locked first (the lock order), then the Bookmarks in key order. A group
// whose Bookmarks are already in one Work adds the rest to it; keys in a
// different Work than the group's, or of another Library, are left as they
// are, since an import never breaks a link the Reader made; a group of
// fewer than two keys links nothing. The caller locked the Reader's Works
// (LockReaderWorks) before any Bookmark; they are locked here again, which
// costs nothing when held.
func (s *Store) ImportWorks(ctx context.Context, readerID int64, groups [][]string) (int, error) {
	if s.tx == nil {
		return 0, fmt.Errorf("import works: not in a transaction")
	}
	var all []string
	for _, g := range groups {
		all = append(all, g...)
	}
	if len(distinctSorted(all)) < 2 {
		return 0, nil
	}
	if err := s.LockReaderWorks(ctx, readerID); err != nil {
		return 0, err
	}
	held, err := s.lockMembers(ctx, readerID, distinctSorted(all))
	if err != nil {
		return 0, err
	}
	linked := 0
	for _, g := range groups {
		keys := distinctSorted(g)
		var kind string
		var work *int64
		var join []string
		for _, k := range keys {
			h, ok := held[k]
			if !ok {
				continue
			}
			if kind == "" {
				kind = h.kind
			}
			if h.kind != kind {
				continue
			}
			if h.workID != nil && work == nil {
				work = h.workID
			}
			join = append(join, k)
		}
		var free []string
		for _, k := range join {
			if w := held[k].workID; w == nil || (work != nil && *w == *work) {
				free = append(free, k)
			}
		}
		if len(free) < 2 {
			continue
		}
		if work == nil {
			var id int64
			if err := s.db.QueryRow(ctx, `INSERT INTO works (reader_id) VALUES ($1) RETURNING id`, readerID).Scan(&id); err != nil {
				return 0, fmt.Errorf("import works: %w", err)
			}
			work = &id
		}
		tag, err := s.db.Exec(ctx, `
			UPDATE bookmarks SET work_id = $3, updated_at = now()
			WHERE reader_id = $1 AND series_key = ANY($2) AND work_id IS DISTINCT FROM $3`, readerID, free, *work)
		if err != nil {
			return 0, fmt.Errorf("import works: %w", err)
		}
		for _, k := range free {
			h := held[k]
			h.workID = work
			held[k] = h
		}
		if tag.RowsAffected() > 0 {
			linked++
		}
	}
	return linked, nil
}

package portability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Options steer one import.
type Options struct {
	// DryRun runs the whole import in its transaction and rolls it back:
	// the report says exactly what would happen.
	DryRun bool
	// SkipInvalid imports the good lines when some are bad. Without it, a
	// single bad line means nothing is imported.
	SkipInvalid bool
}

// Action is what an import does with one Series.
type Action string

// The actions.
const (
	ActionCreate Action = "create" // a new Bookmark
	ActionUpdate Action = "update" // the file's Progress is further than the Bookmark's
	ActionKeep   Action = "keep"   // the Bookmark's Progress is as far or further
)

// Item is one Series an import touches, after duplicates are merged.
type Item struct {
	Line          int      `json:"line"`
	Key           string   `json:"key"`
	Site          string   `json:"site"`
	SeriesURL     string   `json:"series_url"`
	Title         string   `json:"title"`
	Chapter       string   `json:"chapter"`
	ChapterNumber *float64 `json:"chapter_number"`
	Action        Action   `json:"action"`
	NewSeries     bool     `json:"new_series"`
	// MergedLines are the other lines naming the same Series, folded in.
	MergedLines []int `json:"merged_lines,omitempty"`
}

// Report is what an import did, or would do.
type Report struct {
	Format  Format `json:"format"`
	DryRun  bool   `json:"dry_run"`
	Applied bool   `json:"applied"` // true when the Bookmarks were written
	// Refused is true when bad lines stopped the import: nothing was
	// written, and the counts say what the good lines would have done.
	Refused bool `json:"refused"`
	Entries int  `json:"entries"` // lines that named something

	Created       int `json:"created"`
	Updated       int `json:"updated"`
	Kept          int `json:"kept"`
	Merged        int `json:"merged"` // duplicate lines folded into another
	SeriesCreated int `json:"series_created"`
	Skipped       int `json:"skipped"` // bad lines left out under SkipInvalid

	Errors []LineError `json:"errors"`
	Items  []Item      `json:"items"`
	// Unplaced are entries no supported Site could be found for (a
	// tracker's entry Lectern knows no page of): listed, never written,
	// and no reason to refuse the rest.
	Unplaced []Unplaced `json:"unplaced"`
	// TrackersMapped counts tracker entries the file carried that became
	// mappings of the Bookmarks.
	TrackersMapped int `json:"trackers_mapped"`
	// WorksLinked counts the Works the file's labels made or added to.
	WorksLinked int `json:"works_linked"`
	// Millis is how long the transaction took.
	Millis int64 `json:"millis"`
}

// Unplaced is an entry that names no Series Lectern can place.
type Unplaced struct {
	Line     int               `json:"line"`
	Title    string            `json:"title"`
	Trackers map[string]string `json:"trackers,omitempty"`
	Reason   string            `json:"reason"`
}

// Importer imports Bookmarks through the Bookmark service.
type Importer struct {
	Bookmarks *bookmark.Service
	Logger    *slog.Logger
	// Now is the clock that bounds times in a file; nil means time.Now.
	Now func() time.Time
}

// BatchAcquirer is an Acquirer that queues many Acquisitions in one
// statement; an import uses it when the Library's Acquirer has it (one
// River insert per Series is most of a large import's time).
type BatchAcquirer interface {
	AcquireMany(ctx context.Context, tx *store.Store, keys []string) error
}

// errRollback ends a dry run's transaction.
var errRollback = errors.New("dry run: rolled back")

// Import reads body as format f and records its Bookmarks for readerID. A
// file that cannot be read as f at all is an error (ErrUnreadable,
// ErrTooMany); bad lines are in the report, and unless opts.SkipInvalid
// they stop the import before anything is written.
func (im *Importer) Import(ctx context.Context, readerID int64, f Format, body []byte, opts Options) (Report, error) {
	entries, bad, err := im.parse(f, body)
	if err != nil {
		return Report{Format: f, DryRun: opts.DryRun, Errors: []LineError{}, Items: []Item{}, Unplaced: []Unplaced{}}, err
	}
	return im.run(ctx, readerID, f, entries, bad, opts)
}

// run places, checks and applies entries read by a parser or built by a
// caller (ImportEntries).
func (im *Importer) run(ctx context.Context, readerID int64, f Format, entries []entry, bad []LineError, opts Options) (Report, error) {
	rep := Report{Format: f, DryRun: opts.DryRun, Errors: []LineError{}, Items: []Item{}, Unplaced: []Unplaced{}}
	rep.Entries = len(entries) + len(bad)
	entries, unplaced, err := im.place(ctx, readerID, entries)
	if err != nil {
		return rep, err
	}
	rep.Unplaced = unplaced
	rep.Errors = append(rep.Errors, bad...)

	items, rows, trackers, groups, lineErrs := im.check(entries)
	rep.Errors = append(rep.Errors, lineErrs...)
	sort.Slice(rep.Errors, func(i, j int) bool { return rep.Errors[i].Line < rep.Errors[j].Line })
	for _, it := range items {
		rep.Merged += len(it.MergedLines)
	}
	// Bad lines without SkipInvalid refuse the import, but the good lines
	// still run through the transaction, rolled back, so the report shows
	// what they would do.
	rep.Refused = len(rep.Errors) > 0 && !opts.SkipInvalid
	if len(rep.Errors) > 0 && opts.SkipInvalid {
		rep.Skipped = len(rep.Errors)
	}
	rollback := opts.DryRun || rep.Refused

	start := time.Now()
	err = im.Bookmarks.Store.InTx(ctx, func(tx *store.Store) error {
		// Works first, Bookmarks after (docs/adr/0027): the labels may
		// link any of the Reader's Bookmarks.
		if err := tx.LockReaderWorks(ctx, readerID); err != nil {
			return err
		}
		if err := im.apply(ctx, tx, readerID, items, rows, &rep); err != nil {
			return err
		}
		if rep.TrackersMapped, err = tx.ImportTrackerEntries(ctx, readerID, trackers); err != nil {
			return err
		}
		if rep.WorksLinked, err = tx.ImportWorks(ctx, readerID, groups.groups()); err != nil {
			return err
		}
		if im.Bookmarks.Sync != nil {
			// As a PUT does: the trackers hear of the Progress written, the
			// mappings the file carried included.
			var recorded []string
			for _, it := range rep.Items {
				if it.Action != ActionKeep && it.Chapter != "" {
					recorded = append(recorded, it.Key)
				}
			}
			if err := im.Bookmarks.Sync.Recorded(ctx, tx, readerID, recorded); err != nil {
				return err
			}
		}
		if rollback {
			return errRollback
		}
		return nil
	})
	rep.Millis = time.Since(start).Milliseconds()
	if err != nil && !errors.Is(err, errRollback) {
		return rep, fmt.Errorf("import: %w", err)
	}
	rep.Applied = !rollback
	if rep.Applied {
		im.log().InfoContext(ctx, "bookmarks imported", "reader", readerID, "format", string(f),
			"created", rep.Created, "updated", rep.Updated, "kept", rep.Kept, "series_created", rep.SeriesCreated,
			"skipped", rep.Skipped, "unplaced", len(rep.Unplaced), "trackers_mapped", rep.TrackersMapped, "ms", rep.Millis)
	}
	return rep, nil
}

// apply writes the checked rows, merging with the Reader's Bookmarks, and
// queues the Acquisition of each new Series inside the transaction.
func (im *Importer) apply(ctx context.Context, tx *store.Store, readerID int64, items []Item, rows []store.ImportRow, rep *Report) error {
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.Series.Key
	}
	have, err := tx.LockReaderBookmarks(ctx, readerID, keys)
	if err != nil {
		return err
	}
	write := make([]store.ImportRow, 0, len(rows))
	for i, r := range rows {
		old, exists := have[r.Series.Key]
		switch {
		case !exists:
			items[i].Action = ActionCreate
			rep.Created++
		case r.Progress != nil && further(r.Progress, progressOf(old)):
			items[i].Action = ActionUpdate
			rep.Updated++
		default:
			items[i].Action = ActionKeep
			rep.Kept++
			continue
		}
		write = append(write, r)
	}
	created, err := tx.ImportBookmarks(ctx, readerID, write)
	if err != nil {
		return err
	}
	isNew := make(map[string]bool, len(created))
	for _, k := range created {
		isNew[k] = true
	}
	// The same Acquisition a PUT queues, in the same transaction: a Series
	// never exists without its first poll on the way.
	if many, ok := im.Bookmarks.Acquire.(BatchAcquirer); ok && len(created) > 0 {
		if err := many.AcquireMany(ctx, tx, created); err != nil {
			return fmt.Errorf("queue acquisitions: %w", err)
		}
	} else {
		for _, k := range created {
			if err := im.Bookmarks.Acquire.Acquire(ctx, tx, k); err != nil {
				return fmt.Errorf("queue acquisition of %s: %w", k, err)
			}
		}
	}
	rep.SeriesCreated = len(created)
	for i := range items {
		items[i].NewSeries = isNew[items[i].Key]
	}
	rep.Items = items
	return nil
}

func progressOf(b store.Bookmark) *store.Progress {
	if b.Chapter == "" {
		return nil
	}
	return &store.Progress{Chapter: b.Chapter, ChapterNumber: b.ChapterNumber, ChapterURL: b.ChapterURL}
}

// further reports whether Progress a should replace b: numerically when
// both have numbers (12.5 is further than 12, 10 further than 9); a number
// is further than none; without numbers the one already there stays.
func further(a, b *store.Progress) bool {
	switch {
	case a == nil:
		return false
	case b == nil:
		return true
	case a.ChapterNumber != nil && b.ChapterNumber != nil:
		return *a.ChapterNumber > *b.ChapterNumber
	case a.ChapterNumber != nil:
		return true
	}
	return false
}

// check validates every entry against the registry and merges duplicates,
// returning one Item and one row per Series, in file order, and the lines
// that failed, and the Series keys of each Work label.
func (im *Importer) check(entries []entry) ([]Item, []store.ImportRow, []store.NewTrackerEntry, *workGroups, []LineError) {
	var works workGroups
	var items []Item
	var rows []store.ImportRow
	var trackers []store.NewTrackerEntry
	var bad []LineError
	at := map[string]int{}
	mapped := map[[2]string]bool{}
	for _, e := range entries {
		row, err := im.validate(e)
		if err != nil {
			bad = append(bad, lineErr(e, "%v", err))
			continue
		}
		works.add(e.Work, row.Series.Key)
		for t, id := range e.Trackers {
			if k := [2]string{row.Series.Key, t}; !mapped[k] {
				mapped[k] = true
				trackers = append(trackers, store.NewTrackerEntry{SeriesKey: row.Series.Key, Tracker: t, EntryID: id, Title: e.Title})
			}
		}
		if i, dup := at[row.Series.Key]; dup {
			items[i].MergedLines = append(items[i].MergedLines, e.Line)
			if further(row.Progress, rows[i].Progress) {
				rows[i].Progress, rows[i].ProgressAt = row.Progress, row.ProgressAt
				items[i].Chapter, items[i].ChapterNumber = row.Progress.Chapter, row.Progress.ChapterNumber
			}
			if rows[i].TitleHint == "" {
				rows[i].TitleHint, items[i].Title = row.TitleHint, row.TitleHint
			}
			if row.CreatedAt != nil && (rows[i].CreatedAt == nil || row.CreatedAt.Before(*rows[i].CreatedAt)) {
				rows[i].CreatedAt = row.CreatedAt
			}
			continue
		}
		at[row.Series.Key] = len(items)
		it := Item{Line: e.Line, Key: row.Series.Key, Site: row.Series.Site, SeriesURL: row.Series.SeriesURL, Title: row.TitleHint}
		if row.Progress != nil {
			it.Chapter, it.ChapterNumber = row.Progress.Chapter, row.Progress.ChapterNumber
		}
		items = append(items, it)
		rows = append(rows, row)
	}
	sort.Slice(trackers, func(i, j int) bool {
		a, b := trackers[i], trackers[j]
		return a.SeriesKey < b.SeriesKey || a.SeriesKey == b.SeriesKey && a.Tracker < b.Tracker
	})
	return items, rows, trackers, &works, bad
}

// workGroups collects the Series keys of each Work label, in the order the
// labels first appear, for store.ImportWorks.
type workGroups struct {
	order   []string
	byLabel map[string][]string
}

func (g *workGroups) add(label, key string) {
	if label == "" {
		return
	}
	if g.byLabel == nil {
		g.byLabel = map[string][]string{}
	}
	if _, seen := g.byLabel[label]; !seen {
		g.order = append(g.order, label)
	}
	g.byLabel[label] = append(g.byLabel[label], key)
}

func (g *workGroups) groups() [][]string {
	out := make([][]string, 0, len(g.order))
	for _, label := range g.order {
		out = append(out, g.byLabel[label])
	}
	return out
}

// validate checks one entry as a PUT is checked: a Site the registry
// knows, a URL it resolves, a key that matches, Progress within bounds and
// a chapter URL on the Site's own hosts.
func (im *Importer) validate(e entry) (store.ImportRow, error) {
	var row store.ImportRow
	for name, v := range map[string]string{"series URL": e.URL, "site": e.Site, "key": e.Key, "title": e.Title,
		"chapter": e.Chapter, "chapter URL": e.ChapterURL} {
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return row, fmt.Errorf("%s must be text without NUL characters", name)
		}
	}
	if strings.TrimSpace(e.URL) == "" {
		return row, errors.New("no series URL")
	}
	var ref latest.Ref
	var site *latest.Site
	var err error
	if e.Site != "" {
		var ok bool
		if site, ok = im.Bookmarks.Registry.Lookup(e.Site); !ok {
			return row, fmt.Errorf("unknown site %q", e.Site)
		}
		ref, err = site.ResolveOn(e.URL)
	} else {
		ref, err = im.Bookmarks.Registry.Resolve(e.URL)
		if err == nil {
			site, _ = im.Bookmarks.Registry.Lookup(ref.Site)
		}
	}
	if err != nil {
		return row, fmt.Errorf("%s: %w", shorten(e.URL), err)
	}
	if e.Key != "" && e.Key != ref.Key {
		return row, fmt.Errorf("key %q does not match the series URL: expected %q", e.Key, ref.Key)
	}
	row.Series = store.NewSeries{Key: ref.Key, Site: ref.Site, Kind: string(ref.Kind), SeriesURL: ref.SeriesURL}

	title := strings.TrimSpace(e.Title)
	if utf8.RuneCountInString(title) > bookmark.MaxLabel {
		return row, fmt.Errorf("title is longer than %d characters", bookmark.MaxLabel)
	}
	row.TitleHint = title

	now := im.now()
	if e.CreatedAt != nil {
		if e.CreatedAt.After(now.Add(24 * time.Hour)) {
			return row, errors.New("created_at is in the future")
		}
		row.CreatedAt = e.CreatedAt
	}

	chapter := strings.TrimSpace(e.Chapter)
	if chapter == "" {
		if e.ChapterURL != "" || e.ChapterNumber != nil {
			return row, errors.New("a chapter number or URL needs a chapter label")
		}
		return row, nil
	}
	if utf8.RuneCountInString(chapter) > bookmark.MaxLabel {
		return row, fmt.Errorf("chapter is longer than %d characters", bookmark.MaxLabel)
	}
	p := &store.Progress{Chapter: chapter, ChapterNumber: e.ChapterNumber}
	if !e.NumberGiven {
		if n, ok := latest.ParseChapterNumber(chapter); ok {
			p.ChapterNumber = &n
		}
	}
	if n := p.ChapterNumber; n != nil && (math.IsNaN(*n) || math.IsInf(*n, 0) || *n < 0 || *n >= 1e7) {
		return row, errors.New("chapter_number must be a number from 0 to 9999999")
	}
	if e.ChapterURL != "" {
		u, err := bookmark.SiteURL(site, e.ChapterURL)
		if err != nil {
			return row, fmt.Errorf("chapter URL: %w", err)
		}
		p.ChapterURL = u
	}
	if e.ProgressAt != nil {
		if e.ProgressAt.After(now.Add(24 * time.Hour)) {
			return row, errors.New("progress_at is in the future")
		}
		row.ProgressAt = e.ProgressAt
	}
	row.Progress = p
	return row, nil
}

func (im *Importer) now() time.Time {
	if im.Now != nil {
		return im.Now()
	}
	return time.Now()
}

func (im *Importer) log() *slog.Logger {
	if im.Logger != nil {
		return im.Logger
	}
	return slog.Default()
}

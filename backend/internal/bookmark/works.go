package bookmark

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Works (CONTEXT.md "Work"): a Reader's link between two or more of their
// own Bookmarks that are one story. The store keeps only the membership;
// the Work's Progress and Latest Chapter are computed here, at render, from
// the members' own rows, so a PUT or a poll of one member needs no second
// write to keep the Work in step (docs/adr/0026-work-progress-at-render.md).

// WorkID is a Work's id as the wire carries it (the `work` field, a Work's
// `id`): an opaque string.
func WorkID(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// ParseWorkID reads a wire Work id; store.ErrNoWork for anything that is
// not one (a 404, like another Reader's Work).
func ParseWorkID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, store.ErrNoWork
	}
	return id, nil
}

// workView is a Work's Progress and Latest Chapter as computed from its
// members.
type workView struct {
	progress *store.Bookmark // the member whose Progress is the Work's; nil when none has any
	latest   *store.Bookmark // the member whose Latest Chapter is the Work's; nil when none has one
	id       string          // the wire id, made once per Work
}

// viewOf computes a Work's Progress and Latest Chapter (ADR 0026):
//   - Progress: the furthest numbered Progress of any member (on a tie, the
//     most recent record); only when no member has a numbered Progress, the
//     most recent record of any.
//   - Latest Chapter: the highest number across members; on a tie, the Site
//     that had it first (earliest latest_at), so the Work's newest chapter
//     does not hop to a Site that only caught up. Without numbers, the most
//     recently found.
func viewOf(members []store.Bookmark) workView {
	var v workView
	for i := range members {
		v.add(&members[i])
	}
	return v
}

// add takes one member into the view.
func (v *workView) add(m *store.Bookmark) {
	if m.Chapter != "" && furtherProgress(m, v.progress) {
		v.progress = m
	}
	if (m.LatestLabel != "" || m.LatestURL != "") && newerLatest(m, v.latest) {
		v.latest = m
	}
}

func furtherProgress(m, best *store.Bookmark) bool {
	if best == nil {
		return true
	}
	switch {
	case m.ChapterNumber != nil && best.ChapterNumber == nil:
		return true
	case m.ChapterNumber == nil && best.ChapterNumber != nil:
		return false
	case m.ChapterNumber != nil && *m.ChapterNumber != *best.ChapterNumber:
		return *m.ChapterNumber > *best.ChapterNumber
	}
	return later(m.ProgressAt, best.ProgressAt)
}

func newerLatest(m, best *store.Bookmark) bool {
	if best == nil {
		return true
	}
	switch {
	case m.LatestNumber != nil && best.LatestNumber == nil:
		return true
	case m.LatestNumber == nil && best.LatestNumber != nil:
		return false
	case m.LatestNumber != nil && *m.LatestNumber != *best.LatestNumber:
		return *m.LatestNumber > *best.LatestNumber
	case m.LatestNumber != nil:
		// The same number on two Sites: the one that had it first.
		return later(best.LatestAt, m.LatestAt)
	}
	return later(m.LatestAt, best.LatestAt)
}

// later reports a after b, a missing time being earliest.
func later(a, b *time.Time) bool {
	if a == nil {
		return false
	}
	return b == nil || a.After(*b)
}

// withWork fills a member's work_* fields and its unread from the Work's
// view: unread compares this Site's Latest Chapter with the Work's
// Progress, so reading 120 on one Site marks another Site's 120 read.
// Where either side has no number the comparison stays the member's own
// (a URL of another Site says nothing about this one's chapters).
func withWork(w Bookmark, b store.Bookmark, v workView) Bookmark {
	fillWork(&w, &b, &v)
	return w
}

func fillWork(w *Bookmark, b *store.Bookmark, v *workView) {
	w.Work = v.id
	if w.Work == "" {
		w.Work = WorkID(b.WorkID)
	}
	if p := v.progress; p != nil {
		w.WorkChapter, w.WorkChapterNumber, w.WorkChapterURL, w.WorkProgressSite = p.Chapter, p.ChapterNumber, p.ChapterURL, p.Site
		if b.LatestNumber != nil && p.ChapterNumber != nil {
			w.Unread = *b.LatestNumber > *p.ChapterNumber
		}
	}
	if l := v.latest; l != nil {
		w.WorkLatestChapter, w.WorkLatestChapterNumber, w.WorkLatestChapterURL, w.WorkLatestSite = l.LatestLabel, l.LatestNumber, l.LatestURL, l.Site
	}
}

// Render renders a Reader's stored Bookmarks for the wire, in their order,
// each member of a Work with the Work's fields. rows must hold every member
// of each Work among them (a whole list, or one Library's: a Work is one
// Library).
func (l *Service) Render(rows []store.Bookmark) []Bookmark {
	out := make([]Bookmark, len(rows))
	// One pass builds each Work's view from pointers into rows (no copies
	// of the members), a second fills the members' fields.
	var views map[int64]*workView
	for i := range rows {
		out[i] = l.Wire(rows[i])
		if id := rows[i].WorkID; id != 0 {
			if views == nil {
				views = map[int64]*workView{}
			}
			v := views[id]
			if v == nil {
				v = &workView{id: WorkID(id)}
				views[id] = v
			}
			v.add(&rows[i])
		}
	}
	if views == nil {
		return out
	}
	for i := range rows {
		if id := rows[i].WorkID; id != 0 {
			fillWork(&out[i], &rows[i], views[id])
		}
	}
	return out
}

// wireOne renders one Bookmark, reading its Work's members when it has one.
func (l *Service) wireOne(ctx context.Context, b store.Bookmark) (Bookmark, error) {
	if b.WorkID == 0 {
		return l.Wire(b), nil
	}
	ms, err := l.Store.WorkMembers(ctx, b.ReaderID, b.WorkID)
	if err != nil {
		return Bookmark{}, err
	}
	return withWork(l.Wire(b), b, viewOf(ms)), nil
}

// Work is the wire object of a Work (GET /api/works, POST /api/works): its
// id (the members' `work`), its members' keys, and what a library card of
// it shows. Fields are only ever added.
type Work struct {
	ID    string   `json:"id"`
	Keys  []string `json:"keys"`
	Kind  string   `json:"kind"`
	Title string   `json:"title"`
	// Cover is the first member's (oldest Bookmark first) that has one.
	Cover string `json:"cover"`
	// The Work's Progress, and the Site and URL it was read on.
	Chapter       string   `json:"chapter"`
	ChapterNumber *float64 `json:"chapter_number"`
	ChapterURL    string   `json:"chapter_url"`
	ProgressSite  string   `json:"progress_site"`
	// The Work's Latest Chapter and the Site that has it.
	LatestChapter       string   `json:"latest_chapter"`
	LatestChapterNumber *float64 `json:"latest_chapter_number"`
	LatestChapterURL    string   `json:"latest_chapter_url"`
	LatestSite          string   `json:"latest_site"`
	// Unread: some member's Site has a chapter beyond the Work's Progress.
	Unread    bool      `json:"unread"`
	CreatedAt time.Time `json:"created_at"`
	// Members are the Bookmark objects, oldest Bookmark first, each with
	// its own Site's Latest Chapter and Continue link.
	Members []Bookmark `json:"members"`
}

func (l *Service) workWire(w store.WorkRow, members []store.Bookmark) Work {
	v := viewOf(members)
	out := Work{ID: WorkID(w.ID), Keys: w.Keys, CreatedAt: w.CreatedAt.UTC(), Members: make([]Bookmark, 0, len(members))}
	if out.Keys == nil {
		out.Keys = []string{}
	}
	for _, m := range members {
		mw := withWork(l.Wire(m), m, v)
		out.Members = append(out.Members, mw)
		out.Unread = out.Unread || mw.Unread
		if out.Title == "" {
			out.Title, out.Kind = m.Title, m.Kind
		}
		if out.Cover == "" {
			out.Cover = cover.URL(l.BaseURL, m.CoverAddress, m.CoverType)
		}
	}
	if p := v.progress; p != nil {
		out.Chapter, out.ChapterNumber, out.ChapterURL, out.ProgressSite = p.Chapter, p.ChapterNumber, p.ChapterURL, p.Site
	}
	if lt := v.latest; lt != nil {
		out.LatestChapter, out.LatestChapterNumber, out.LatestChapterURL, out.LatestSite = lt.LatestLabel, lt.LatestNumber, lt.LatestURL, lt.Site
	}
	return out
}

// Works lists the Reader's Works, oldest first, each with its members
// rendered as Bookmark objects: what the web library draws one card per
// Work from.
func (l *Service) Works(ctx context.Context, readerID int64) ([]Work, error) {
	works, err := l.Store.ListWorks(ctx, readerID)
	if err != nil || len(works) == 0 {
		return []Work{}, err
	}
	rows, err := l.Store.ListBookmarks(ctx, readerID, "")
	if err != nil {
		return nil, err
	}
	members := map[int64][]store.Bookmark{}
	for _, r := range rows {
		if r.WorkID != 0 {
			members[r.WorkID] = append(members[r.WorkID], r)
		}
	}
	out := make([]Work, 0, len(works))
	for _, w := range works {
		// A Work linked after the list read has no members here yet; its
		// keys still say who they are.
		out = append(out, l.workWire(w, members[w.ID]))
	}
	return out, nil
}

// GetWork returns one of the Reader's Works; store.ErrNoWork (404) when it
// is not theirs.
func (l *Service) GetWork(ctx context.Context, readerID int64, id string) (Work, error) {
	wid, err := ParseWorkID(id)
	if err != nil {
		return Work{}, err
	}
	w, err := l.Store.Work(ctx, readerID, wid)
	if err != nil {
		return Work{}, err
	}
	ms, err := l.Store.WorkMembers(ctx, readerID, wid)
	if err != nil {
		return Work{}, err
	}
	return l.workWire(w, ms), nil
}

// Link makes a new Work of two or more of the Reader's Bookmarks. A
// *store.WorkRefusal (422) names keys they do not hold, keys already in
// another Work, or a mix of manga and novels.
func (l *Service) Link(ctx context.Context, readerID int64, keys []string) (Work, error) {
	w, err := l.Store.CreateWork(ctx, readerID, keys)
	if err != nil {
		return Work{}, err
	}
	l.log().InfoContext(ctx, "work linked", "work", w.ID, "series", strings.Join(w.Keys, ","))
	return l.GetWork(ctx, readerID, WorkID(w.ID))
}

// AddToWork links one more of the Reader's Bookmarks into their Work
// (store.AddToWork's refusals).
func (l *Service) AddToWork(ctx context.Context, readerID int64, id, key string) (Work, error) {
	wid, err := ParseWorkID(id)
	if err != nil {
		return Work{}, err
	}
	if _, err := l.Store.AddToWork(ctx, readerID, wid, key); err != nil {
		return Work{}, err
	}
	return l.GetWork(ctx, readerID, id)
}

// Unlink takes one Bookmark out of the Reader's Work; the last-but-one
// removal dissolves the Work (dissolved true). store.ErrNoWork for a Work
// that is not theirs, store.ErrNotFound for a key that is not a member.
func (l *Service) Unlink(ctx context.Context, readerID int64, id, key string) (dissolved bool, err error) {
	wid, err := ParseWorkID(id)
	if err != nil {
		return false, err
	}
	return l.Store.RemoveFromWork(ctx, readerID, wid, key)
}

// MoveProgress carries Progress from Bookmarks to others of the same story
// and links each pair, in one transaction, as the Reader reviewed it
// ("Move these Bookmarks to another Site"; store.MoveProgress).
func (l *Service) MoveProgress(ctx context.Context, readerID int64, moves []store.ProgressMove) error {
	return l.Store.MoveProgress(ctx, readerID, moves)
}

package web

import (
	"errors"
	"math"
	"net/http"
	"sort"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Works in the web library (CONTEXT.md "Work"): one card per Work, the link
// and unlink controls of the Series page, the suggestions with accept and
// dismiss, and "Move these Bookmarks to another Site" (works_move.go). The
// Work's Progress and newest chapter are the bookmark service's (the wire's
// work_* fields); this file only draws them.

func (u *UI) workRoutes(r chi.Router) {
	r.Post("/works/link", u.workLink)
	r.Post("/works/unlink", u.workUnlink)
	r.Post("/works/dismiss", u.workDismiss)
	r.Get("/works/move", u.workMoveShow)
	r.Post("/works/move", u.workMove)
}

// workMember is one Bookmark of a Work on its card or Series page.
type workMember struct {
	Key, Title, Site, Path string
	// Continue is where reading goes on on this Site (continueURL).
	Continue   string
	Unread     bool
	Gone       bool
	GoneReason string
	// Here marks the Series of the page it is drawn on.
	Here bool
}

// continueURL is where a Work's member continues: on the Site the Work's
// Progress was read on, that chapter; on another Site whose newest chapter
// is the next one, that chapter; else the Series page, whose list has it (a
// member knows only its own Site's newest chapter, not the whole list).
func continueURL(m bookmark.Bookmark) string {
	if m.Site == m.WorkProgressSite && m.WorkChapterURL != "" {
		return httpURL(m.WorkChapterURL)
	}
	if w, l := m.WorkChapterNumber, m.LatestChapterNumber; w != nil && l != nil && *l > *w && *l <= math.Floor(*w)+1 && m.LatestChapterURL != "" {
		return httpURL(m.LatestChapterURL)
	}
	if m.WorkChapter == "" && m.ChapterURL != "" {
		return httpURL(m.ChapterURL)
	}
	return httpURL(m.SeriesURL)
}

func memberOf(m bookmark.Bookmark, here string) workMember {
	return workMember{
		Key: m.Key, Title: latest.DisplayTitle(m.Title, m.SeriesURL), Site: m.Site, Path: seriesPath(m.Key),
		Continue: continueURL(m), Unread: m.Unread, Gone: m.Gone, GoneReason: m.GoneReason, Here: m.Key == here,
	}
}

// workCard is the one card of a Work: the first member with a title names
// it, the first with a Cover shows it; Progress and the newest chapter are
// the Work's, each with its Site; a Continue link per Site.
func (u *UI) workCard(ms []bookmark.Bookmark) card {
	c := u.card(ms[0])
	c.Work = ms[0].Work
	for _, m := range ms {
		if m.Title != "" {
			c.Title = latest.DisplayTitle(m.Title, m.SeriesURL)
			c.Cover = newCover(c.Cover.Src, m.Title, m.Key, false)
			break
		}
	}
	for _, m := range ms {
		if m.Cover != "" {
			c.Cover = newCover(m.Cover, c.Title, m.Key, false)
			break
		}
	}
	first := ms[0]
	c.Chapter, c.ChapterURL, c.ProgressSite = first.WorkChapter, httpURL(first.WorkChapterURL), first.WorkProgressSite
	c.Latest, c.LatestURL, c.LatestSite = first.WorkLatestChapter, httpURL(first.WorkLatestChapterURL), first.WorkLatestSite
	c.Unread, c.NewSince, c.stamp = false, nil, 0
	for _, m := range ms {
		c.Members = append(c.Members, memberOf(m, ""))
		c.Unread = c.Unread || m.Unread
		if m.LatestAt != nil && m.LatestAt.UnixMicro() > c.stamp {
			c.stamp = m.LatestAt.UnixMicro()
			if m.Unread {
				c.NewSince = u.when(m.LatestAt)
			}
		}
	}
	c.Gone, c.GoneReason = false, ""
	c.fold = strings.ToLower(c.Title)
	return c
}

// suggestionView is one suggested pair on the library page.
type suggestionView struct {
	A, B     workMember
	Work     string
	Evidence string
}

// evidenceWords are the suggestion evidence kinds in the Reader's words.
var evidenceWords = map[string]string{
	bookmark.EvidenceTitle:    "same title",
	bookmark.EvidenceAltTitle: "an alternative title the Site lists",
	bookmark.EvidenceTracker:  "the same tracker entry",
	bookmark.EvidenceWork:     "linked in a Work",
}

func evidenceText(ev []bookmark.Evidence) string {
	var out []string
	for _, e := range ev {
		w := evidenceWords[e.Kind]
		if w == "" {
			w = strings.ReplaceAll(e.Kind, "_", " ")
		}
		out = append(out, w)
	}
	return strings.Join(out, ", ")
}

// librarySuggestions are the Reader's suggested pairs of one Library.
func (u *UI) librarySuggestions(r *http.Request, readerID int64, kind string, held map[string]bookmark.Bookmark) ([]suggestionView, error) {
	ss, err := u.lib.Suggestions(r.Context(), readerID)
	if err != nil {
		return nil, err
	}
	var out []suggestionView
	for _, s := range ss {
		if len(s.Keys) != 2 {
			continue
		}
		a, okA := held[s.Keys[0]]
		b, okB := held[s.Keys[1]]
		if !okA || !okB || a.Kind != kind {
			continue
		}
		out = append(out, suggestionView{A: memberOf(a, ""), B: memberOf(b, ""), Work: s.Work, Evidence: evidenceText(s.Evidence)})
	}
	return out, nil
}

// seriesWork is the Work block of a held Series' page: its Work (members
// with unlink) or, when in none, the Bookmarks it may be linked with.
type seriesWork struct {
	ID                                  string
	Members                             []workMember
	Progress, ProgressURL, ProgressSite string
	Latest, LatestURL, LatestSite       string
	// Candidates are the Reader's other Bookmarks of the Library it may be
	// linked with: suggested ones first (with why), then by title.
	Candidates []linkCandidate
}

type linkCandidate struct {
	Key, Label string
	Suggested  bool
}

func (u *UI) seriesWork(r *http.Request, readerID int64, b bookmark.Bookmark) (*seriesWork, error) {
	all, err := u.lib.List(r.Context(), readerID, b.Kind)
	if err != nil {
		return nil, err
	}
	sw := &seriesWork{ID: b.Work}
	if b.Work != "" {
		sw.Progress, sw.ProgressURL, sw.ProgressSite = b.WorkChapter, httpURL(b.WorkChapterURL), b.WorkProgressSite
		sw.Latest, sw.LatestURL, sw.LatestSite = b.WorkLatestChapter, httpURL(b.WorkLatestChapterURL), b.WorkLatestSite
		for _, m := range all {
			if m.Work == b.Work {
				sw.Members = append(sw.Members, memberOf(m, b.Key))
			}
		}
	}
	ss, err := u.lib.Suggestions(r.Context(), readerID)
	if err != nil {
		return nil, err
	}
	why := map[string]string{}
	for _, s := range ss {
		if len(s.Keys) != 2 {
			continue
		}
		if s.Keys[0] == b.Key {
			why[s.Keys[1]] = evidenceText(s.Evidence)
		} else if s.Keys[1] == b.Key {
			why[s.Keys[0]] = evidenceText(s.Evidence)
		}
	}
	for _, m := range all {
		if m.Key == b.Key || (b.Work != "" && m.Work == b.Work) {
			continue
		}
		label := latest.DisplayTitle(m.Title, m.SeriesURL) + " on " + m.Site
		c := linkCandidate{Key: m.Key, Label: label}
		if w, ok := why[m.Key]; ok {
			c.Suggested, c.Label = true, label+" ("+w+")"
		}
		sw.Candidates = append(sw.Candidates, c)
	}
	sort.SliceStable(sw.Candidates, func(i, j int) bool {
		if sw.Candidates[i].Suggested != sw.Candidates[j].Suggested {
			return sw.Candidates[i].Suggested
		}
		return strings.ToLower(sw.Candidates[i].Label) < strings.ToLower(sw.Candidates[j].Label)
	})
	return sw, nil
}

// formKeyNamed reads and checks a Series key a form posts under name.
func (u *UI) formKeyNamed(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	key := strings.TrimSpace(r.PostForm.Get(name))
	if _, _, ok := latest.SplitKey(key); !ok || len(key) > 300 || strings.ContainsAny(key, " \t") {
		u.fail(w, r, http.StatusBadRequest, "Malformed Series key", "A Series key looks like site:slug.")
		return "", false
	}
	return key, true
}

// heldBookmark is the Reader's Bookmark of key, or false after answering 404.
func (u *UI) heldBookmark(w http.ResponseWriter, r *http.Request, readerID int64, key string) (bookmark.Bookmark, bool) {
	b, err := u.lib.Get(r.Context(), readerID, key)
	if errs.CodeOf(err) == errs.NotFound {
		u.refuse(w, r, err, "No such Bookmark", "You hold no Bookmark on "+key+".")
		return b, false
	}
	if err != nil {
		u.serverError(w, r, err)
		return b, false
	}
	return b, true
}

// refuseWork answers a refused Work change: the store's words (keys not
// held, already in another Work, manga with novels) at 422, 404 for a Work
// that is not the Reader's.
func (u *UI) refuseWork(w http.ResponseWriter, r *http.Request, err error) {
	var ref *store.WorkRefusal
	switch {
	case errors.As(err, &ref):
		u.fail(w, r, http.StatusUnprocessableEntity, "Cannot link these Bookmarks", ref.Msg)
	case errors.Is(err, store.ErrNoWork):
		u.fail(w, r, http.StatusNotFound, "No such Work", "You have no such Work.")
	default:
		u.refuse(w, r, err, "Cannot change this Work", errs.MessageOf(err))
	}
}

// workLink links two of the Reader's Bookmarks (key and with): into the
// Work one of them is in, else as a new Work. The Series page's "Link"
// and a suggestion's "Same story" post here.
func (u *UI) workLink(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.formKeyNamed(w, r, "key")
	if !ok {
		return
	}
	with, ok := u.formKeyNamed(w, r, "with")
	if !ok {
		return
	}
	if key == with {
		u.fail(w, r, http.StatusBadRequest, "Same Bookmark twice", "A Work links two different Bookmarks.")
		return
	}
	a, ok := u.heldBookmark(w, r, reader.ID, key)
	if !ok {
		return
	}
	b, ok := u.heldBookmark(w, r, reader.ID, with)
	if !ok {
		return
	}
	var err error
	switch {
	case a.Work != "" && a.Work == b.Work:
		// Linked already: nothing to do.
	case a.Work != "" && b.Work != "":
		u.fail(w, r, http.StatusUnprocessableEntity, "Both are in Works already",
			"“"+a.Title+"” and “"+b.Title+"” are each in a Work. Unlink one of them from its Work first.")
		return
	case a.Work != "":
		_, err = u.lib.AddToWork(r.Context(), reader.ID, a.Work, with)
	case b.Work != "":
		_, err = u.lib.AddToWork(r.Context(), reader.ID, b.Work, key)
	default:
		_, err = u.lib.Link(r.Context(), reader.ID, []string{key, with})
	}
	if err != nil {
		u.refuseWork(w, r, err)
		return
	}
	http.Redirect(w, r, withMsg(backPath(r, a.Kind, false), "linked"), http.StatusSeeOther)
}

// workUnlink takes one Bookmark out of its Work; the last-but-one leaving
// dissolves it.
func (u *UI) workUnlink(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.formKeyNamed(w, r, "key")
	if !ok {
		return
	}
	id := strings.TrimSpace(r.PostForm.Get("work"))
	if id == "" || len(id) > 40 {
		u.fail(w, r, http.StatusBadRequest, "No Work named", "The form names no Work.")
		return
	}
	b, ok := u.heldBookmark(w, r, reader.ID, key)
	if !ok {
		return
	}
	if _, err := u.lib.Unlink(r.Context(), reader.ID, id, key); err != nil {
		if errs.CodeOf(err) == errs.NotFound && !errors.Is(err, store.ErrNoWork) {
			u.fail(w, r, http.StatusNotFound, "Not in this Work", "“"+b.Title+"” is not in this Work.")
			return
		}
		u.refuseWork(w, r, err)
		return
	}
	http.Redirect(w, r, withMsg(backPath(r, b.Kind, false), "unlinked"), http.StatusSeeOther)
}

// workDismiss records that a suggested pair is not one story; it is not
// suggested again.
func (u *UI) workDismiss(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	a, ok := u.formKeyNamed(w, r, "key")
	if !ok {
		return
	}
	b, ok := u.formKeyNamed(w, r, "with")
	if !ok {
		return
	}
	held, ok := u.heldBookmark(w, r, reader.ID, a)
	if !ok {
		return
	}
	if _, ok := u.heldBookmark(w, r, reader.ID, b); !ok {
		return
	}
	if err := u.lib.Dismiss(r.Context(), reader.ID, a, b); err != nil {
		u.refuse(w, r, err, "Cannot dismiss", errs.MessageOf(err))
		return
	}
	http.Redirect(w, r, withMsg(backPath(r, held.Kind, false), "dismissed"), http.StatusSeeOther)
}

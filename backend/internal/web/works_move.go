package web

import (
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// "Move these Bookmarks to another Site": for a Reader's Bookmarks on one
// Site (one that is dying, or gone), the page lists, for each, the Reader's
// Bookmarks on other Sites that look like the same story (its Work's other
// members, then the suggestions), each as a box to tick. Nothing is ticked
// at first and nothing moves until the Reader posts the reviewed form: one
// POST moves the ticked ones' Progress and links each pair
// (bookmark.Service.MoveProgress, one transaction).
//
// A tick posts "<from> <to>" (keys hold no spaces), so only ticked rows are
// sent, and a row's list of the Reader's other Bookmarks posts "" until one
// is chosen: a form of a thousand Bookmarks stays within maxForm.

// siteName is what a Site name can be, also for a Site the Owner removed
// (its Bookmarks stay and may be moved away).
var siteName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

type moveRow struct {
	From    workMember
	Chapter string
	// Targets are the Bookmarks that look like the same story, to tick;
	// Others the Reader's other Bookmarks of the Library on other Sites,
	// to choose from when none does (or another is the one).
	Targets []moveTarget
	Others  []moveTarget
}

// maxOtherOptions bounds the page: the "another of your Bookmarks" lists
// are drawn while rows × options stays below it; past it, a Bookmark with no
// match is linked from its own page first.
const maxOtherOptions = 20000

type moveTarget struct {
	Value, Label, Why string
}

type movePage struct {
	common
	Site        string
	Rows        []moveRow
	Unmatched   int
	SiteOptions []option
}

func (u *UI) workMoveShow(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	site := r.URL.Query().Get("site")
	if site != "" && !siteName.MatchString(site) {
		u.fail(w, r, http.StatusBadRequest, "Unknown Site", "A Site name is lower-case letters, digits and dashes.")
		return
	}
	all, err := u.lib.List(r.Context(), reader.ID, "")
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := movePage{common: u.base(r, "Move Bookmarks to another Site", ""), Site: site}
	counts := map[string]int{}
	for _, b := range all {
		counts[b.Site]++
	}
	sites := make([]string, 0, len(counts))
	for s := range counts {
		sites = append(sites, s)
	}
	sort.Strings(sites)
	for _, s := range sites {
		p.SiteOptions = append(p.SiteOptions, option{Value: s, Label: s, Selected: s == site})
	}
	if site != "" {
		if p.Rows, err = u.moveRows(r, reader.ID, site, all); err != nil {
			u.serverError(w, r, err)
			return
		}
		for _, row := range p.Rows {
			if len(row.Targets) == 0 {
				p.Unmatched++
			}
		}
	}
	u.render(w, r, http.StatusOK, "works_move", p)
}

// moveRows lists the Reader's Bookmarks on site, each with the Bookmarks on
// other Sites that look like the same story (bookmark.MoveCandidates: its
// Work's other members first, then the suggestions) and, to choose from,
// the Reader's other Bookmarks of its Library.
func (u *UI) moveRows(r *http.Request, readerID int64, site string, all []bookmark.Bookmark) ([]moveRow, error) {
	mcs, err := u.lib.MoveCandidates(r.Context(), readerID, site)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]bookmark.Bookmark, len(all))
	others := map[string][]bookmark.Bookmark{} // by kind: Bookmarks on other Sites
	for _, b := range all {
		byKey[b.Key] = b
		if b.Site != site {
			others[b.Kind] = append(others[b.Kind], b)
		}
	}
	for _, list := range others {
		sort.SliceStable(list, func(i, j int) bool {
			return strings.ToLower(targetLabel(list[i])) < strings.ToLower(targetLabel(list[j]))
		})
	}
	rows := make([]moveRow, 0, len(mcs))
	for _, mc := range mcs {
		b := mc.From
		row := moveRow{From: memberOf(b, ""), Chapter: b.Chapter}
		for _, c := range mc.Candidates {
			if len(c.Keys) != 2 {
				continue
			}
			to, ok := byKey[c.Keys[1]]
			if !ok {
				continue // bookmarked after the list was read
			}
			row.Targets = append(row.Targets, moveTarget{Value: b.Key + " " + to.Key, Label: targetLabel(to), Why: evidenceText(c.Evidence)})
		}
		if len(mcs)*len(others[b.Kind]) <= maxOtherOptions {
			for _, o := range others[b.Kind] {
				row.Others = append(row.Others, moveTarget{Value: b.Key + " " + o.Key, Label: targetLabel(o)})
			}
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		return strings.ToLower(rows[i].From.Title) < strings.ToLower(rows[j].From.Title)
	})
	return rows, nil
}

func targetLabel(b bookmark.Bookmark) string {
	label := latest.DisplayTitle(b.Title, b.SeriesURL) + " on " + b.Site
	if b.Chapter != "" {
		label += " (read: " + b.Chapter + ")"
	}
	return label
}

// workMove moves the ticked Bookmarks' Progress, as reviewed, in one step.
func (u *UI) workMove(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	site := r.PostForm.Get("site")
	if !siteName.MatchString(site) {
		u.fail(w, r, http.StatusBadRequest, "Unknown Site", "A Site name is lower-case letters, digits and dashes.")
		return
	}
	// A row's "another of your Bookmarks" list posts "" until one is chosen.
	var ticks []string
	for _, t := range r.PostForm["move"] {
		if strings.TrimSpace(t) != "" {
			ticks = append(ticks, t)
		}
	}
	if len(ticks) == 0 {
		u.fail(w, r, http.StatusBadRequest, "Nothing ticked", "Tick the Bookmarks to move; nothing was moved.")
		return
	}
	seen := map[string]bool{}
	moves := make([]store.ProgressMove, 0, len(ticks))
	for _, t := range ticks {
		f := strings.Fields(t)
		if len(f) != 2 || len(f[0]) > 300 || len(f[1]) > 300 || f[0] == f[1] {
			u.fail(w, r, http.StatusBadRequest, "Malformed form", "A ticked move names two different Series keys.")
			return
		}
		for _, k := range f {
			if _, _, ok := latest.SplitKey(k); !ok {
				u.fail(w, r, http.StatusBadRequest, "Malformed Series key", "A Series key looks like site:slug.")
				return
			}
		}
		if s, _, _ := latest.SplitKey(f[0]); s != site {
			u.fail(w, r, http.StatusBadRequest, "Not on this Site", f[0]+" is not a Bookmark on "+site+"; nothing was moved.")
			return
		}
		if seen[f[0]] {
			u.fail(w, r, http.StatusBadRequest, "Two places for one Bookmark",
				"Tick one place for "+f[0]+" to move to; nothing was moved.")
			return
		}
		seen[f[0]] = true
		moves = append(moves, store.ProgressMove{From: f[0], To: f[1]})
	}
	if err := u.lib.MoveProgress(r.Context(), reader.ID, moves); err != nil {
		u.refuseWork(w, r, err)
		return
	}
	u.log.InfoContext(r.Context(), "bookmarks moved to another site", "site", site, "moves", len(moves))
	http.Redirect(w, r, withMsg("/works/move?site="+site, "moved"), http.StatusSeeOther)
}

package web

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// The library page: one Library (manga or novel) as cards, filtered and
// sorted on the server from query parameters, so it works without
// JavaScript and a filtered view is a link.

// maxQuery bounds the text filter.
const maxQuery = 200

// libraryPageSize is how many cards one library page shows. A Library of
// 1,000 Bookmarks rendered whole took most of a second at the scale
// fixture; counts, filters and sorting still cover the whole Library, and
// only the cards shown are cut to a page (?page=N).
const libraryPageSize = 100

// Sort orders.
const (
	sortUnread  = "unread"  // unread first, newest Latest Chapter first within
	sortUpdated = "updated" // newest Latest Chapter first
	sortTitle   = "title"
)

var sortLabels = []struct{ value, label string }{
	{sortUnread, "Unread first"},
	{sortUpdated, "Recently updated"},
	{sortTitle, "Title"},
}

type option struct {
	Value, Label string
	Selected     bool
}

type tab struct {
	Kind, Label, URL string
	Total, Unread    int
	Current          bool
}

type card struct {
	Key, Title, Site, Path string
	Cover                  coverView
	Chapter, ChapterURL    string
	Latest, LatestURL      string
	Unread                 bool
	NewSince               *when
	Gone                   bool
	GoneReason             string

	// A Work's card (works.go): its id, the Sites its Progress and newest
	// chapter are on, and its members with a Continue link each.
	Work                     string
	ProgressSite, LatestSite string
	Members                  []workMember

	fold  string // lower-case title, for filtering and sorting
	stamp int64  // Latest Chapter time, unix µs, 0 when unknown
}

type libraryPage struct {
	common
	Kind, Label, Noun, Path string
	Tabs                    []tab
	Q, Site, Sort           string
	Sites, Sorts            []option
	Cards                   []card
	Total, Shown, Unread    int
	Filtered                bool
	Back, ClearURL          string
	MaxQuery                int
	// Suggestions are pairs of this Library's Bookmarks that look like one
	// story (works.go).
	Suggestions []suggestionView
	// The pager: page Page of Pages, showing cards From..To of Shown;
	// PrevURL and NextURL keep the filters ("" at either end).
	Page, Pages, From, To int
	PrevURL, NextURL      string
}

var kindLabels = map[string][2]string{
	string(latest.Manga): {"Manga", "manga"},
	string(latest.Novel): {"Novels", "novels"},
}

func (u *UI) libraryRedirect(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/library/manga", http.StatusSeeOther)
}

func (u *UI) libraryShow(w http.ResponseWriter, r *http.Request) {
	kind := chi.URLParam(r, "kind")
	labels, ok := kindLabels[kind]
	if !ok {
		u.fail(w, r, http.StatusNotFound, "No such Library", "Lectern has two Libraries: manga and novel.")
		return
	}
	reader, _ := readerFrom(r)
	q := r.URL.Query()
	text := strings.TrimSpace(q.Get("q"))
	if utf8.RuneCountInString(text) > maxQuery {
		u.fail(w, r, http.StatusBadRequest, "Filter too long", "The title filter may have at most 200 characters.")
		return
	}
	sortBy := q.Get("sort")
	if sortBy == "" {
		sortBy = sortUnread
	}
	if !validSort(sortBy) {
		u.fail(w, r, http.StatusBadRequest, "Unknown sort order", "Sort by unread, updated or title.")
		return
	}
	page := 1
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			u.fail(w, r, http.StatusBadRequest, "Unknown page", "The page is a whole number from 1.")
			return
		}
		page = n
	}
	site := q.Get("site")
	if site != "" {
		s, ok := u.lib.Registry.Lookup(site)
		if !ok || string(s.Kind) != kind {
			u.fail(w, r, http.StatusBadRequest, "Unknown Site", "There is no Site called “"+site+"” in the "+labels[1]+" Library.")
			return
		}
	}

	// One query for both Libraries: the tabs show both counts.
	all, err := u.lib.List(r.Context(), reader.ID, "")
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := libraryPage{
		common: u.base(r, labels[0], kind),
		Kind:   kind, Label: kind, Noun: labels[1], Path: "/library/" + kind,
		Q: text, Site: site, Sort: sortBy, MaxQuery: maxQuery,
	}
	counts := map[string]*tab{}
	for _, k := range []string{string(latest.Manga), string(latest.Novel)} {
		p.Tabs = append(p.Tabs, tab{Kind: k, Label: kindLabels[k][0], URL: "/library/" + k, Current: k == kind})
	}
	for i := range p.Tabs {
		counts[p.Tabs[i].Kind] = &p.Tabs[i]
	}
	fold := strings.ToLower(text)
	cards := make([]card, 0, len(all))
	// The members of each Work, in list order, become one card after the
	// loop; a Work is shown when any member passes the Site filter.
	works := map[string][]bookmark.Bookmark{}
	var workOrder []string
	workShown := map[string]bool{}
	held := map[string]bookmark.Bookmark{}
	// Counts are of cards: a Work counts once, unread when any member is.
	units := map[string]map[string]bool{}
	for _, b := range all {
		unit := b.Key
		if b.Work != "" {
			unit = "work:" + b.Work
		}
		if units[b.Kind] == nil {
			units[b.Kind] = map[string]bool{}
		}
		units[b.Kind][unit] = units[b.Kind][unit] || b.Unread
	}
	for k, us := range units {
		for _, unread := range us {
			if t := counts[k]; t != nil {
				t.Total++
				if unread {
					t.Unread++
				}
			}
			if k == kind {
				p.Total++
				if unread {
					p.Unread++
				}
			}
		}
	}
	for _, b := range all {
		if b.Kind != kind {
			continue
		}
		held[b.Key] = b
		if b.Work != "" {
			if works[b.Work] == nil {
				workOrder = append(workOrder, b.Work)
			}
			works[b.Work] = append(works[b.Work], b)
			workShown[b.Work] = workShown[b.Work] || site == "" || b.Site == site
			continue
		}
		if site != "" && b.Site != site {
			continue
		}
		c := u.card(b)
		if fold != "" && !strings.Contains(c.fold, fold) {
			continue
		}
		cards = append(cards, c)
	}
	for _, id := range workOrder {
		if !workShown[id] {
			continue
		}
		c := u.workCard(works[id])
		if fold != "" && !strings.Contains(c.fold, fold) {
			continue
		}
		cards = append(cards, c)
	}
	if p.Suggestions, err = u.librarySuggestions(r, reader.ID, kind, held); err != nil {
		u.serverError(w, r, err)
		return
	}
	sortCards(cards, sortBy)
	p.Shown = len(cards)
	p.Filtered = text != "" || site != ""
	p.Pages = max(1, (len(cards)+libraryPageSize-1)/libraryPageSize)
	// A page past the last (the Library shrank, a filter narrowed it)
	// shows the last.
	p.Page = min(page, p.Pages)
	from := (p.Page - 1) * libraryPageSize
	p.Cards = cards[from:min(from+libraryPageSize, len(cards))]
	p.From, p.To = from+1, from+len(p.Cards)
	pageURL := func(n int) string {
		v := url.Values{}
		for k, vs := range q {
			if k != "msg" && k != "page" {
				v[k] = vs
			}
		}
		if n > 1 {
			v.Set("page", strconv.Itoa(n))
		}
		if len(v) == 0 {
			return p.Path
		}
		return p.Path + "?" + v.Encode()
	}
	if p.Page > 1 {
		p.PrevURL = pageURL(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.NextURL = pageURL(p.Page + 1)
	}

	for _, s := range u.lib.Registry.Sites() {
		if string(s.Kind) == kind {
			p.Sites = append(p.Sites, option{Value: s.Name, Label: s.Name, Selected: s.Name == site})
		}
	}
	for _, s := range sortLabels {
		p.Sorts = append(p.Sorts, option{Value: s.value, Label: s.label, Selected: s.value == sortBy})
	}
	keep := url.Values{}
	if sortBy != sortUnread {
		keep.Set("sort", sortBy)
	}
	p.ClearURL = p.Path
	if len(keep) > 0 {
		p.ClearURL += "?" + keep.Encode()
	}
	back := url.Values{}
	for k, v := range q {
		if k != "msg" {
			back[k] = v
		}
	}
	p.Back = p.Path
	if len(back) > 0 {
		p.Back += "?" + back.Encode()
	}
	u.render(w, r, http.StatusOK, "library", p)
}

func validSort(s string) bool {
	for _, o := range sortLabels {
		if o.value == s {
			return true
		}
	}
	return false
}

// card renders a wire Bookmark: the same Cover URL, Progress and Latest
// Chapter the API sends the panel.
func (u *UI) card(b bookmark.Bookmark) card {
	title := latest.DisplayTitle(b.Title, b.SeriesURL)
	c := card{
		Key: b.Key, Title: title, Site: b.Site, Path: seriesPath(b.Key),
		Cover:   newCover(b.Cover, b.Title, b.Key, false),
		Chapter: b.Chapter, ChapterURL: httpURL(b.ChapterURL),
		Latest: b.LatestChapter, LatestURL: httpURL(b.LatestChapterURL),
		Unread: b.Unread,
		Gone:   b.Gone, GoneReason: b.GoneReason,
		fold: strings.ToLower(title),
	}
	if b.LatestAt != nil {
		c.stamp = b.LatestAt.UnixMicro()
		if b.Unread {
			c.NewSince = u.when(b.LatestAt)
		}
	}
	return c
}

func sortCards(cards []card, by string) {
	byTitle := func(a, b card) bool {
		if a.fold != b.fold {
			return a.fold < b.fold
		}
		return a.Key < b.Key
	}
	switch by {
	case sortTitle:
		sort.SliceStable(cards, func(i, j int) bool { return byTitle(cards[i], cards[j]) })
	case sortUpdated:
		sort.SliceStable(cards, func(i, j int) bool {
			if cards[i].stamp != cards[j].stamp {
				return cards[i].stamp > cards[j].stamp
			}
			return byTitle(cards[i], cards[j])
		})
	default:
		sort.SliceStable(cards, func(i, j int) bool {
			if cards[i].Unread != cards[j].Unread {
				return cards[i].Unread
			}
			if cards[i].stamp != cards[j].stamp {
				return cards[i].stamp > cards[j].stamp
			}
			return byTitle(cards[i], cards[j])
		})
	}
}

// seriesPath is the Series page of a key.
func seriesPath(key string) string { return "/series/" + url.PathEscape(key) }

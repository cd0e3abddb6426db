package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/portability"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/tracker"
)

// The trackers in Settings (link, unlink, the list import) and on the
// Series page (the mapping, confirmed by the Reader, and the completed
// mark). docs/trackers.md.

func init() {
	for code, msg := range map[string]string{
		"tracker-linked":   "Tracker linked. Lectern now sends your Progress there, and brought your mapped Series up to date both ways. Import its list below if you like.",
		"tracker-unlinked": "Tracker unlinked. Its mappings stay for when you link it again.",
		"tracker-mapped":   "Tracker entry set. Your Progress goes there within seconds.",
		"tracker-unmapped": "Tracker entry removed from this Series.",
		"completed":        "Marked completed: your trackers say so too.",
		"reading":          "Marked as reading again.",
	} {
		flashes[code] = msg
	}
}

// trackerRoutes adds the trackers' pages and forms (behind requireReader
// and the CSRF check).
func (u *UI) trackerRoutes(r chi.Router) {
	if u.trackers == nil {
		return
	}
	// Connect is a link, not a form: it ends in a redirect to the
	// tracker, which the CSP's form-action 'self' would block after a POST.
	r.Get("/settings/trackers/{tracker}/connect", u.trackerConnect)
	r.Get("/settings/trackers/{tracker}/callback", u.trackerCallback)
	r.Post("/settings/trackers/{tracker}/token", u.trackerToken)
	r.Post("/settings/trackers/{tracker}/login", u.trackerLogin)
	r.Post("/settings/trackers/{tracker}/unlink", u.trackerUnlink)
	r.Get("/settings/trackers/{tracker}/import", u.trackerImportPreview)
	r.Post("/settings/trackers/{tracker}/import", u.trackerImportApply)
	r.Post("/series/{key}/trackers/{tracker}", u.trackerMap)
	r.Post("/series/{key}/trackers/{tracker}/remove", u.trackerUnmap)
	r.Post("/series/{key}/completed", u.bookmarkCompleted)
}

// trackerSection is the Settings section: one row per tracker offered.
type trackerSection struct {
	SecretMissing bool
	Accounts      []trackerRow
	// Error is a failed link's sentence, for the tracker named.
	Error, ErrorTracker string
}

type trackerRow struct {
	tracker.Account
	OAuth, Token, Password bool
	LinkedAt, LastSync     *when
	LastErrorAt            *when
	ConnectPath, Base      string
}

func (u *UI) loadTrackers(ctx context.Context, readerID int64) (*trackerSection, error) {
	if u.trackers == nil {
		return nil, nil
	}
	list, err := u.trackers.Accounts(ctx, readerID)
	if err != nil {
		return nil, err
	}
	sec := &trackerSection{SecretMissing: u.trackers.Box == nil}
	for _, a := range list {
		row := trackerRow{Account: a, LinkedAt: u.when(a.LinkedAt), LastSync: u.when(a.LastSyncAt), LastErrorAt: u.when(a.LastErrorAt),
			Base: "/settings/trackers/" + a.Tracker}
		row.ConnectPath = row.Base + "/connect"
		for _, m := range a.Methods {
			switch m {
			case tracker.LinkOAuth:
				row.OAuth = true
			case tracker.LinkToken:
				row.Token = true
			case tracker.LinkPassword:
				row.Password = true
			}
		}
		sec.Accounts = append(sec.Accounts, row)
	}
	return sec, nil
}

// trackerFail answers a tracker error on the Settings page, in its
// section, or as the error page when it is not the Reader's to fix.
func (u *UI) trackerFail(w http.ResponseWriter, r *http.Request, name string, err error) {
	switch {
	case errors.Is(err, tracker.ErrUnknownTracker):
		u.fail(w, r, http.StatusNotFound, "No such tracker", "Lectern links AniList, MyAnimeList and MangaUpdates.")
	case errors.Is(err, tracker.ErrNoSecretKey), errors.Is(err, tracker.ErrTrackerDown), face.Refused(err):
		u.renderSettings(w, r, face.Status(err), func(p *settingsPage) {
			if p.Trackers != nil {
				p.Trackers.Error, p.Trackers.ErrorTracker = err.Error(), name
			}
		})
	default:
		u.serverError(w, r, err)
	}
}

func (u *UI) trackerConnect(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	name := chi.URLParam(r, "tracker")
	to, err := u.trackers.StartOAuth(r.Context(), reader.ID, name)
	if err != nil {
		u.trackerFail(w, r, name, err)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// trackerCallback is where the tracker's authorisation page returns: the
// state must be one this Reader started here.
func (u *UI) trackerCallback(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	name := chi.URLParam(r, "tracker")
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		u.trackerFail(w, r, name, errs.New(errs.Invalid, tracker.Label(name)+" did not authorise the link ("+shortText(e)+")"))
		return
	}
	if _, err := u.trackers.FinishOAuth(r.Context(), reader.ID, name, q.Get("state"), q.Get("code")); err != nil {
		u.trackerFail(w, r, name, err)
		return
	}
	http.Redirect(w, r, withMsg("/settings", "tracker-linked")+"#trackers", http.StatusSeeOther)
}

func shortText(s string) string {
	if r := []rune(s); len(r) > 100 {
		return string(r[:100]) + "…"
	}
	return s
}

func (u *UI) trackerToken(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	name := chi.URLParam(r, "tracker")
	if _, err := u.trackers.LinkToken(r.Context(), reader.ID, name, r.PostForm.Get("token")); err != nil {
		u.trackerFail(w, r, name, err)
		return
	}
	http.Redirect(w, r, withMsg("/settings", "tracker-linked")+"#trackers", http.StatusSeeOther)
}

func (u *UI) trackerLogin(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	name := chi.URLParam(r, "tracker")
	if _, err := u.trackers.LinkPassword(r.Context(), reader.ID, name, r.PostForm.Get("username"), r.PostForm.Get("password")); err != nil {
		u.trackerFail(w, r, name, err)
		return
	}
	http.Redirect(w, r, withMsg("/settings", "tracker-linked")+"#trackers", http.StatusSeeOther)
}

func (u *UI) trackerUnlink(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	name := chi.URLParam(r, "tracker")
	if err := u.trackers.Unlink(r.Context(), reader.ID, name); err != nil {
		u.trackerFail(w, r, name, err)
		return
	}
	http.Redirect(w, r, withMsg("/settings", "tracker-unlinked")+"#trackers", http.StatusSeeOther)
}

// trackerImportPreview reads the tracker's list and shows what importing
// it would do; nothing is written.
func (u *UI) trackerImportPreview(w http.ResponseWriter, r *http.Request) {
	u.trackerImport(w, r, true)
}

func (u *UI) trackerImportApply(w http.ResponseWriter, r *http.Request) {
	u.trackerImport(w, r, false)
}

func (u *UI) trackerImport(w http.ResponseWriter, r *http.Request, preview bool) {
	reader, _ := readerFrom(r)
	name := chi.URLParam(r, "tracker")
	opts := portability.Options{DryRun: preview, SkipInvalid: true}
	im := &portability.Importer{Bookmarks: u.lib, Logger: u.log, Now: u.now}
	rep, err := u.trackers.ImportList(r.Context(), im, reader.ID, name, opts)
	if err != nil {
		u.trackerFail(w, r, name, err)
		return
	}
	p := u.importPageData(r)
	p.PageTitle = "Import your " + tracker.Label(name) + " list"
	p.Source = tracker.Label(name)
	p.Report = &rep
	p.Items = rep.Items
	if len(p.Items) > maxShownItems {
		p.Items, p.MoreItems = p.Items[:maxShownItems], len(p.Items)-maxShownItems
	}
	p.Unplaced = rep.Unplaced
	if preview {
		p.ApplyPath = "/settings/trackers/" + name + "/import"
	}
	u.render(w, r, http.StatusOK, "import", p)
}

// seriesTrackers is the Series page's trackers section.
type seriesTrackers struct {
	Completed   bool
	Rows        []seriesTrackerRow
	Search      *trackerSearch
	CompletedAt string
}

type seriesTrackerRow struct {
	Tracker, Label string
	Linked         bool
	Entry          *tracker.EntryView
	LastSync       *when
	Suggestion     *tracker.Suggestion
	MapPath        string
	SearchQuery    string
}

type trackerSearch struct {
	Tracker, Label, Query string
	Candidates            []tracker.Candidate
	Error                 string
}

// loadSeriesTrackers fills the Series page's section; search names the
// tracker whose search the Reader asked for (?tracker_search=&q=).
func (u *UI) loadSeriesTrackers(r *http.Request, readerID int64, key, title string) (*seriesTrackers, error) {
	if u.trackers == nil {
		return nil, nil
	}
	ctx := r.Context()
	bt, err := u.trackers.Bookmark(ctx, readerID, key)
	if err != nil {
		return nil, err
	}
	accounts, err := u.trackers.Accounts(ctx, readerID)
	if err != nil {
		return nil, err
	}
	sec := &seriesTrackers{Completed: bt.Completed}
	for _, a := range accounts {
		row := seriesTrackerRow{Tracker: a.Tracker, Label: a.Label, Linked: a.Linked,
			MapPath: seriesPath(key) + "/trackers/" + a.Tracker, SearchQuery: title}
		for i := range bt.Entries {
			if bt.Entries[i].Tracker == a.Tracker {
				row.Entry = &bt.Entries[i]
				row.LastSync = u.when(bt.Entries[i].LastSyncAt)
			}
		}
		for i := range bt.Suggestions {
			if bt.Suggestions[i].Tracker == a.Tracker {
				row.Suggestion = &bt.Suggestions[i]
			}
		}
		if row.Entry != nil || a.Linked || row.Suggestion != nil {
			sec.Rows = append(sec.Rows, row)
		}
	}
	q := r.URL.Query()
	if name := q.Get("tracker_search"); name != "" && tracker.Known(name) {
		s := &trackerSearch{Tracker: name, Label: tracker.Label(name), Query: strings.TrimSpace(q.Get("q"))}
		if s.Query == "" {
			s.Query = title
		}
		list, err := u.trackers.Search(ctx, readerID, name, s.Query)
		switch {
		case err == nil:
			s.Candidates = list
		case face.Refused(err), errors.Is(err, tracker.ErrTrackerDown), errors.Is(err, tracker.ErrNoSecretKey):
			s.Error = err.Error()
		default:
			return nil, err
		}
		sec.Search = s
	}
	return sec, nil
}

// seriesKey reads {key} of a Series path.
func (u *UI) seriesKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key, err := url.PathUnescape(chi.URLParam(r, "key"))
	if err != nil || len(key) > 300 || !cleanText(key) {
		u.fail(w, r, http.StatusBadRequest, "Malformed Series key", "A Series key looks like site:slug.")
		return "", false
	}
	return key, true
}

// trackerMap sets the entry the Reader confirmed (a suggestion, a search
// result, or an id or URL typed in).
func (u *UI) trackerMap(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.seriesKey(w, r)
	if !ok {
		return
	}
	name := chi.URLParam(r, "tracker")
	id := strings.TrimSpace(r.PostForm.Get("id"))
	_, _, err := u.trackers.Map(r.Context(), reader.ID, key, name, formID(id), r.PostForm.Get("title"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		u.refuse(w, r, err, "No such Bookmark", "You hold no Bookmark on "+key+".")
		return
	case errors.Is(err, tracker.ErrUnknownTracker):
		u.fail(w, r, http.StatusNotFound, "No such tracker", "Lectern links AniList, MyAnimeList and MangaUpdates.")
		return
	case err != nil:
		u.refuse(w, r, err, "Entry not set", err.Error())
		return
	}
	http.Redirect(w, r, withMsg(seriesPath(key), "tracker-mapped")+"#trackers", http.StatusSeeOther)
}

func (u *UI) trackerUnmap(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.seriesKey(w, r)
	if !ok {
		return
	}
	err := u.trackers.Unmap(r.Context(), reader.ID, key, chi.URLParam(r, "tracker"))
	switch {
	case errors.Is(err, tracker.ErrUnknownTracker):
		u.fail(w, r, http.StatusNotFound, "No such tracker", "Lectern links AniList, MyAnimeList and MangaUpdates.")
		return
	case errors.Is(err, store.ErrNotFound):
		u.refuse(w, r, err, "No such entry", "This Series has no entry on that tracker.")
		return
	case err != nil:
		u.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, withMsg(seriesPath(key), "tracker-unmapped")+"#trackers", http.StatusSeeOther)
}

// bookmarkCompleted sets or clears the Reader's completed mark, the only
// way a tracker's status becomes completed.
func (u *UI) bookmarkCompleted(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.seriesKey(w, r)
	if !ok {
		return
	}
	done := r.PostForm.Get("completed") == "1"
	err := u.trackers.SetCompleted(r.Context(), reader.ID, key, done)
	if errors.Is(err, store.ErrNotFound) {
		u.refuse(w, r, err, "No such Bookmark", "You hold no Bookmark on "+key+".")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	msg := "reading"
	if done {
		msg = "completed"
	}
	http.Redirect(w, r, withMsg(seriesPath(key), msg)+"#trackers", http.StatusSeeOther)
}

// formID is an id from a form as the API's {"id": ...} carries it: a
// string, which ParseEntryID reads like a number when it is one.
func formID(s string) []byte {
	if s == "" {
		return []byte("null")
	}
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

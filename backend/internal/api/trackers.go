package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/portability"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/tracker"
)

// Trackers serves a Reader's tracker accounts, their Bookmarks' mappings
// and the trackers' lists as imports (docs/trackers.md). The server adds
// ReaderRoutes to API.ReaderRoutes.
type Trackers struct {
	Service *tracker.Service
	Library *bookmark.Service
	Logger  *slog.Logger
}

// ReaderRoutes adds the Reader's tracker routes. Linking through an
// authorisation page is the web UI's (it ends in a browser redirect).
func (t *Trackers) ReaderRoutes(r chi.Router) {
	r.Get("/trackers", t.accounts)
	r.Post("/trackers/{tracker}", t.link)
	r.Delete("/trackers/{tracker}", t.unlink)
	r.Post("/trackers/{tracker}/import", t.importList)
	r.Get("/bookmarks/{key}/trackers", t.bookmark)
	r.Put("/bookmarks/{key}/completed", t.completed)
	r.Get("/bookmarks/{key}/trackers/{tracker}/search", t.search)
	r.Put("/bookmarks/{key}/trackers/{tracker}", t.mapEntry)
	r.Delete("/bookmarks/{key}/trackers/{tracker}", t.unmapEntry)
}

func (t *Trackers) log() *slog.Logger {
	if t.Logger != nil {
		return t.Logger
	}
	return slog.Default()
}

// fail answers the trackers' errors: the tracker's own sentinels with their
// status and their full text (what the tracker said), a missing Bookmark
// with 404, anything else as the server's failure.
func (t *Trackers) fail(w http.ResponseWriter, r *http.Request, key string, err error) {
	for _, sentinel := range []error{tracker.ErrUnknownTracker, tracker.ErrNoSecretKey, tracker.ErrNotConfigured, tracker.ErrNotLinked,
		tracker.ErrBadEntryID, tracker.ErrTokenRefused, tracker.ErrBadState, tracker.ErrTrackerDown} {
		if errors.Is(err, sentinel) {
			face.Refuse(w, sentinel, err.Error())
			return
		}
	}
	switch {
	case errors.Is(err, store.ErrNotFound) && key != "":
		face.Refuse(w, err, "no bookmark "+key)
	case errors.Is(err, portability.ErrTooMany):
		face.Refuse(w, err, err.Error())
	default:
		face.ServerError(w, r, t.log(), err)
	}
}

func (t *Trackers) accounts(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	list, err := t.Service.Accounts(r.Context(), reader.ID)
	if err != nil {
		t.fail(w, r, "", err)
		return
	}
	if list == nil {
		list = []tracker.Account{}
	}
	face.WriteJSON(w, http.StatusOK, list)
}

// linkRequest is POST /api/trackers/{tracker}: AniList takes the token of
// its implicit grant, MangaUpdates the account's name and password.
type linkRequest struct {
	Token    string `json:"token"`
	Username string `json:"username"`
	Password string `json:"password"`
}

func (t *Trackers) link(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	name := chi.URLParam(r, "tracker")
	if !tracker.Known(name) {
		t.fail(w, r, "", tracker.ErrUnknownTracker)
		return
	}
	var req linkRequest
	if status, msg := Decode(w, r, &req); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	var user tracker.User
	var err error
	switch name {
	case tracker.AniList:
		user, err = t.Service.LinkToken(r.Context(), reader.ID, name, req.Token)
	case tracker.MangaUpdates:
		user, err = t.Service.LinkPassword(r.Context(), reader.ID, name, req.Username, req.Password)
	default:
		face.WriteError(w, http.StatusUnprocessableEntity, tracker.Label(name)+" is linked through its authorisation page: Settings → Trackers in the web library")
		return
	}
	if err != nil {
		t.fail(w, r, "", err)
		return
	}
	face.WriteJSON(w, http.StatusOK, map[string]any{
		"tracker": name, "linked": true, "user_id": user.ID, "user_name": user.Name,
		// The list import is offered once the link stands.
		"import": "/api/trackers/" + name + "/import?dry_run=true",
	})
}

func (t *Trackers) unlink(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	if err := t.Service.Unlink(r.Context(), reader.ID, chi.URLParam(r, "tracker")); err != nil {
		t.fail(w, r, "", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (t *Trackers) importList(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	opts, err := importOptions(r.URL.Query())
	if err != nil {
		face.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	im := &portability.Importer{Bookmarks: t.Library, Logger: t.log()}
	rep, err := t.Service.ImportList(r.Context(), im, reader.ID, chi.URLParam(r, "tracker"), opts)
	if err != nil {
		t.fail(w, r, "", err)
		return
	}
	writeReport(w, rep)
}

func (t *Trackers) bookmark(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	out, err := t.Service.Bookmark(r.Context(), reader.ID, key)
	if err != nil {
		t.fail(w, r, key, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, out)
}

func (t *Trackers) completed(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	var req struct {
		Completed *bool `json:"completed"`
	}
	if status, msg := Decode(w, r, &req); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	if req.Completed == nil {
		face.WriteError(w, http.StatusUnprocessableEntity, "completed is required: true or false")
		return
	}
	if err := t.Service.SetCompleted(r.Context(), reader.ID, key, *req.Completed); err != nil {
		t.fail(w, r, key, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, map[string]any{"key": key, "completed": *req.Completed})
}

func (t *Trackers) search(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	b, err := t.Library.Get(r.Context(), reader.ID, key)
	if err != nil {
		t.fail(w, r, key, err)
		return
	}
	q := r.URL.Query().Get("q")
	if q == "" {
		q = b.Title
	}
	list, err := t.Service.Search(r.Context(), reader.ID, chi.URLParam(r, "tracker"), q)
	if err != nil {
		t.fail(w, r, key, err)
		return
	}
	if list == nil {
		list = []tracker.Candidate{}
	}
	face.WriteJSON(w, http.StatusOK, map[string]any{"query": q, "candidates": list})
}

// mapRequest is PUT /api/bookmarks/{key}/trackers/{tracker}.
type mapRequest struct {
	// ID is a number or a string, as the tracker names its entries (see
	// tracker.ParseEntryID).
	ID    json.RawMessage `json:"id"`
	Title string          `json:"title"`
}

func (t *Trackers) mapEntry(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	var req mapRequest
	if status, msg := Decode(w, r, &req); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	v, created, err := t.Service.Map(r.Context(), reader.ID, key, chi.URLParam(r, "tracker"), req.ID, req.Title)
	if err != nil {
		t.fail(w, r, key, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	face.WriteJSON(w, status, v)
}

func (t *Trackers) unmapEntry(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	err = t.Service.Unmap(r.Context(), reader.ID, key, chi.URLParam(r, "tracker"))
	if errs.CodeOf(err) == errs.NotFound && !errors.Is(err, tracker.ErrUnknownTracker) {
		face.Refuse(w, err, "no "+tracker.Label(chi.URLParam(r, "tracker"))+" entry is mapped to "+key)
		return
	}
	if err != nil {
		t.fail(w, r, key, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

package api

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Works (docs/api.md "Works"): a Reader's own links between their
// Bookmarks of one story. Another Reader's Work answers 404, as a Work
// that does not exist does.

// workRefusalBody is a 422 about keys: the words and the keys, so a client
// can mark them.
type workRefusalBody struct {
	Error string   `json:"error"`
	Keys  []string `json:"keys"`
}

// refuseWork answers a Work change's error: 422 naming keys, 404 for a Work
// or member that is not there, 500/503 otherwise.
func (a *API) refuseWork(w http.ResponseWriter, r *http.Request, err error) {
	var ref *store.WorkRefusal
	switch {
	case errors.As(err, &ref):
		keys := ref.Keys
		if keys == nil {
			keys = []string{}
		}
		face.WriteJSON(w, http.StatusUnprocessableEntity, workRefusalBody{Error: ref.Msg, Keys: keys})
	case errors.Is(err, store.ErrNoWork):
		face.WriteError(w, http.StatusNotFound, "no such work")
	case errs.CodeOf(err) == errs.NotFound:
		face.WriteError(w, http.StatusNotFound, errs.MessageOf(err))
	default:
		a.serverError(w, r, err)
	}
}

// checkKeys refuses malformed Series keys before any query, naming them.
func checkKeys(keys []string) error {
	var bad []string
	for _, k := range keys {
		if _, _, ok := latest.SplitKey(k); !ok || len(k) > 300 {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		return &store.WorkRefusal{Msg: "not a Series key (site:slug): " + strings.Join(bad, ", "), Keys: bad}
	}
	return nil
}

func (a *API) listWorks(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	works, err := a.Library.Works(r.Context(), reader.ID)
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, works)
}

func (a *API) createWork(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	var req struct {
		Keys []string `json:"keys"`
	}
	if status, msg := Decode(w, r, &req); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	if len(req.Keys) > 100 {
		face.WriteError(w, http.StatusUnprocessableEntity, "a work links at most 100 bookmarks")
		return
	}
	if err := checkKeys(req.Keys); err != nil {
		a.refuseWork(w, r, err)
		return
	}
	work, err := a.Library.Link(r.Context(), reader.ID, req.Keys)
	if err != nil {
		a.refuseWork(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusCreated, work)
}

func (a *API) getWork(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	work, err := a.Library.GetWork(r.Context(), reader.ID, chi.URLParam(r, "id"))
	if err != nil {
		a.refuseWork(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, work)
}

func (a *API) addWorkKey(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	var req struct {
		Key string `json:"key"`
	}
	if status, msg := Decode(w, r, &req); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	if err := checkKeys([]string{req.Key}); err != nil {
		a.refuseWork(w, r, err)
		return
	}
	work, err := a.Library.AddToWork(r.Context(), reader.ID, chi.URLParam(r, "id"), req.Key)
	if err != nil {
		a.refuseWork(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, work)
}

func (a *API) removeWorkKey(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := url.PathUnescape(chi.URLParam(r, "key"))
	if err != nil {
		face.WriteError(w, http.StatusNotFound, "malformed key")
		return
	}
	id := chi.URLParam(r, "id")
	dissolved, err := a.Library.Unlink(r.Context(), reader.ID, id, key)
	if err != nil {
		a.refuseWork(w, r, err)
		return
	}
	if dissolved {
		// The Work is no more: say so rather than answer a Work of one.
		face.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "dissolved": true, "keys": []string{}})
		return
	}
	work, err := a.Library.GetWork(r.Context(), reader.ID, id)
	if err != nil {
		a.refuseWork(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, struct {
		Dissolved bool `json:"dissolved"`
		bookmark.Work
	}{false, work})
}

func (a *API) moveProgress(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	var req struct {
		Moves []store.ProgressMove `json:"moves"`
	}
	if status, msg := Decode(w, r, &req); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	if len(req.Moves) > 1000 {
		face.WriteError(w, http.StatusUnprocessableEntity, "at most 1000 moves at once")
		return
	}
	var keys []string
	for _, m := range req.Moves {
		keys = append(keys, m.From, m.To)
	}
	if err := checkKeys(keys); err != nil {
		a.refuseWork(w, r, err)
		return
	}
	if err := a.Library.MoveProgress(r.Context(), reader.ID, req.Moves); err != nil {
		a.refuseWork(w, r, err)
		return
	}
	works, err := a.Library.Works(r.Context(), reader.ID)
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, works)
}

// workSuggestions answers the Reader's suggested pairs, or, with ?key=
// (and the page's &title=), the Bookmarks that look like the story of the
// Series page the panel is on.
func (a *API) workSuggestions(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	q := r.URL.Query()
	if key := q.Get("key"); key != "" || q.Has("title") {
		if err := checkKeys([]string{key}); err != nil {
			a.refuseWork(w, r, err)
			return
		}
		title := q.Get("title")
		if len(title) > 4*bookmark.MaxLabel {
			face.WriteError(w, http.StatusUnprocessableEntity, "title is too long")
			return
		}
		out, err := a.Library.SuggestFor(r.Context(), reader.ID, key, title)
		var inv *bookmark.InvalidError
		if errors.As(err, &inv) {
			face.WriteError(w, http.StatusUnprocessableEntity, inv.Msg)
			return
		}
		if err != nil {
			a.serverError(w, r, err)
			return
		}
		face.WriteJSON(w, http.StatusOK, out)
		return
	}
	out, err := a.Library.Suggestions(r.Context(), reader.ID)
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, out)
}

// dismissSuggestion records {"keys": [a, b]} as not one story.
func (a *API) dismissSuggestion(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	var req struct {
		Keys []string `json:"keys"`
	}
	if status, msg := Decode(w, r, &req); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	if len(req.Keys) != 2 {
		a.refuseWork(w, r, &store.WorkRefusal{Msg: "dismiss one pair: send two keys", Keys: req.Keys})
		return
	}
	if err := checkKeys(req.Keys); err != nil {
		a.refuseWork(w, r, err)
		return
	}
	if err := a.Library.Dismiss(r.Context(), reader.ID, req.Keys[0], req.Keys[1]); err != nil {
		a.refuseWork(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

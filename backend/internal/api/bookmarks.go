package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// wireVersion changes when the shape or meaning of a Bookmark object
// changes, so a cached body from an older server is never revalidated.
const wireVersion = "1"

func kindParam(r *http.Request) (string, error) {
	k := r.URL.Query().Get("kind")
	switch k {
	case "", string(latest.Manga), string(latest.Novel):
		return k, nil
	}
	return "", fmt.Errorf("kind must be manga or novel, not %q", k)
}

func (a *API) listBookmarks(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	kind, err := kindParam(r)
	if err != nil {
		face.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	// The ETag comes from a cheap summary query, so a panel refresh that
	// changes nothing costs one aggregate and no body.
	count, newest, err := a.Store.BookmarksVersion(r.Context(), reader.ID, kind)
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s|%s|%d|%s|%d|%d", wireVersion, a.Library.BaseURL, reader.ID, kind, count, newest.UnixMicro()))
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	w.Header().Set("ETag", etag)
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	list, err := a.Library.List(r.Context(), reader.ID, kind)
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, list)
}

// etagMatches implements If-None-Match's list and weak comparison.
func etagMatches(header, etag string) bool {
	for _, part := range strings.Split(header, ",") {
		part = strings.TrimSpace(part)
		if part == "*" || part == etag || part == "W/"+etag {
			return true
		}
	}
	return false
}

// keyParam reads {key}, which may arrive percent-encoded.
func keyParam(r *http.Request) (string, error) {
	raw := chi.URLParam(r, "key")
	key, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("malformed key %q", raw)
	}
	if _, _, ok := latest.SplitKey(key); !ok || len(key) > 300 {
		return "", fmt.Errorf("malformed key %q: a Series key looks like site:slug", key)
	}
	return key, nil
}

func (a *API) getBookmark(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	b, err := a.Library.Get(r.Context(), reader.ID, key)
	if errs.CodeOf(err) == errs.NotFound {
		face.Refuse(w, err, "no bookmark "+key)
		return
	}
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, b)
}

func (a *API) putBookmark(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	var req bookmark.PutRequest
	if status, msg := Decode(w, r, &req); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	b, created, err := a.Library.Put(r.Context(), reader.ID, key, req)
	var inv *bookmark.InvalidError
	if errors.As(err, &inv) {
		face.WriteJSON(w, face.Status(err), face.ErrorBody{Error: inv.Msg, ExpectedKey: inv.ExpectedKey})
		return
	}
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	face.WriteJSON(w, status, b)
}

func (a *API) deleteBookmark(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	err = a.Library.Delete(r.Context(), reader.ID, key)
	if errs.CodeOf(err) == errs.NotFound {
		face.Refuse(w, err, "no bookmark "+key)
		return
	}
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) resolve(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("url")
	if raw == "" {
		face.WriteError(w, http.StatusBadRequest, "url is required: /api/resolve?url=<a Site page>")
		return
	}
	ref, err := a.Library.Registry.Resolve(raw)
	switch {
	case errors.Is(err, latest.ErrBadURL):
		face.WriteError(w, http.StatusBadRequest, err.Error())
	case err != nil:
		face.WriteError(w, http.StatusUnprocessableEntity, err.Error())
	default:
		face.WriteJSON(w, http.StatusOK, ref)
	}
}

package api

import (
	"context"
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
// 2: Works (the work_* fields, gone, gone_reason) and short Cover references.
const wireVersion = "2"

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
	// The list version came with the token, in the one read authentication
	// makes: a panel refresh that changed nothing costs that read and no
	// body. The version is Postgres', so every replica answers alike.
	enc := face.Negotiate(r)
	etag := face.ETagFor(a.listTag(reader.ID, kind, reader.ListVersion), enc)
	w.Header().Set("ETag", etag)
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	key := listKey{Reader: reader.ID, Kind: kind, Version: reader.ListVersion, Enc: enc}
	body, ok := a.ListCache.Get(key)
	if !ok {
		if key, body, err = a.encodeList(r.Context(), key); err != nil {
			a.serverError(w, r, err)
			return
		}
		// The list read may be newer than the version the token came with.
		w.Header().Set("ETag", face.ETagFor(a.listTag(reader.ID, kind, key.Version), enc))
	}
	face.WriteEncoded(w, face.JSONType, enc, body)
}

// encodeList reads, encodes and compresses a Reader's list, and caches it
// under the version it was read at. Concurrent misses for one list share
// one read.
func (a *API) encodeList(ctx context.Context, k listKey) (listKey, []byte, error) {
	type built struct {
		key  listKey
		body []byte
	}
	v, err, _ := a.listFlight.Do(fmt.Sprint(k.Reader, "|", k.Kind, "|", k.Version, "|", k.Enc), func() (any, error) {
		// Callers share this read: one leaving must not fail the others.
		version, list, err := a.Library.ListAt(context.WithoutCancel(ctx), k.Reader, k.Kind)
		if err != nil {
			return nil, err
		}
		body, err := face.JSONBody(list)
		if err != nil {
			return nil, fmt.Errorf("encode bookmarks: %w", err)
		}
		if body, err = face.Encode(k.Enc, body); err != nil {
			return nil, fmt.Errorf("encode bookmarks: %w", err)
		}
		k.Version = version
		a.ListCache.Put(k, body)
		return built{k, body}, nil
	})
	if err != nil {
		return listKey{}, nil, err
	}
	b := v.(built)
	return b.key, b.body, nil
}

// listTag names a Reader's list at a version; the wire version and the
// base URL are in it because both change the bytes of every object.
func (a *API) listTag(readerID int64, kind string, version int64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s|%s|%d|%s|%d", wireVersion, a.Library.BaseURL, readerID, kind, version))
	return hex.EncodeToString(sum[:12])
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

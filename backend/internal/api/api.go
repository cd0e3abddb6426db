// Package api is the JSON API the userscripts and other clients use: a
// Reader's Bookmarks, URL resolution, and the Owner's controls. Every answer
// is a flat JSON object or array; every error is {"error": "..."} with a 4xx
// that names the problem, never a 500 for bad input.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"golang.org/x/sync/singleflight"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// MaxBody is the largest request body accepted.
const MaxBody = 64 << 10

// API serves /api.
type API struct {
	Store   *store.Store
	Library *bookmark.Service
	Logger  *slog.Logger
	// Version is sent as X-Lectern-Version so a client can show which
	// server it talks to.
	Version string
	// Routes for authenticated Readers and for the Owner (under /api/admin),
	// added by the features that own them (Poll, Covers, Archive, ...), so
	// each feature's endpoints live beside its code.
	ReaderRoutes []func(r chi.Router)
	AdminRoutes  []func(r chi.Router)
	// ListCache keeps encoded Bookmark lists (LIST_CACHE_BYTES); nil
	// encodes every full body afresh.
	ListCache *ListCache

	listFlight singleflight.Group
	tokens     tokenReads
}

// Routes returns the /api router.
func (a *API) Routes() http.Handler {
	r := chi.NewRouter()
	r.Use(a.headers)
	r.Use(face.Compress)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		face.WriteError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		face.WriteError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
	})
	r.Group(func(r chi.Router) {
		r.Use(a.authenticate)
		r.Get("/bookmarks", a.listBookmarks)
		r.Get("/bookmarks/{key}", a.getBookmark)
		r.Put("/bookmarks/{key}", a.putBookmark)
		r.Delete("/bookmarks/{key}", a.deleteBookmark)
		r.Get("/resolve", a.resolve)
		r.Get("/works", a.listWorks)
		r.Post("/works", a.createWork)
		r.Get("/works/suggestions", a.workSuggestions)
		r.Post("/works/suggestions/dismiss", a.dismissSuggestion)
		r.Post("/works/move", a.moveProgress)
		r.Get("/works/{id}", a.getWork)
		r.Post("/works/{id}/keys", a.addWorkKey)
		r.Delete("/works/{id}/keys/{key}", a.removeWorkKey)
		for _, add := range a.ReaderRoutes {
			add(r)
		}
		r.Route("/admin", func(r chi.Router) {
			r.Use(requireOwner)
			for _, add := range a.AdminRoutes {
				add(r)
			}
		})
	})
	return r
}

func (a *API) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Lectern-Version", a.Version)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

func (a *API) log() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

// serverError answers a failure the request did not cause (face.ServerError):
// 500 without details, or 503 while the database is unreachable.
func (a *API) serverError(w http.ResponseWriter, r *http.Request, err error) {
	face.ServerError(w, r, a.log(), err)
}

// Decode reads a JSON body into v: 413 over MaxBody, 400 for anything that
// is not one JSON object. Unknown fields are ignored so older and newer
// clients keep working (the wire only grows).
func Decode(w http.ResponseWriter, r *http.Request, v any) (status int, msg string) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return http.StatusUnsupportedMediaType, "Content-Type must be application/json"
	}
	body := http.MaxBytesReader(w, r.Body, MaxBody)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooBig):
			return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", MaxBody)
		case errors.Is(err, io.EOF):
			return http.StatusBadRequest, "request body is empty: send a JSON object"
		case errors.As(err, &syntax):
			return http.StatusBadRequest, fmt.Sprintf("malformed JSON at byte %d: %v", syntax.Offset, err)
		case errors.As(err, &typ):
			if typ.Field != "" {
				return http.StatusBadRequest, fmt.Sprintf("malformed JSON: %s must be a %s, not %s", typ.Field, typ.Type, typ.Value)
			}
			return http.StatusBadRequest, "malformed JSON: the body must be a JSON object"
		default:
			return http.StatusBadRequest, "malformed JSON: " + err.Error()
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", MaxBody)
		}
		return http.StatusBadRequest, "malformed JSON: unexpected data after the object"
	}
	return 0, ""
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Archive serves the archive's endpoints: a Reader's requests, status,
// "keep archiving" switch and exports, and the Owner's view of every
// archive job with cancel and retry, and of each Reader's switch and cap.
// The server adds ReaderRoutes to API.ReaderRoutes and AdminRoutes to
// API.AdminRoutes.
type Archive struct {
	Service *archive.Service
	Logger  *slog.Logger
}

// ReaderRoutes adds the Reader's archive routes.
func (ar *Archive) ReaderRoutes(r chi.Router) {
	r.Get("/series/{key}/archive", ar.status)
	r.Post("/series/{key}/archive", ar.request)
	r.Put("/series/{key}/archive/follow", ar.follow)
	r.Get("/series/{key}/archive.cbz", ar.cbz)
	r.Get("/series/{key}/archive.epub", ar.epub)
}

// AdminRoutes adds the Owner's archive routes (under /api/admin).
func (ar *Archive) AdminRoutes(r chi.Router) {
	r.Get("/archive/jobs", ar.jobs)
	r.Post("/archive/jobs/{id}/cancel", ar.cancelChapter)
	r.Post("/archive/jobs/{id}/retry", ar.retryChapter)
	r.Post("/archive/requests/{id}/cancel", ar.cancelRequest)
	r.Get("/archive/readers", ar.readers)
	r.Put("/archive/readers/{id}", ar.setReader)
}

func (ar *Archive) log() *slog.Logger {
	if ar.Logger != nil {
		return ar.Logger
	}
	return slog.Default()
}

func (ar *Archive) serverError(w http.ResponseWriter, r *http.Request, err error) {
	face.ServerError(w, r, ar.log(), err)
}

// fail answers the archive's errors with the status of their code
// (face.Status) in the API's words; a Series the Reader does not hold is a
// 404 whether or not it exists.
func (ar *Archive) fail(w http.ResponseWriter, r *http.Request, key string, err error) {
	switch {
	case errors.Is(err, archive.ErrNotHeld):
		face.Refuse(w, err, "you hold no Bookmark on "+key)
	case errors.Is(err, archive.ErrNotAllowed), errors.Is(err, archive.ErrCapReached),
		errors.Is(err, archive.ErrBadScope), errors.Is(err, archive.ErrBadSelection):
		face.Refuse(w, err, err.Error())
	case errors.Is(err, archive.ErrNothingArchived):
		face.Refuse(w, err, "no archived chapter of "+key+" matches")
	case errors.Is(err, archive.ErrWrongLibrary):
		face.Refuse(w, err, err.Error()+": download archive.cbz for manga and archive.epub for novels")
	case errors.Is(err, archive.ErrNotFound):
		face.Refuse(w, err, err.Error())
	case errors.Is(err, archive.ErrNotQueued):
		face.Refuse(w, err, "that job is not in a state that allows this")
	default:
		ar.serverError(w, r, err)
	}
}

func (ar *Archive) status(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	st, err := ar.Service.StatusOf(r.Context(), reader, key)
	if err != nil {
		ar.fail(w, r, key, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, st)
}

// archiveRequest is the body of POST /api/series/{key}/archive: the scope
// as text ("last 5"), or its kind with count (first, last) or chapter
// (chapter, after).
type archiveRequest struct {
	Scope   string   `json:"scope"`
	Count   *int     `json:"count"`
	Chapter *float64 `json:"chapter"`
}

func (ar *Archive) request(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	var body archiveRequest
	if status, msg := Decode(w, r, &body); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	text := body.Scope
	switch {
	case body.Count != nil:
		text += " " + strconv.Itoa(*body.Count)
	case body.Chapter != nil:
		if math.IsNaN(*body.Chapter) || math.IsInf(*body.Chapter, 0) {
			face.WriteError(w, http.StatusUnprocessableEntity, "chapter must be a number")
			return
		}
		text += " " + strconv.FormatFloat(*body.Chapter, 'f', -1, 64)
	}
	scope, err := archive.ParseScope(text)
	if err != nil {
		ar.fail(w, r, key, err)
		return
	}
	req, err := ar.Service.Request(r.Context(), reader, key, scope)
	if err != nil {
		ar.fail(w, r, key, err)
		return
	}
	w.Header().Set("Location", "/api/series/"+url.PathEscape(key)+"/archive")
	face.WriteJSON(w, http.StatusAccepted, archive.RequestStatus{
		ID: req.ID, Scope: req.Scope, State: req.State, Mine: true, CreatedAt: req.CreatedAt.UTC(),
	})
}

func (ar *Archive) follow(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	var body struct {
		Follow *bool `json:"follow"`
	}
	if status, msg := Decode(w, r, &body); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	if body.Follow == nil {
		face.WriteError(w, http.StatusUnprocessableEntity, "follow is required: true or false")
		return
	}
	if err := ar.Service.SetFollow(r.Context(), reader, key, *body.Follow); err != nil {
		ar.fail(w, r, key, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, map[string]any{"key": key, "following": *body.Follow})
}

func (ar *Archive) cbz(w http.ResponseWriter, r *http.Request) {
	ar.export(w, r, latest.Manga)
}

func (ar *Archive) epub(w http.ResponseWriter, r *http.Request) {
	ar.export(w, r, latest.Novel)
}

func (ar *Archive) export(w http.ResponseWriter, r *http.Request, kind latest.Kind) {
	reader, _ := face.ReaderFrom(r.Context())
	key, err := keyParam(r)
	if err != nil {
		face.WriteError(w, http.StatusNotFound, err.Error())
		return
	}
	if err := ar.Service.CanRead(r.Context(), reader, key); err != nil {
		ar.fail(w, r, key, err)
		return
	}
	q := r.URL.Query()
	sel, err := archive.ParseSelection(q.Get("chapters"), q.Get("ids"))
	if err != nil {
		ar.fail(w, r, key, err)
		return
	}
	exp, err := ar.Service.PlanExport(r.Context(), key, sel, kind)
	if err != nil {
		ar.fail(w, r, key, err)
		return
	}
	face.ServeExport(w, r, exp, kind, ar.log())
}

func (ar *Archive) jobs(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	switch state {
	case "", store.ArchiveQueued, store.ArchiveArchived, store.ArchiveFailed, store.ArchiveCancelled:
	default:
		face.WriteError(w, http.StatusBadRequest, "state must be queued, archived, failed or cancelled, not "+state)
		return
	}
	limit := 200
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5000 {
			face.WriteError(w, http.StatusBadRequest, "limit must be a whole number from 1 to 5000")
			return
		}
		limit = n
	}
	jobs, err := ar.Service.Jobs(r.Context(), state, limit)
	if err != nil {
		ar.serverError(w, r, err)
		return
	}
	face.WriteJSON(w, http.StatusOK, jobs)
}

func idParam(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	return id, err == nil && id > 0
}

func (ar *Archive) cancelChapter(w http.ResponseWriter, r *http.Request) {
	ar.ownerAction(w, r, ar.Service.CancelChapter, "cancelled")
}

func (ar *Archive) retryChapter(w http.ResponseWriter, r *http.Request) {
	ar.ownerAction(w, r, ar.Service.RetryChapter, "queued")
}

func (ar *Archive) cancelRequest(w http.ResponseWriter, r *http.Request) {
	ar.ownerAction(w, r, ar.Service.CancelRequest, "cancelled")
}

func (ar *Archive) ownerAction(w http.ResponseWriter, r *http.Request, act func(ctx context.Context, id int64) error, state string) {
	id, ok := idParam(r)
	if !ok {
		face.WriteError(w, http.StatusNotFound, "no such archive job: the id must be a positive whole number")
		return
	}
	if err := act(r.Context(), id); err != nil {
		ar.fail(w, r, "", err)
		return
	}
	me, _ := face.ReaderFrom(r.Context())
	ar.log().InfoContext(r.Context(), "archive job "+state+" by the Owner", "id", id, "by", me.ID)
	face.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "state": state})
}

// ArchiveReaderJSON is one Reader in GET /api/admin/archive/readers.
type ArchiveReaderJSON struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Owner       bool   `json:"owner"`
	Enabled     bool   `json:"enabled"`
	MaxChapters *int   `json:"max_chapters"`
	Charged     int    `json:"chapters_charged"`
	Archived    int    `json:"chapters_archived"`
	Bytes       int64  `json:"bytes"`
	Following   int    `json:"following"`
}

func (ar *Archive) readers(w http.ResponseWriter, r *http.Request) {
	list, err := ar.Service.Store.ListArchiveReaders(r.Context())
	if err != nil {
		ar.serverError(w, r, err)
		return
	}
	out := make([]ArchiveReaderJSON, 0, len(list))
	for _, a := range list {
		out = append(out, ArchiveReaderJSON{ID: a.ID, Name: a.Name, Owner: a.IsOwner, Enabled: a.Enabled, MaxChapters: a.MaxChapters,
			Charged: a.Charged, Archived: a.Archived, Bytes: a.Bytes, Following: a.Following})
	}
	face.WriteJSON(w, http.StatusOK, out)
}

// MaxArchiveCap bounds a Reader's cap of chapters.
const MaxArchiveCap = 10_000_000

func (ar *Archive) setReader(w http.ResponseWriter, r *http.Request) {
	id, ok := idParam(r)
	if !ok {
		face.WriteError(w, http.StatusNotFound, "no such Reader: the id must be a positive whole number")
		return
	}
	var body struct {
		Enabled     *bool           `json:"enabled"`
		MaxChapters json.RawMessage `json:"max_chapters"`
	}
	if status, msg := Decode(w, r, &body); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	if body.Enabled == nil {
		face.WriteError(w, http.StatusUnprocessableEntity, "enabled is required: true or false")
		return
	}
	var capp *int
	if len(body.MaxChapters) > 0 && string(body.MaxChapters) != "null" {
		var n int
		if err := json.Unmarshal(body.MaxChapters, &n); err != nil || n < 0 || n > MaxArchiveCap {
			face.WriteError(w, http.StatusUnprocessableEntity, fmt.Sprintf("max_chapters must be null (no cap) or a whole number from 0 to %d", MaxArchiveCap))
			return
		}
		capp = &n
	}
	err := ar.Service.Store.SetArchiveReader(r.Context(), id, *body.Enabled, capp)
	if errs.CodeOf(err) == errs.NotFound {
		face.Refuse(w, err, "no such Reader")
		return
	}
	if err != nil {
		ar.serverError(w, r, err)
		return
	}
	me, _ := face.ReaderFrom(r.Context())
	ar.log().InfoContext(r.Context(), "archive allowance set", "reader", id, "enabled", *body.Enabled, "max_chapters", capp, "by", me.ID)
	face.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "enabled": *body.Enabled, "max_chapters": capp})
}

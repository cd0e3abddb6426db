package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Notify serves a Reader's push notification targets, as the settings
// page manages them (docs/notifications.md). The server adds ReaderRoutes
// to API.ReaderRoutes.
type Notify struct {
	Service *notify.Service
	Logger  *slog.Logger
}

// ReaderRoutes adds the Reader's notification routes.
func (n *Notify) ReaderRoutes(r chi.Router) {
	r.Get("/notify/targets", n.list)
	r.Post("/notify/targets", n.create)
	r.Delete("/notify/targets/{id}", n.delete)
	r.Post("/notify/targets/{id}/test", n.test)
	r.Put("/notify/mutes/{key}", n.mute)
	r.Delete("/notify/mutes/{key}", n.unmute)
}

// targetJSON is a target on the wire; url has its secret parts masked.
type targetJSON struct {
	ID         int64      `json:"id"`
	Service    string     `json:"service"`
	URL        string     `json:"url"`
	Name       string     `json:"name"`
	Mode       string     `json:"mode"`
	Threshold  int        `json:"threshold"`
	Digest     string     `json:"digest"`
	DigestHour int        `json:"digest_hour"`
	TimeZone   string     `json:"time_zone"`
	Signed     bool       `json:"signed"`
	CreatedAt  time.Time  `json:"created_at"`
	Sent       int        `json:"sent"`
	Pending    int        `json:"pending"`
	Failed     int        `json:"failed"`
	LastSentAt *time.Time `json:"last_sent_at"`
	LastError  string     `json:"last_error"`
	// SigningSecret is the whsec_ secret of a signed webhook, in the
	// answer to the POST that made it only.
	SigningSecret string `json:"signing_secret,omitempty"`
}

func toTargetJSON(t store.Target) targetJSON {
	return targetJSON{ID: t.ID, Service: t.Kind, URL: t.URL, Name: t.Name, Mode: t.Mode, Threshold: t.Threshold,
		Digest: t.Digest, DigestHour: t.DigestHour, TimeZone: t.TimeZone, Signed: t.SigningSecret != nil,
		CreatedAt: t.CreatedAt, Sent: t.Sent, Pending: t.Pending, Failed: t.Failed, LastSentAt: t.LastSentAt, LastError: t.LastError}
}

func (n *Notify) log() *slog.Logger {
	if n.Logger != nil {
		return n.Logger
	}
	return slog.Default()
}

func (n *Notify) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrConflict):
		face.Refuse(w, err, "that target is in your list already")
	case errors.Is(err, store.ErrNotFound):
		face.Refuse(w, err, "no such notification target")
	case face.Refused(err):
		face.Refuse(w, err, err.Error())
	default:
		face.ServerError(w, r, n.log(), err)
	}
}

func (n *Notify) list(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	ts, err := n.Service.Store.ListTargets(r.Context(), reader.ID)
	if err != nil {
		n.fail(w, r, err)
		return
	}
	out := make([]targetJSON, 0, len(ts))
	for _, t := range ts {
		out = append(out, toTargetJSON(t))
	}
	face.WriteJSON(w, http.StatusOK, out)
}

func (n *Notify) create(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	var spec notify.TargetSpec
	if status, msg := Decode(w, r, &spec); status != 0 {
		face.WriteError(w, status, msg)
		return
	}
	c, err := n.Service.AddTarget(r.Context(), reader.ID, spec)
	if err != nil {
		n.fail(w, r, err)
		return
	}
	out := toTargetJSON(c.Target)
	out.SigningSecret = c.SigningSecret
	w.Header().Set("Location", "/api/notify/targets/"+strconv.FormatInt(c.ID, 10))
	face.WriteJSON(w, http.StatusCreated, out)
}

func targetID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		face.WriteError(w, http.StatusNotFound, "no such notification target")
		return 0, false
	}
	return id, true
}

func (n *Notify) delete(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	id, ok := targetID(w, r)
	if !ok {
		return
	}
	if err := n.Service.Store.DeleteTarget(r.Context(), reader.ID, id); err != nil {
		n.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// testJSON is the Test button's outcome: whether the service took the
// sample, and what it answered.
type testJSON struct {
	OK     bool   `json:"ok"`
	Status int    `json:"status"`
	Answer string `json:"answer"`
	Error  string `json:"error,omitempty"`
}

// test sends a sample synchronously. A service that refuses it is still a
// 200 here: the request to Lectern worked, and the answer says what the
// service said.
func (n *Notify) test(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	id, ok := targetID(w, r)
	if !ok {
		return
	}
	reply, err := n.Service.SendTest(r.Context(), reader, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, notify.ErrNoSecretKey) {
		n.fail(w, r, err)
		return
	}
	out := testJSON{OK: err == nil, Status: reply.Status, Answer: reply.Body}
	if err != nil {
		out.Error = err.Error()
	}
	face.WriteJSON(w, http.StatusOK, out)
}

func (n *Notify) mute(w http.ResponseWriter, r *http.Request)   { n.setMute(w, r, true) }
func (n *Notify) unmute(w http.ResponseWriter, r *http.Request) { n.setMute(w, r, false) }

func (n *Notify) setMute(w http.ResponseWriter, r *http.Request, muted bool) {
	reader, _ := face.ReaderFrom(r.Context())
	key := chi.URLParam(r, "key")
	err := n.Service.Store.SetMute(r.Context(), reader.ID, key, muted)
	if errors.Is(err, store.ErrNotFound) {
		face.Refuse(w, err, "no bookmark "+key)
		return
	}
	if err != nil {
		n.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

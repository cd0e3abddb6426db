package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/notify"
)

// feedRoutes adds the private Atom feeds. They sit outside the session
// routes: a feed reader sends no cookie and no header, so the secret in
// the URL's query (never logged, unlike the path) is the credential
// (docs/notifications.md).
func (u *UI) feedRoutes(r chi.Router) {
	if u.notify != nil {
		r.Get("/feed.atom", u.feedShow)
	}
}

// feedShow serves a Reader's feed with validators: feed readers poll, and
// an unchanged feed costs them a 304.
func (u *UI) feedShow(w http.ResponseWriter, r *http.Request) {
	in, err := u.notify.Feed(r.Context(), r.URL.Query().Get("key"))
	if errors.Is(err, notify.ErrNoFeed) {
		// The same answer for a malformed, unknown or revoked secret.
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "no such feed: it may have been revoked; copy the current URL from Lectern's settings", http.StatusNotFound)
		return
	}
	if err != nil {
		u.log.ErrorContext(r.Context(), "feed failed", "err", err)
		http.Error(w, "the feed could not be built; the server log has details", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := notify.WriteAtom(&buf, in); err != nil {
		u.log.ErrorContext(r.Context(), "feed failed", "err", err)
		http.Error(w, "the feed could not be built; the server log has details", http.StatusInternalServerError)
		return
	}
	// The ETag is the body's hash: whatever changes what a feed reader
	// would see (an entry, a title, a Cover) changes it, and nothing else.
	sum := sha256.Sum256(buf.Bytes())
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	modified := in.Updated()
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Last-Modified", modified.Format(http.TimeFormat))
	// Private: the URL is a credential, no shared cache may keep the body.
	h.Set("Cache-Control", "private, no-cache")
	h.Set("X-Robots-Tag", "noindex")
	if notModified(r, etag, modified) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", notify.FeedContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// notModified applies If-None-Match, or when it is absent If-Modified-Since
// (RFC 9110 §13.2.2).
func notModified(r *http.Request, etag string, modified time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, part := range strings.Split(inm, ",") {
			part = strings.TrimSpace(part)
			if part == "*" || part == etag || part == "W/"+etag {
				return true
			}
		}
		return false
	}
	if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil {
		return !modified.After(ims)
	}
	return false
}

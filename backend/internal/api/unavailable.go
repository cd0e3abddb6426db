package api

import (
	"log/slog"
	"net/http"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

// RetryAfterUnavailable is the Retry-After of a 503 for a database outage:
// the pool reconnects on its own, so a client's retry a few seconds later
// usually succeeds.
const RetryAfterUnavailable = "5"

// internalError answers an unexpected failure: 503 with Retry-After when the
// database cannot be reached (the request may be retried as it is), else
// 500 without details. Either way the log has the error.
func internalError(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	if store.IsUnavailable(err) {
		w.Header().Set("Retry-After", RetryAfterUnavailable)
		writeError(w, http.StatusServiceUnavailable, "the database is unavailable; retry shortly")
		return
	}
	writeError(w, http.StatusInternalServerError, "internal error; the server log has details")
}

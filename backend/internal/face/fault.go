package face

import (
	"net/http"

	"github.com/lectern-reader/lectern/backend/internal/errs"
)

// RetryAfterUnavailable is the Retry-After of a 503 for a database outage:
// the pool reconnects on its own, so a client's retry a few seconds later
// usually succeeds.
const RetryAfterUnavailable = "5"

// Outage reports a database outage (CodeOf Unavailable) and sets the
// Retry-After of its 503 on w: an outage, not a bug, that a retry a few
// seconds later usually outlives.
func Outage(w http.ResponseWriter, err error) bool {
	if CodeOf(err) != errs.Unavailable {
		return false
	}
	w.Header().Set("Retry-After", RetryAfterUnavailable)
	return true
}

// FaultPage is what a web page says of a failure the request did not
// cause, for the web UI to render: the status, a heading and a sentence.
// Like ServerError it answers a database outage with 503 and Retry-After.
func FaultPage(w http.ResponseWriter, err error) (status int, heading, message string) {
	if Outage(w, err) {
		return http.StatusServiceUnavailable, "Lectern is reconnecting",
			"The database cannot be reached right now, so this request was not carried out. Try again in a few seconds."
	}
	return http.StatusInternalServerError, "Something went wrong",
		"Lectern could not finish this request; the server log has details. Try again in a moment."
}

package face

import (
	"net/http"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// statuses is the status each Code answers with, in the API and the web UI
// alike.
var statuses = map[errs.Code]int{
	errs.Internal:     http.StatusInternalServerError,
	errs.Malformed:    http.StatusBadRequest,
	errs.Unauthorized: http.StatusUnauthorized,
	errs.Forbidden:    http.StatusForbidden,
	errs.NotFound:     http.StatusNotFound,
	errs.Conflict:     http.StatusConflict,
	errs.TooLarge:     http.StatusRequestEntityTooLarge,
	errs.Invalid:      http.StatusUnprocessableEntity,
	errs.Unavailable:  http.StatusServiceUnavailable,
}

// CodeOf is errs.CodeOf with the one failure errs cannot recognise: a
// database outage (store.IsUnavailable) is Unavailable.
func CodeOf(err error) errs.Code {
	c := errs.CodeOf(err)
	if c == errs.Internal && store.IsUnavailable(err) {
		return errs.Unavailable
	}
	return c
}

// Status is the HTTP status that answers err, by its Code: 200 for nil,
// 500 for an error that names no Code.
func Status(err error) int {
	if err == nil {
		return http.StatusOK
	}
	if s, ok := statuses[CodeOf(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Refused reports an error the request caused (a 4xx), which is answered
// with what was wrong rather than logged as the server's failure.
func Refused(err error) bool {
	s := Status(err)
	return s >= 400 && s < 500
}

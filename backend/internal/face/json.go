package face

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
)

// JSONType is the Content-Type of every JSON answer.
const JSONType = "application/json; charset=utf-8"

// WriteJSON writes v as the response body.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", JSONType)
	w.WriteHeader(status)
	_ = newEncoder(w).Encode(v)
}

// JSONBody is v as WriteJSON writes it, for a body that is kept and sent
// again.
func JSONBody(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := newEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func newEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // JSON with nosniff is never rendered as HTML; keep messages readable
	return enc
}

// ErrorBody is every JSON error: {"error": "..."}.
type ErrorBody struct {
	Error string `json:"error"`
	// ExpectedKey accompanies a key that does not match series_url.
	ExpectedKey string `json:"expected_key,omitempty"`
}

// WriteError writes a JSON error.
func WriteError(w http.ResponseWriter, status int, msg string) {
	WriteJSON(w, status, ErrorBody{Error: msg})
}

// Refuse answers a refused request as JSON: the status of err's Code
// (Status) with msg, the face's words for it.
func Refuse(w http.ResponseWriter, err error, msg string) {
	WriteError(w, Status(err), msg)
}

// ServerError answers a failure the request did not cause as JSON: 503
// with Retry-After when the database cannot be reached (the request may be
// retried as it is), else 500 without details. Either way the log has the
// error.
func ServerError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	if Outage(w, err) {
		WriteError(w, http.StatusServiceUnavailable, "the database is unavailable; retry shortly")
		return
	}
	WriteError(w, http.StatusInternalServerError, "internal error; the server log has details")
}

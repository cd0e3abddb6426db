package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/portability"
)

// MaxImportBody is the body limit of POST /api/import alone, raised from
// MaxBody (64 KiB): face.MaxImportBody, which the web UI's upload form
// shares.
const MaxImportBody = face.MaxImportBody

// ImportRoutes adds POST /import?format=lectern|kenmei|urls[&dry_run=1]
// [&skip_invalid=1]; the body is the file itself. The server adds it to
// ReaderRoutes.
func (a *API) ImportRoutes(r chi.Router) {
	r.Post("/import", a.importBookmarks)
}

func (a *API) importBookmarks(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	q := r.URL.Query()
	format, err := portability.ParseFormat(q.Get("format"))
	if err != nil {
		face.Refuse(w, err, "format: "+err.Error())
		return
	}
	opts, err := importOptions(q)
	if err != nil {
		face.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxImportBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			face.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("an import file may have at most %d bytes", MaxImportBody))
			return
		}
		face.WriteError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	if len(body) == 0 {
		face.WriteError(w, http.StatusBadRequest, "request body is empty: send the file to import")
		return
	}
	im := &portability.Importer{Bookmarks: a.Library, Logger: a.log()}
	rep, err := im.Import(r.Context(), reader.ID, format, body, opts)
	switch {
	case errors.Is(err, portability.ErrTooMany), errors.Is(err, portability.ErrUnreadable), errors.Is(err, portability.ErrFormat):
		face.Refuse(w, err, err.Error())
		return
	case err != nil:
		a.serverError(w, r, err)
		return
	}
	writeReport(w, rep)
}

// writeReport answers an import's report: 422 when bad lines refused it,
// else 200.
func writeReport(w http.ResponseWriter, rep portability.Report) {
	if rep.Refused {
		// Nothing was written; the report names every bad line.
		face.WriteJSON(w, http.StatusUnprocessableEntity, refusedImport{
			Error:  fmt.Sprintf("%d line(s) cannot be imported, so nothing was imported: fix them, or send skip_invalid=true to import the other lines", len(rep.Errors)),
			Report: rep,
		})
		return
	}
	face.WriteJSON(w, http.StatusOK, rep)
}

// importOptions reads dry_run and skip_invalid.
func importOptions(q url.Values) (portability.Options, error) {
	var opts portability.Options
	var err error
	if opts.DryRun, err = boolParam(q.Get("dry_run")); err != nil {
		return opts, fmt.Errorf("dry_run: %w", err)
	}
	if opts.SkipInvalid, err = boolParam(q.Get("skip_invalid")); err != nil {
		return opts, fmt.Errorf("skip_invalid: %w", err)
	}
	return opts, nil
}

// refusedImport is the 422 body: the usual error field beside the report.
type refusedImport struct {
	Error string `json:"error"`
	portability.Report
}

func boolParam(s string) (bool, error) {
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not true or false", s)
	}
	return b, nil
}

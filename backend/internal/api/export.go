package api

import (
	"bytes"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/portability"
)

// ExportRoutes adds GET /export: every Bookmark of the caller in Lectern's
// export format (docs/portability.md), JSON by default, CSV with
// ?format=csv. The server adds it to ReaderRoutes.
func (a *API) ExportRoutes(r chi.Router) {
	r.Get("/export", a.export)
}

func (a *API) export(w http.ResponseWriter, r *http.Request) {
	reader, _ := ReaderFrom(r.Context())
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "csv" {
		writeError(w, http.StatusBadRequest, "format must be json or csv, not "+format)
		return
	}
	now := time.Now()
	exp, err := portability.Build(r.Context(), a.Store, reader.ID, a.Library.BaseURL, now)
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	// Written to a buffer first so a failure is a clean 500, not half a file.
	var buf bytes.Buffer
	ext, ctype := "json", "application/json; charset=utf-8"
	if format == "csv" {
		ext, ctype = "csv", "text/csv; charset=utf-8"
		err = exp.WriteCSV(&buf)
	} else {
		err = exp.WriteJSON(&buf)
	}
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", `attachment; filename="lectern-export-`+now.UTC().Format("2006-01-02")+`.`+ext+`"`)
	// A Reader's whole history: never kept by a shared cache.
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

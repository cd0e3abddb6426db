package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/portability"
)

// ExportRoutes adds GET /export: every Bookmark of the caller in Lectern's
// export format (docs/portability.md), JSON by default, CSV with
// ?format=csv. The server adds it to ReaderRoutes.
func (a *API) ExportRoutes(r chi.Router) {
	r.Get("/export", a.export)
}

func (a *API) export(w http.ResponseWriter, r *http.Request) {
	reader, _ := face.ReaderFrom(r.Context())
	now := time.Now()
	exp, err := portability.Build(r.Context(), a.Store, reader.ID, a.Library.BaseURL, now)
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	file, err := exp.Render(r.URL.Query().Get("format"), now)
	if errors.Is(err, portability.ErrExportFormat) {
		face.Refuse(w, err, err.Error())
		return
	}
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	file.Send(w)
}

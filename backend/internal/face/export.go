package face

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// ExportWriteTimeout bounds the writing of one export: far longer than the
// server's WriteTimeout, since a whole Series streams for a while on a slow
// link.
const ExportWriteTimeout = 2 * time.Hour

// ServeExport streams a planned export as the response, for the API and the
// web UI alike: written straight to the connection as the zip is built, so
// nothing is held whole in memory. A failure after the first byte aborts
// the connection, so the client sees a broken download, never a short file
// that looks whole.
func ServeExport(w http.ResponseWriter, r *http.Request, exp *archive.Export, kind latest.Kind, log *slog.Logger) {
	ext, ctype := "cbz", "application/vnd.comicbook+zip"
	if kind == latest.Novel {
		ext, ctype = "epub", "application/epub+zip"
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename=%q; filename*=UTF-8''%s`,
		exp.ASCIIFileName(ext), url.PathEscape(exp.FileName(ext))))
	// A Reader's archive: never kept by a shared cache.
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(ExportWriteTimeout))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	var err error
	if kind == latest.Novel {
		err = exp.WriteEPUB(r.Context(), w)
	} else {
		err = exp.WriteCBZ(r.Context(), w)
	}
	if err != nil {
		if r.Context().Err() == nil {
			key, site := exp.Series()
			log.ErrorContext(r.Context(), "archive export failed", "series", key, "site", site, "chapters", len(exp.Chapters), "err", err)
		}
		panic(http.ErrAbortHandler)
	}
}

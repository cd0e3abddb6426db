package cover

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
)

// URL is the public address of a stored Cover on the wire: base (the
// deployment's PUBLIC_BASE_URL) + "/covers/" + address + "." + extension, or
// "" while no bytes exist, so that clients can tell "no Cover yet" from a
// broken one.
func URL(base, address, contentType string) string {
	if address == "" {
		return ""
	}
	u := strings.TrimRight(base, "/") + "/covers/" + address
	if ext := imagetype.Ext(contentType); ext != "" {
		u += "." + ext
	}
	return u
}

// Handler serves GET and HEAD /covers/{address}[.ext] from a Store. It is
// public by design: an <img> can carry no credential, and one put in its URL
// would be handed to the third-party page that hosts the userscript panel.
//
// The address is taken from the last segment of the request path, so the
// handler works wherever it is mounted, and it is validated before the
// filesystem is touched. The content type is sniffed from the stored bytes:
// only confirmed images are ever stored, so no database is needed here.
type Handler struct {
	Store blob.Store
	// Logger receives failures to read the volume; nil means slog.Default().
	Logger *slog.Logger
}

// NewHandler returns the public Cover route over store.
func NewHandler(store blob.Store) *Handler { return &Handler{Store: store} }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", "default-src 'none'")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	// The escaped path, so an encoded slash or dot-dot cannot make a
	// traversal-shaped request look like a single valid segment.
	p := r.URL.EscapedPath()
	address, wantType, ok := parseName(p[strings.LastIndexByte(p, '/')+1:])
	if !ok {
		writeError(w, http.StatusNotFound, "cover not found")
		return
	}
	f, err := h.Store.Open(r.Context(), address)
	if err != nil {
		switch {
		case errors.Is(err, blob.ErrNotFound):
			writeError(w, http.StatusNotFound, "cover not found")
		case errors.Is(err, blob.ErrUnavailable):
			// A bucket that cannot be reached for now: the browser may try
			// again, and the answer is not cached (writeError's no-store).
			h.logger().WarnContext(r.Context(), "serve cover", slog.String("address", address), slog.Any("err", err))
			hdr.Set("Retry-After", "5")
			writeError(w, http.StatusServiceUnavailable, "cover unavailable")
		default:
			h.logger().ErrorContext(r.Context(), "serve cover", slog.String("address", address), slog.Any("err", err))
			writeError(w, http.StatusInternalServerError, "cover unavailable")
		}
		return
	}
	defer f.Close()

	head := make([]byte, imagetype.SniffLen)
	n, _ := f.ReadAt(head, 0)
	contentType := imagetype.Sniff(head[:n])
	if contentType == "" || (wantType != "" && wantType != contentType) {
		writeError(w, http.StatusNotFound, "cover not found")
		return
	}

	hdr.Set("Content-Type", contentType)
	hdr.Set("ETag", `"`+address+`"`)
	hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	hdr.Set("Cross-Origin-Resource-Policy", "cross-origin")
	// ServeContent answers If-None-Match against the ETag above with 304,
	// handles HEAD and Range, and sends no Last-Modified for a zero time:
	// the address, not a date, identifies the bytes.
	http.ServeContent(w, r, "", time.Time{}, f)
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// parseName splits "<address>" or "<address>.<ext>" and returns the image type
// the extension asks for ("" when there is none).
func parseName(name string) (address, contentType string, ok bool) {
	address, ext, hasExt := strings.Cut(name, ".")
	if !blob.ValidAddress(address) {
		return "", "", false
	}
	if !hasExt {
		return address, "", true
	}
	contentType = imagetype.ForExt(ext)
	if contentType == "" {
		return "", "", false
	}
	return address, contentType, true
}

func writeError(w http.ResponseWriter, status int, msg string) {
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	// A never-stored address may be stored later; do not let a cache pin the 404.
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":"` + msg + `"}` + "\n"))
}

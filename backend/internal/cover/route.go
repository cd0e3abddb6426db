package cover

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// ShortLen is the length of a short Cover reference: the first 20 hex
// digits (80 bits) of a Cover's address (docs/adr/0032).
const ShortLen = 20

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

// ShortURL is URL naming the Cover by the first ShortLen hex digits of its
// address, for the lists a panel refresh sends a thousand of at a time: the
// 64-digit address is random, so it is the one part of a Bookmark list no
// compression shrinks, and 80 bits still tell apart far more Covers than a
// deployment holds. The route answers a short reference only when exactly
// one stored Cover starts with it (docs/adr/0032). Notifications and feeds,
// which live on outside Lectern, keep URL's full address.
func ShortURL(base, address, contentType string) string {
	if len(address) > ShortLen {
		address = address[:ShortLen]
	}
	return URL(base, address, contentType)
}

// Finder finds the one Cover address a short reference names (the store's
// CoverByPrefix): none or several is store.ErrNotFound.
type Finder interface {
	CoverByPrefix(ctx context.Context, prefix string) (string, error)
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
	// Covers resolves short references; nil serves full addresses only.
	Covers Finder

	found foundCache
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
	if len(address) == ShortLen {
		full, err := h.find(r.Context(), address)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				writeError(w, http.StatusNotFound, "cover not found")
				return
			}
			h.logger().ErrorContext(r.Context(), "find cover", slog.String("prefix", address), slog.Any("err", err))
			writeError(w, http.StatusServiceUnavailable, "cover unavailable")
			return
		}
		// From here a short reference is its full address: the same bytes,
		// the same full-address ETag, the same immutable caching.
		address = full
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

func (h *Handler) find(ctx context.Context, prefix string) (string, error) {
	if h.Covers == nil {
		return "", store.ErrNotFound
	}
	if full, ok := h.found.get(prefix); ok {
		return full, nil
	}
	full, err := h.Covers.CoverByPrefix(ctx, prefix)
	if err == nil {
		h.found.put(full)
	}
	return full, err
}

// foundCacheSize bounds the short references a replica remembers: about
// 100 bytes each.
const foundCacheSize = 32 << 10

// foundCache remembers short references resolved, so that a panel showing
// a thousand Covers does not cost a thousand queries each time it opens
// (docs/adr/0032). A reference that resolved stays right: addresses are
// immutable and cover_addresses only grows. What it gives up is seeing a
// second Cover with the same 80-bit prefix arrive later (a chance of about
// 4·10⁻¹³ at a million Covers): this replica keeps serving the first, to
// which the reference was handed out, until it forgets. Unknown and
// ambiguous references are not remembered: they are asked each time.
type foundCache struct {
	mu sync.Mutex
	m  map[string]string // prefix (a substring of the address) → address
}

func (c *foundCache) get(prefix string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	full, ok := c.m[prefix]
	return full, ok
}

func (c *foundCache) put(full string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= foundCacheSize {
		// Forgetting everything at once keeps this a map: the hot Covers
		// come back within one panel load.
		c.m = make(map[string]string, 1024)
	}
	c.m[full[:ShortLen]] = full
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// parseName splits "<address>" or "<address>.<ext>" (the address full or a
// short reference) and returns the image type the extension asks for (""
// when there is none).
func parseName(name string) (address, contentType string, ok bool) {
	address, ext, hasExt := strings.Cut(name, ".")
	if !blob.ValidAddress(address) && !validShort(address) {
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

// validShort reports whether a is ShortLen lower-case hex digits, as an
// address's first digits are.
func validShort(a string) bool {
	if len(a) != ShortLen {
		return false
	}
	for i := 0; i < len(a); i++ {
		if c := a[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func writeError(w http.ResponseWriter, status int, msg string) {
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	// A never-stored address may be stored later; do not let a cache pin the 404.
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"error":"` + msg + `"}` + "\n"))
}

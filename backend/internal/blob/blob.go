// Package blob is the content-addressed store of image bytes: Covers and
// archived page images alike, on a filesystem volume (FS, the default) or in
// an S3-compatible bucket (S3), behind one interface (Store).
//
// An object's address is the lowercase hex SHA-256 of its bytes, so a stored
// object never changes: a new image is a new address, which is what makes the
// Cover route's year-long immutable caching correct without any
// invalidation (docs/adr/0007-covers-content-addressed.md), and what lets a
// cache in front of a bucket (Cached) never go stale.
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
)

var (
	// ErrNotFound: nothing is stored at the address.
	ErrNotFound = errs.New(errs.NotFound, "cover not found")
	// ErrBadAddress: the string is not 64 lowercase hex digits.
	ErrBadAddress = errs.New(errs.Malformed, "malformed cover address")
	// ErrVolumeFull: the cover volume ran out of space; nothing was stored.
	ErrVolumeFull = errors.New("cover volume is full")
	// ErrUnavailable: the bucket cannot be reached (or refuses this
	// deployment's credentials) for now; the same request may succeed
	// shortly, so routes answer 503, not 500.
	ErrUnavailable = errs.New(errs.Unavailable, "storage unavailable")
	// ErrNotVerified: an object read back after a write is not the bytes
	// written (length or hash); no row may name it.
	ErrNotVerified = errors.New("stored object does not match the bytes written")
)

// Store is where content-addressed objects live. Put verifies what it wrote
// (length and hash) before returning the address, so a caller may record the
// address in a row as soon as Put returns. Implementations are safe for
// concurrent use, including by several processes (replicas) sharing them.
type Store interface {
	// Put stores b, declared as contentType, and returns its address. The
	// bytes must prove themselves an image of exactly that type. Storing
	// bytes already stored is a no-op returning the same address.
	Put(ctx context.Context, b []byte, contentType string) (string, error)
	// Open returns the object at address for reading: ErrBadAddress for a
	// malformed address (checked before any I/O), ErrNotFound when nothing
	// is stored there, ErrUnavailable when the store cannot be reached.
	Open(ctx context.Context, address string) (Object, error)
	// Has reports whether address is stored, of size bytes unless size is
	// negative: the one check of a stored object, for `lectern verify`,
	// the archive's checkpoint and its sweep alike.
	Has(ctx context.Context, address string, size int64) (bool, error)
	// List calls fn with every stored object's address and size.
	List(ctx context.Context, fn func(address string, size int64) error) error
	// Where names the place of address for reports (a path, an s3:// URL).
	Where(address string) string
	// URL is the store's own location, as BLOB_URL would name it.
	URL() string
}

// Object is one stored object being read: http.ServeContent needs the
// Seeker, the Cover route's sniffing the ReaderAt.
type Object interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	io.Closer
	// Size is the object's length in bytes.
	Size() int64
}

// ValidAddress reports whether a is a content address: exactly 64 lowercase
// hex digits. Nothing else may ever reach a filesystem path or an object key.
func ValidAddress(a string) bool {
	if len(a) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// admit is what every Store's Put checks before it writes: the caller is
// still waiting, and the bytes are the image they are declared as. It
// returns their content address.
func admit(ctx context.Context, b []byte, contentType string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("store cover: %w", err)
	}
	if got := imagetype.Sniff(b); got == "" || got != contentType {
		return "", fmt.Errorf("store cover: declared %q, bytes are %q: %w", contentType, got, imagetype.ErrNotImage)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Package face is what both faces of the store share: the JSON API (package
// api) and the web UI (package web) answer requests over the same services,
// and neither imports the other. Here are the Reader a request acts for,
// the JSON writers, the status each error Code answers with (status.go), the
// 503 policy of a database outage (fault.go), and the streaming of an
// archive export.
package face

import (
	"context"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

type ctxKey int

const readerKey ctxKey = iota

// ReaderFrom returns the authenticated Reader of a request.
func ReaderFrom(ctx context.Context) (store.Reader, bool) {
	r, ok := ctx.Value(readerKey).(store.Reader)
	return r, ok
}

// WithReader stores the authenticated Reader in a context: the API's token
// check and the web UI's session both set it, so Owner checks read one
// value.
func WithReader(ctx context.Context, r store.Reader) context.Context {
	return context.WithValue(ctx, readerKey, r)
}

// MaxImportBody is the body limit of an import (POST /api/import, and the
// web UI's upload form with a little room for its other fields), far above
// the API's usual limit: a Lectern JSON export of 5,000 Bookmarks is about
// 3 MiB, a Kenmei CSV of as many rows about 1 MiB. 8 MiB leaves room for
// long titles and URLs and still bounds what one request can make the
// server hold.
const MaxImportBody = 8 << 20

package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

type ctxKey int

const readerKey ctxKey = iota

// ReaderFrom returns the authenticated Reader of a request.
func ReaderFrom(ctx context.Context) (store.Reader, bool) {
	r, ok := ctx.Value(readerKey).(store.Reader)
	return r, ok
}

// WithReader stores the authenticated Reader in a context; the web UI's
// session middleware uses it too, so Owner checks are written once.
func WithReader(ctx context.Context, r store.Reader) context.Context {
	return context.WithValue(ctx, readerKey, r)
}

// authenticate accepts a Bearer token. Only the token's SHA-256 is looked
// up; the token itself is never logged or stored.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		scheme, token, ok := strings.Cut(h, " ")
		token = strings.TrimSpace(token)
		if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lectern"`)
			writeError(w, http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer <token> (create one in the web UI under Settings, or with 'lectern token new')")
			return
		}
		reader, err := a.Store.ReaderByToken(r.Context(), credential.HashSecret(token))
		if errors.Is(err, store.ErrNotFound) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lectern", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "unknown or revoked token")
			return
		}
		if err != nil {
			a.serverError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithReader(r.Context(), reader)))
	})
}

func requireOwner(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reader, ok := ReaderFrom(r.Context())
		if !ok || !reader.IsOwner {
			writeError(w, http.StatusForbidden, "only the Owner may do this")
			return
		}
		next.ServeHTTP(w, r)
	})
}

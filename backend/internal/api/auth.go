package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// authenticate accepts a Bearer token. Only the token's SHA-256 is looked
// up; the token itself is never logged or stored.
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		scheme, token, ok := strings.Cut(h, " ")
		token = strings.TrimSpace(token)
		if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lectern"`)
			face.WriteError(w, http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer <token> (create one in the web UI under Settings, or with 'lectern token new')")
			return
		}
		reader, err := a.tokens.read(r.Context(), a.Store, credential.HashSecret(token))
		// An unknown or revoked token is a credential that fails (401), not
		// the 404 that store.ErrNotFound answers elsewhere.
		if errors.Is(err, store.ErrNotFound) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lectern", error="invalid_token"`)
			face.WriteError(w, http.StatusUnauthorized, "unknown or revoked token")
			return
		}
		if err != nil {
			a.serverError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(face.WithReader(r.Context(), reader)))
	})
}

func requireOwner(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reader, ok := face.ReaderFrom(r.Context())
		if !ok || !reader.IsOwner {
			face.WriteError(w, http.StatusForbidden, "only the Owner may do this")
			return
		}
		next.ServeHTTP(w, r)
	})
}

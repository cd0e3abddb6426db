package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// SessionTTL is how long a sign-in lasts. Fixed rather than sliding: a
// stolen cookie stops working on a known date.
const SessionTTL = 30 * 24 * time.Hour

type sessionKey struct{}

// session is the web login a request carries.
type session struct {
	idHash []byte
	csrf   string // the raw token stored with the session
}

func sessionFrom(r *http.Request) (session, bool) {
	s, ok := r.Context().Value(sessionKey{}).(session)
	return s, ok
}

// readerFrom is the signed-in Reader, set with face.WithReader so the API's
// and the UI's Owner checks read the same value.
func readerFrom(r *http.Request) (store.Reader, bool) { return face.ReaderFrom(r.Context()) }

// loadSession resolves the session cookie, if any, to its Reader. A stale
// cookie is cleared and the request goes on anonymous.
func (u *UI) loadSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(u.sessionCookie)
		if err != nil || c.Value == "" {
			next.ServeHTTP(w, r)
			return
		}
		idHash := credential.HashSecret(c.Value)
		ses, reader, err := u.store.SessionByHash(r.Context(), idHash)
		if errors.Is(err, store.ErrNotFound) {
			u.clearCookie(w, u.sessionCookie)
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			u.serverError(w, r, fmt.Errorf("load session: %w", err))
			return
		}
		ctx := face.WithReader(r.Context(), reader)
		ctx = context.WithValue(ctx, sessionKey{}, session{idHash: idHash, csrf: ses.CSRFToken})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// requireReader sends an anonymous visitor to sign in (or to first-run
// set-up while no Reader exists), coming back to the page asked for.
func (u *UI) requireReader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := readerFrom(r); ok {
			next.ServeHTTP(w, r)
			return
		}
		n, err := u.store.CountReaders(r.Context())
		if err != nil {
			u.serverError(w, r, err)
			return
		}
		if n == 0 {
			http.Redirect(w, r, "/setup", http.StatusSeeOther)
			return
		}
		target := "/login"
		if r.Method == http.MethodGet {
			target += "?next=" + url.QueryEscape(r.URL.RequestURI())
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
	})
}

func (u *UI) requireOwner(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reader, ok := readerFrom(r); !ok || !reader.IsOwner {
			u.fail(w, r, http.StatusForbidden, "Owner only", "Only the Owner of this deployment may open the Owner console.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkCSRF refuses a state-changing request whose form does not carry the
// session's CSRF token. It parses the form, so handlers behind it read
// r.PostForm directly.
func (u *UI) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		s, ok := sessionFrom(r)
		if !ok {
			u.csrfRefused(w, r)
			return
		}
		if !u.parseForm(w, r) {
			return
		}
		if !tokenMatches(r.PostForm.Get("csrf"), s.csrf) {
			u.csrfRefused(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (u *UI) csrfRefused(w http.ResponseWriter, r *http.Request) {
	u.fail(w, r, http.StatusForbidden, "Form expired",
		"This form was missing its security token, or the token was stale (the page may have been open across a sign-in). Go back, reload the page and try again.")
}

// maskToken returns raw XOR a fresh random pad, prefixed by the pad. The
// token in each response differs, so a compressed page reflecting attacker
// input (BREACH) cannot be used to guess it byte by byte.
func maskToken(raw string) string {
	pad := make([]byte, len(raw))
	_, _ = rand.Read(pad)
	out := make([]byte, 2*len(raw))
	copy(out, pad)
	for i := range len(raw) {
		out[len(raw)+i] = raw[i] ^ pad[i]
	}
	return base64.RawURLEncoding.EncodeToString(out)
}

// tokenMatches unmasks a token from a form and compares it with raw in
// constant time.
func tokenMatches(masked, raw string) bool {
	if raw == "" || masked == "" {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(masked)
	if err != nil || len(b) != 2*len(raw) {
		return false
	}
	got := make([]byte, len(raw))
	for i := range len(raw) {
		got[i] = b[i] ^ b[len(raw)+i]
	}
	return subtle.ConstantTimeCompare(got, []byte(raw)) == 1
}

// startSession signs readerID in on this browser with a fresh session id,
// so an id planted before sign-in is never promoted.
func (u *UI) startSession(ctx context.Context, w http.ResponseWriter, readerID int64) error {
	id, err := credential.NewSecret()
	if err != nil {
		return err
	}
	csrf, err := credential.NewSecret()
	if err != nil {
		return err
	}
	expires := u.now().Add(SessionTTL)
	if err := u.store.CreateSession(ctx, credential.HashSecret(id), readerID, csrf, expires); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{
		Name: u.sessionCookie, Value: id, Path: "/",
		Expires: expires, MaxAge: int(SessionTTL / time.Second),
		HttpOnly: true, Secure: u.cfg.Secure(), SameSite: http.SameSiteLaxMode,
	})
	u.clearCookie(w, u.csrfCookie)
	return nil
}

func (u *UI) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: u.cfg.Secure(), SameSite: http.SameSiteLaxMode,
	})
}

// anonCSRF returns the pre-sign-in CSRF token of this browser, setting its
// cookie when there is none. Sign-in and first-run forms carry it masked and
// the POST must send both (double submit): a page on another site can make
// a browser post a form but cannot read or set this cookie.
func (u *UI) anonCSRF(w http.ResponseWriter, r *http.Request) (string, error) {
	if c, err := r.Cookie(u.csrfCookie); err == nil && len(c.Value) >= 32 {
		return c.Value, nil
	}
	v, err := credential.NewSecret()
	if err != nil {
		return "", err
	}
	http.SetCookie(w, &http.Cookie{
		Name: u.csrfCookie, Value: v, Path: "/", MaxAge: int((12 * time.Hour) / time.Second),
		HttpOnly: true, Secure: u.cfg.Secure(), SameSite: http.SameSiteStrictMode,
	})
	return v, nil
}

// anonCSRFOK checks a sign-in or first-run POST's double-submitted token.
func (u *UI) anonCSRFOK(r *http.Request) bool {
	c, err := r.Cookie(u.csrfCookie)
	if err != nil {
		return false
	}
	return tokenMatches(r.PostForm.Get("csrf"), c.Value)
}

// localPath returns p when it is a path on this site ("/library/manga?x=1"),
// else fallback: a ?next= or back field must never become an open redirect.
func localPath(p, fallback string) string {
	if p == "" || p[0] != '/' || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n") {
		return fallback
	}
	v, err := url.Parse(p)
	if err != nil || v.Scheme != "" || v.Host != "" || v.User != nil {
		return fallback
	}
	return p
}

// withMsg sets the flash code of a local path, replacing any it had.
func withMsg(p, msg string) string {
	v, err := url.Parse(p)
	if err != nil {
		return p
	}
	q := v.Query()
	q.Set("msg", msg)
	v.RawQuery = q.Encode()
	return v.String()
}

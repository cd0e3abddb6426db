package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

type loginPage struct {
	common
	Name  string
	Next  string
	Error string
}

func (u *UI) loginShow(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"), "")
	if _, ok := readerFrom(r); ok {
		http.Redirect(w, r, localPath(next, "/library/manga"), http.StatusSeeOther)
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
	u.renderLogin(w, r, http.StatusOK, "", next, "")
}

func (u *UI) renderLogin(w http.ResponseWriter, r *http.Request, status int, name, next, msg string) {
	token, err := u.anonCSRF(w, r)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := loginPage{common: u.base(r, "Sign in", ""), Name: name, Next: next, Error: msg}
	p.CSRF = maskToken(token)
	p.Narrow = true
	u.render(w, r, status, "login", p)
}

func (u *UI) loginSubmit(w http.ResponseWriter, r *http.Request) {
	if !u.parseForm(w, r) {
		return
	}
	if !u.anonCSRFOK(r) {
		u.csrfRefused(w, r)
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	password := r.PostForm.Get("password")
	next := localPath(r.PostForm.Get("next"), "")
	addr := u.clientAddr(r)

	if wait, blocked := u.limiter.blocked(addr, name); blocked {
		minutes := int(math.Ceil(wait.Minutes()))
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(wait.Seconds()))))
		u.fail(w, r, http.StatusTooManyRequests, "Too many sign-in attempts",
			fmt.Sprintf("Too many failed sign-ins from this address. Try again in %d %s.", minutes, plural(minutes, "minute", "minutes")))
		return
	}

	reader, err := u.store.ReaderByName(r.Context(), name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Spend the same time as a real check, so a response time does
		// not tell which names exist.
		_ = credential.CheckPassword(u.dummyHash, password)
		err = credential.ErrMismatch
	case err != nil:
		u.serverError(w, r, err)
		return
	default:
		err = credential.CheckPassword(reader.PasswordHash, password)
	}
	if err != nil {
		if !errors.Is(err, credential.ErrMismatch) {
			u.log.ErrorContext(r.Context(), "check password", "reader", reader.ID, "err", err)
		}
		u.limiter.fail(addr, name)
		u.renderLogin(w, r, http.StatusUnauthorized, name, next, "Wrong name or password.")
		return
	}
	u.limiter.succeed(addr, name)
	if err := u.startSession(r.Context(), w, reader.ID); err != nil {
		u.serverError(w, r, err)
		return
	}
	if _, err := u.store.DeleteExpiredSessions(r.Context()); err != nil {
		u.log.WarnContext(r.Context(), "delete expired sessions", "err", err)
	}
	http.Redirect(w, r, localPath(next, "/library/manga"), http.StatusSeeOther)
}

func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	if s, ok := sessionFrom(r); ok {
		if err := u.store.DeleteSession(r.Context(), s.idHash); err != nil {
			u.serverError(w, r, err)
			return
		}
	}
	u.clearCookie(w, u.sessionCookie)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

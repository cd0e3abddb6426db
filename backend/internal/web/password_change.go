package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/lectern-reader/lectern/backend/internal/credential"
)

// passwordChange replaces the Reader's password after checking the current
// one (rate-limited like a sign-in: a borrowed session must not become a
// password oracle), ends every session, and signs this browser in again.
func (u *UI) passwordChange(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	addr := u.clientAddr(r)
	limitName := "#" + strconv.FormatInt(reader.ID, 10)
	refuse := func(status int, msg string) {
		u.renderSettings(w, r, status, func(p *settingsPage) { p.PasswordError = msg })
	}
	if wait, blocked := u.limiter.blocked(addr, limitName); blocked {
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(wait.Seconds()))))
		refuse(http.StatusTooManyRequests, "Too many wrong current passwords. Try again later.")
		return
	}
	err := credential.CheckPassword(reader.PasswordHash, r.PostForm.Get("current"))
	if err != nil {
		if !errors.Is(err, credential.ErrMismatch) {
			u.serverError(w, r, err)
			return
		}
		u.limiter.fail(addr, limitName)
		refuse(http.StatusUnprocessableEntity, "The current password is wrong.")
		return
	}
	next := r.PostForm.Get("new")
	if next != r.PostForm.Get("confirm") {
		refuse(http.StatusUnprocessableEntity, "The two new passwords differ.")
		return
	}
	hash, err := credential.HashPassword(next)
	if err != nil {
		refuse(http.StatusUnprocessableEntity, "New password: "+err.Error()+".")
		return
	}
	if err := u.setPasswordKeepingThisBrowser(w, r, reader.ID, hash); err != nil {
		u.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, "/settings?msg=password-changed", http.StatusSeeOther)
}

// setPasswordKeepingThisBrowser stores a new hash, which ends every session
// of the Reader, then signs the current browser in again when it was theirs.
func (u *UI) setPasswordKeepingThisBrowser(w http.ResponseWriter, r *http.Request, readerID int64, hash string) error {
	if err := u.store.SetPassword(r.Context(), readerID, hash); err != nil {
		return err
	}
	if me, _ := readerFrom(r); me.ID == readerID {
		return u.startSession(r.Context(), w, readerID)
	}
	return nil
}

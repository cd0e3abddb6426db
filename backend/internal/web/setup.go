package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// First run: while no Reader exists, the browser creates the Owner. Once one
// exists these pages are gone for good (store.CreateFirstOwner decides under
// a table lock, so two browsers racing cannot both win).

type setupPage struct {
	common
	Name        string
	Error       string
	MinPassword int
}

func (u *UI) setupShow(w http.ResponseWriter, r *http.Request) {
	n, err := u.store.CountReaders(r.Context())
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	if n > 0 {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	u.renderSetup(w, r, http.StatusOK, "", "")
}

func (u *UI) renderSetup(w http.ResponseWriter, r *http.Request, status int, name, msg string) {
	token, err := u.anonCSRF(w, r)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := setupPage{common: u.base(r, "Set up Lectern", ""), Name: name, Error: msg, MinPassword: credential.MinPasswordLen}
	p.CSRF = maskToken(token)
	p.Narrow = true
	u.render(w, r, status, "setup", p)
}

func (u *UI) setupCreate(w http.ResponseWriter, r *http.Request) {
	if !u.parseForm(w, r) {
		return
	}
	if !u.anonCSRFOK(r) {
		u.csrfRefused(w, r)
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	password := r.PostForm.Get("password")
	if err := credential.ValidName(name); err != nil {
		u.renderSetup(w, r, http.StatusUnprocessableEntity, name, "Name: "+err.Error()+".")
		return
	}
	if password != r.PostForm.Get("confirm") {
		u.renderSetup(w, r, http.StatusUnprocessableEntity, name, "The two passwords differ.")
		return
	}
	hash, err := credential.HashPassword(password)
	if err != nil {
		u.renderSetup(w, r, http.StatusUnprocessableEntity, name, "Password: "+err.Error()+".")
		return
	}
	reader, err := u.store.CreateFirstOwner(r.Context(), name, hash)
	if errors.Is(err, store.ErrConflict) {
		u.fail(w, r, http.StatusConflict, "Already set up",
			"This Lectern already has an Owner, so first-run set-up is closed. Sign in, or ask the Owner for an account.")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	u.log.InfoContext(r.Context(), "owner created at first run", "reader", reader.ID)
	if err := u.startSession(r.Context(), w, reader.ID); err != nil {
		u.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, "/library/manga?msg=welcome", http.StatusSeeOther)
}

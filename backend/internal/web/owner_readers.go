package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The Owner console's Readers: list, create, reset a password, grant or
// remove the Owner flag (never from the last Owner), delete with Bookmarks.

type readerRow struct {
	ID                int64
	Name              string
	Owner, Self       bool
	Bookmarks, Tokens int
	Created           *when
	Path              string
}

type ownerReadersPage struct {
	common
	Readers     []readerRow
	Error       string
	Name        string
	Owner       bool
	MinPassword int
}

func (u *UI) ownerReaders(w http.ResponseWriter, r *http.Request) {
	u.renderOwnerReaders(w, r, http.StatusOK, func(*ownerReadersPage) {})
}

func (u *UI) renderOwnerReaders(w http.ResponseWriter, r *http.Request, status int, edit func(*ownerReadersPage)) {
	me, _ := readerFrom(r)
	list, err := u.store.ListReaders(r.Context())
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := ownerReadersPage{common: u.base(r, "Readers", "owner"), MinPassword: credential.MinPasswordLen}
	for _, s := range list {
		p.Readers = append(p.Readers, u.readerRow(s, me.ID))
	}
	edit(&p)
	u.render(w, r, status, "owner_readers", p)
}

func (u *UI) readerRow(s store.ReaderSummary, me int64) readerRow {
	return readerRow{
		ID: s.ID, Name: s.Name, Owner: s.IsOwner, Self: s.ID == me,
		Bookmarks: s.Bookmarks, Tokens: s.Tokens, Created: u.when(&s.CreatedAt),
		Path: "/owner/readers/" + strconv.FormatInt(s.ID, 10),
	}
}

// targetReader reads {id} and loads that Reader, answering 404 itself.
func (u *UI) targetReader(w http.ResponseWriter, r *http.Request) (store.ReaderSummary, bool) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err == nil && id > 0 {
		list, err := u.store.ListReaders(r.Context())
		if err != nil {
			u.serverError(w, r, err)
			return store.ReaderSummary{}, false
		}
		for _, s := range list {
			if s.ID == id {
				return s, true
			}
		}
	}
	u.fail(w, r, http.StatusNotFound, "No such Reader", "There is no Reader with that id; they may have been deleted.")
	return store.ReaderSummary{}, false
}

func (u *UI) readerCreate(w http.ResponseWriter, r *http.Request) {
	name := r.PostForm.Get("name")
	owner := r.PostForm.Get("owner") == "true"
	refuse := func(status int, msg string) {
		u.renderOwnerReaders(w, r, status, func(p *ownerReadersPage) { p.Error, p.Name, p.Owner = msg, name, owner })
	}
	if err := credential.ValidName(name); err != nil {
		refuse(http.StatusUnprocessableEntity, "Name: "+err.Error()+".")
		return
	}
	hash, err := credential.HashPassword(r.PostForm.Get("password"))
	if err != nil {
		refuse(http.StatusUnprocessableEntity, "Password: "+err.Error()+".")
		return
	}
	created, err := u.store.CreateReader(r.Context(), name, hash, owner)
	if errs.CodeOf(err) == errs.Conflict {
		refuse(face.Status(err), "A Reader called “"+name+"” already exists.")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "reader created", "reader", created.ID, "by", me.ID, "owner", owner)
	http.Redirect(w, r, "/owner/readers?msg=reader-created", http.StatusSeeOther)
}

func (u *UI) readerPassword(w http.ResponseWriter, r *http.Request) {
	target, ok := u.targetReader(w, r)
	if !ok {
		return
	}
	hash, err := credential.HashPassword(r.PostForm.Get("password"))
	if err != nil {
		u.renderOwnerReaders(w, r, http.StatusUnprocessableEntity, func(p *ownerReadersPage) {
			p.Error = "New password for " + target.Name + ": " + err.Error() + "."
		})
		return
	}
	if err := u.setPasswordKeepingThisBrowser(w, r, target.ID, hash); err != nil {
		if errs.CodeOf(err) == errs.NotFound {
			u.refuse(w, r, err, "No such Reader", "That Reader was deleted meanwhile.")
			return
		}
		u.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, "/owner/readers?msg=password-reset", http.StatusSeeOther)
}

func (u *UI) readerOwner(w http.ResponseWriter, r *http.Request) {
	target, ok := u.targetReader(w, r)
	if !ok {
		return
	}
	var owner bool
	switch r.PostForm.Get("owner") {
	case "true":
		owner = true
	case "false":
	default:
		u.fail(w, r, http.StatusBadRequest, "Malformed form", "The owner field must be true or false.")
		return
	}
	err := u.store.SetOwner(r.Context(), target.ID, owner)
	switch {
	case errors.Is(err, store.ErrLastOwner):
		u.renderOwnerReaders(w, r, face.Status(err), func(p *ownerReadersPage) {
			p.Error = target.Name + " is the last Owner: make another Reader an Owner first."
		})
		return
	case errs.CodeOf(err) == errs.NotFound:
		u.refuse(w, r, err, "No such Reader", "That Reader was deleted meanwhile.")
		return
	case err != nil:
		u.serverError(w, r, err)
		return
	}
	if me, _ := readerFrom(r); me.ID == target.ID && !owner {
		// No longer an Owner: the console is closed to them now.
		http.Redirect(w, r, "/settings?msg=owner-removed", http.StatusSeeOther)
		return
	}
	msg := "owner-removed"
	if owner {
		msg = "owner-granted"
	}
	http.Redirect(w, r, "/owner/readers?msg="+msg, http.StatusSeeOther)
}

type readerDeletePage struct {
	common
	Target readerRow
}

// readerDeleteShow asks for confirmation, so deleting works without
// JavaScript and never happens on one stray click.
func (u *UI) readerDeleteShow(w http.ResponseWriter, r *http.Request) {
	target, ok := u.targetReader(w, r)
	if !ok {
		return
	}
	me, _ := readerFrom(r)
	p := readerDeletePage{common: u.base(r, "Delete "+target.Name, "owner"), Target: u.readerRow(target, me.ID)}
	u.render(w, r, http.StatusOK, "owner_reader_delete", p)
}

func (u *UI) readerDelete(w http.ResponseWriter, r *http.Request) {
	target, ok := u.targetReader(w, r)
	if !ok {
		return
	}
	err := u.store.DeleteReader(r.Context(), target.ID)
	switch {
	case errors.Is(err, store.ErrLastOwner):
		u.renderOwnerReaders(w, r, face.Status(err), func(p *ownerReadersPage) {
			p.Error = target.Name + " is the last Owner and cannot be deleted: make another Reader an Owner first."
		})
		return
	case errs.CodeOf(err) == errs.NotFound:
		u.refuse(w, r, err, "No such Reader", "That Reader was deleted already.")
		return
	case err != nil:
		u.serverError(w, r, err)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "reader deleted", "reader", target.ID, "by", me.ID)
	if me.ID == target.ID {
		u.clearCookie(w, u.sessionCookie)
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/owner/readers?msg=reader-deleted", http.StatusSeeOther)
}

package web

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/errs"
)

func (u *UI) tokenRevoke(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		u.fail(w, r, http.StatusNotFound, "No such token", "There is no token with that id.")
		return
	}
	err = u.store.RevokeToken(r.Context(), reader.ID, id)
	if errs.CodeOf(err) == errs.NotFound {
		u.refuse(w, r, err, "No such token", "You have no live token with that id; it may be revoked already.")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, "/settings?msg=token-revoked#tokens", http.StatusSeeOther)
}

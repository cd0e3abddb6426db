package web

import (
	"net/http"

	"github.com/lectern-reader/lectern/backend/internal/errs"
)

// bookmarkRemove deletes the Reader's Bookmark; the Series stays, as it does
// when the panel removes one.
func (u *UI) bookmarkRemove(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.formKey(w, r)
	if !ok {
		return
	}
	b, err := u.lib.Get(r.Context(), reader.ID, key)
	if err == nil {
		err = u.lib.Delete(r.Context(), reader.ID, key)
	}
	if errs.CodeOf(err) == errs.NotFound {
		u.refuse(w, r, err, "No such Bookmark", "You hold no Bookmark on "+key+"; it may have been removed already.")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, withMsg(backPath(r, b.Kind, true), "removed"), http.StatusSeeOther)
}

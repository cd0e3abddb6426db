package web

import (
	"net/http"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// bookmarkCaughtUp records the Latest Chapter as the Reader's Progress. It
// goes through bookmark.Put, the same path as the panel's "Bookmark this
// chapter", so the same validation and rules apply.
func (u *UI) bookmarkCaughtUp(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.formKey(w, r)
	if !ok {
		return
	}
	b, err := u.lib.Get(r.Context(), reader.ID, key)
	if errs.CodeOf(err) == errs.NotFound {
		u.refuse(w, r, err, "No such Bookmark", "You hold no Bookmark on "+key+".")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	if b.LatestChapter == "" {
		u.fail(w, r, http.StatusConflict, "No Latest Chapter yet",
			"Lectern has not found the Latest Chapter of “"+b.Title+"” yet, so there is nothing to catch up to. Try again after its next poll.")
		return
	}
	req := bookmark.PutRequest{
		Site: b.Site, SeriesURL: b.SeriesURL,
		Chapter: b.LatestChapter, ChapterNumber: b.LatestChapterNumber, ChapterURL: b.LatestChapterURL,
	}
	if _, _, err := u.lib.Put(r.Context(), reader.ID, key, req); err != nil {
		if errs.CodeOf(err) == errs.Invalid {
			u.refuse(w, r, err, "Cannot mark caught up", errs.MessageOf(err))
			return
		}
		u.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, withMsg(backPath(r, b.Kind, false), "caught-up"), http.StatusSeeOther)
}

// formKey reads and checks the Series key a library form posts.
func (u *UI) formKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key := strings.TrimSpace(r.PostForm.Get("key"))
	if _, _, ok := latest.SplitKey(key); !ok || len(key) > 300 {
		u.fail(w, r, http.StatusBadRequest, "Malformed Series key", "A Series key looks like site:slug.")
		return "", false
	}
	return key, true
}

// backPath is where a library action returns: the page it came from (a
// library view or a Series page), else the Library of the Bookmark. After a
// removal the Series page is gone for this Reader, so it returns to the
// Library instead.
func backPath(r *http.Request, kind string, removed bool) string {
	fallback := "/library/" + kind
	if _, ok := kindLabels[kind]; !ok {
		fallback = "/library/manga"
	}
	p := localPath(r.PostForm.Get("back"), fallback)
	if !strings.HasPrefix(p, "/library/") && !(strings.HasPrefix(p, "/series/") && !removed) {
		return fallback
	}
	return p
}

package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// archiveOwnerRoutes adds the Owner's archive console (behind requireOwner).
func (u *UI) archiveOwnerRoutes(r chi.Router) {
	r.Get("/archive", u.archiveOwner)
	r.Post("/archive/jobs/{id}/cancel", u.archiveJobCancel)
	r.Post("/archive/jobs/{id}/retry", u.archiveJobRetry)
	r.Post("/archive/readers/{id}", u.archiveReaderSave)
}

type archiveJobRow struct {
	archive.Job
	SeriesPath, Size, Fetched string
	When                      *when
	Cancel, Retry             bool
}

type archiveReaderRow struct {
	store.ArchiveReaderRow
	Cap, Size string
	Path      string
}

type archiveOwnerPage struct {
	common
	Totals       store.ArchiveTotals
	Size, Stored string
	Fetched      string
	State        string
	States       []string
	Jobs         []archiveJobRow
	Readers      []archiveReaderRow
	Error        string
}

// archiveOwner lists every archive job, queued first, with cancel and
// retry, and each Reader's switch and cap.
func (u *UI) archiveOwner(w http.ResponseWriter, r *http.Request) {
	u.renderArchiveOwner(w, r, http.StatusOK, "")
}

func (u *UI) renderArchiveOwner(w http.ResponseWriter, r *http.Request, status int, msg string) {
	state := r.URL.Query().Get("state")
	switch state {
	case "", store.ArchiveQueued, store.ArchiveArchived, store.ArchiveFailed, store.ArchiveCancelled:
	default:
		state = ""
	}
	totals, err := u.store.ArchiveTotalsAll(r.Context())
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	jobs, err := u.archive.Jobs(r.Context(), state, 300)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	readers, err := u.store.ListArchiveReaders(r.Context())
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	p := archiveOwnerPage{
		common: u.base(r, "Archive", "owner"), Totals: totals, Error: msg, State: state,
		Size: byteSize(totals.Bytes), Stored: byteSize(totals.StoredBytes), Fetched: byteSize(totals.FetchedBytes),
		States: []string{store.ArchiveQueued, store.ArchiveArchived, store.ArchiveFailed, store.ArchiveCancelled},
	}
	for _, j := range jobs {
		p.Jobs = append(p.Jobs, archiveJobRow{
			Job: j, SeriesPath: seriesPath(j.Series), Size: byteSize(j.Bytes), Fetched: byteSize(j.Fetched),
			When: u.when(&j.UpdatedAt), Cancel: j.State == store.ArchiveQueued,
			Retry: j.State == store.ArchiveFailed || j.State == store.ArchiveCancelled,
		})
	}
	for _, a := range readers {
		row := archiveReaderRow{ArchiveReaderRow: a, Size: byteSize(a.Bytes), Path: "/owner/archive/readers/" + strconv.FormatInt(a.ID, 10)}
		if a.MaxChapters != nil {
			row.Cap = strconv.Itoa(*a.MaxChapters)
		}
		p.Readers = append(p.Readers, row)
	}
	u.render(w, r, status, "archive_owner", p)
}

func (u *UI) archiveJobCancel(w http.ResponseWriter, r *http.Request) {
	u.archiveJobAction(w, r, u.archive.CancelChapter, "archive-cancelled")
}

func (u *UI) archiveJobRetry(w http.ResponseWriter, r *http.Request) {
	u.archiveJobAction(w, r, u.archive.RetryChapter, "archive-retried")
}

func (u *UI) archiveJobAction(w http.ResponseWriter, r *http.Request, act func(ctx context.Context, id int64) error, msg string) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		u.fail(w, r, http.StatusNotFound, "No such archive job", "There is no archive job with that id.")
		return
	}
	err = act(r.Context(), id)
	switch {
	case errors.Is(err, archive.ErrNotFound):
		u.refuse(w, r, err, "No such archive job", "There is no archive job with that id.")
		return
	case errors.Is(err, archive.ErrNotQueued):
		u.renderArchiveOwner(w, r, face.Status(err), "That job is no longer in a state that allows this; the list below is current.")
		return
	case err != nil:
		u.serverError(w, r, err)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "archive job changed by the Owner", "id", id, "action", msg, "by", me.ID)
	back := "/owner/archive"
	if s := r.PostForm.Get("state"); s != "" {
		back += "?state=" + s
	}
	http.Redirect(w, r, withMsg(back, msg), http.StatusSeeOther)
}

// archiveReaderSave sets a Reader's archive switch and cap of chapters
// (empty for none).
func (u *UI) archiveReaderSave(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		u.fail(w, r, http.StatusNotFound, "No such Reader", "There is no Reader with that id.")
		return
	}
	enabled := r.PostForm.Get("enabled") == "true"
	var capp *int
	if v := strings.TrimSpace(r.PostForm.Get("max_chapters")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 10_000_000 {
			u.renderArchiveOwner(w, r, http.StatusUnprocessableEntity, "The cap must be empty (no cap) or a whole number of chapters from 0.")
			return
		}
		capp = &n
	}
	err = u.store.SetArchiveReader(r.Context(), id, enabled, capp)
	if errs.CodeOf(err) == errs.NotFound {
		u.refuse(w, r, err, "No such Reader", "That Reader was deleted meanwhile.")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	me, _ := readerFrom(r)
	u.log.InfoContext(r.Context(), "archive allowance set", "reader", id, "enabled", enabled, "max_chapters", capp, "by", me.ID)
	http.Redirect(w, r, "/owner/archive?msg=archive-reader-saved", http.StatusSeeOther)
}

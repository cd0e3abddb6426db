package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The archive's pages: a Series' archive (status, requests, the "keep
// archiving" switch, archived chapters and downloads), the reader of an
// archived chapter, its page bytes, and the Owner's view of every archive
// job and each Reader's switch and cap (archive_owner.go).

func init() {
	pages = append(pages, "archive_series", "archive_read", "archive_owner")
	for code, msg := range map[string]string{
		"archive-requested":    "Archive requested. Chapters appear below as they are stored.",
		"archive-following":    "New chapters of this Series will be archived as the Poll finds them.",
		"archive-unfollowed":   "New chapters will no longer be archived on their own.",
		"archive-progress":     "Recorded as your Progress.",
		"archive-cancelled":    "Archive job cancelled.",
		"archive-retried":      "Archive job queued again.",
		"archive-reader-saved": "Archive settings saved.",
	} {
		flashes[code] = msg
	}
}

// archiveRoutes adds the Reader's archive pages (behind requireReader and
// the CSRF check).
func (u *UI) archiveRoutes(r chi.Router) {
	r.Get("/series/{key}/archive", u.archiveShow)
	r.Post("/series/{key}/archive", u.archiveRequest)
	r.Post("/series/{key}/archive/follow", u.archiveFollow)
	r.Get("/series/{key}/archive.cbz", u.archiveDownload)
	r.Get("/series/{key}/archive.epub", u.archiveDownload)
	r.Get("/series/{key}/archive/pages/{address}", u.archivePage)
	r.Get("/series/{key}/archive/{id}", u.archiveRead)
	r.Post("/series/{key}/archive/{id}/progress", u.archiveProgress)
}

// archiveKey reads {key}, answering 400 itself when it is malformed.
func (u *UI) archiveKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key, err := url.PathUnescape(chi.URLParam(r, "key"))
	if err == nil && len(key) <= 300 && cleanText(key) {
		if _, _, ok := latest.SplitKey(key); ok {
			return key, true
		}
	}
	u.fail(w, r, http.StatusBadRequest, "Malformed Series key", "A Series key looks like site:slug.")
	return "", false
}

// archiveFail answers the archive's errors as pages, at the status of
// their code (face.Status).
func (u *UI) archiveFail(w http.ResponseWriter, r *http.Request, key string, err error) {
	switch {
	case errors.Is(err, archive.ErrNotHeld):
		u.refuse(w, r, err, "No such Series", "You hold no Bookmark on "+key+".")
	case errors.Is(err, archive.ErrNotFound), errors.Is(err, archive.ErrNothingArchived):
		u.refuse(w, r, err, "Not archived", "No archived chapter of "+key+" matches.")
	case errors.Is(err, archive.ErrBadSelection):
		// The selection is the download link's query, which the page
		// calls malformed (400); the API answers its body with 422.
		u.fail(w, r, http.StatusBadRequest, "Malformed selection", err.Error()+".")
	case errors.Is(err, archive.ErrWrongLibrary):
		u.refuse(w, r, err, "Wrong format", "Manga download as CBZ, novels as EPUB.")
	default:
		u.serverError(w, r, err)
	}
}

type archiveChapterRow struct {
	ID                         int64
	Label, State, Problem, URL string
	Detail                     string
	Pages                      int
	Size                       string
	When                       *when
	Read, Download             string
}

type archiveRequestRow struct {
	Scope, State, Detail, Problem string
	Chapters                      string
	When                          *when
}

type archiveSeriesPage struct {
	common
	Key, Title, SeriesPath, Path string
	Novel                        bool
	Status                       archive.Status
	Size                         string
	Archived, Queued, Failed     []archiveChapterRow
	Requests                     []archiveRequestRow
	DownloadAll                  string
	Error                        string
	Scope, N                     string
}

func (u *UI) archiveShow(w http.ResponseWriter, r *http.Request) {
	u.renderArchive(w, r, http.StatusOK, func(*archiveSeriesPage) {})
}

func (u *UI) renderArchive(w http.ResponseWriter, r *http.Request, status int, edit func(*archiveSeriesPage)) {
	reader, _ := readerFrom(r)
	key, ok := u.archiveKey(w, r)
	if !ok {
		return
	}
	st, err := u.archive.StatusOf(r.Context(), reader, key)
	if err != nil {
		u.archiveFail(w, r, key, err)
		return
	}
	ser, err := u.store.SeriesByKey(r.Context(), key)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	title := latest.DisplayTitle(ser.Title, ser.SeriesURL)
	p := archiveSeriesPage{
		common: u.base(r, "Archive · "+title, ser.Kind), Key: key, Title: title,
		SeriesPath: seriesPath(key), Path: seriesPath(key) + "/archive",
		Novel: ser.Kind == string(latest.Novel), Status: st, Size: byteSize(st.Bytes), Scope: archive.ScopeMissing,
	}
	ext := "cbz"
	if p.Novel {
		ext = "epub"
	}
	p.DownloadAll = p.Path + "." + ext
	for _, c := range st.Chapters {
		row := archiveChapterRow{
			ID: c.ID, Label: c.Label, State: c.State, Problem: c.Problem, Detail: c.Detail, URL: httpURL(c.URL),
			Pages: c.Pages, Size: byteSize(c.Bytes), When: u.when(&c.UpdatedAt),
		}
		switch c.State {
		case store.ArchiveArchived:
			row.When = u.when(c.ArchivedAt)
			row.Read = archive.ChapterPath(key, c.ID)
			row.Download = p.DownloadAll + "?ids=" + strconv.FormatInt(c.ID, 10)
			p.Archived = append(p.Archived, row)
		case store.ArchiveQueued:
			p.Queued = append(p.Queued, row)
		default:
			p.Failed = append(p.Failed, row)
		}
	}
	for _, q := range st.Requests {
		p.Requests = append(p.Requests, archiveRequestRow{Scope: q.Scope, State: q.State, Detail: q.Detail, Problem: q.Problem,
			Chapters: requestSummary(q), When: u.when(&q.CreatedAt)})
	}
	edit(&p)
	u.render(w, r, status, "archive_series", p)
}

// archiveRequest queues a request from the form: a scope and, for first,
// last, chapter and after, its number.
func (u *UI) archiveRequest(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.archiveKey(w, r)
	if !ok {
		return
	}
	kind := strings.TrimSpace(r.PostForm.Get("scope"))
	n := strings.TrimSpace(r.PostForm.Get("n"))
	text := kind
	switch kind {
	case archive.ScopeFirst, archive.ScopeLast, archive.ScopeChapter, archive.ScopeAfter:
		text += " " + n
	}
	refuse := func(status int, msg string) {
		u.renderArchive(w, r, status, func(p *archiveSeriesPage) { p.Error, p.Scope, p.N = msg, kind, n })
	}
	scope, err := archive.ParseScope(text)
	if err != nil {
		refuse(http.StatusUnprocessableEntity, "Scope: "+strings.TrimPrefix(err.Error(), archive.ErrBadScope.Error()+": ")+".")
		return
	}
	_, err = u.archive.Request(r.Context(), reader, key, scope)
	switch {
	case errors.Is(err, archive.ErrNotAllowed), errors.Is(err, archive.ErrCapReached):
		refuse(face.Status(err), capitalize(err.Error())+".")
		return
	case err != nil:
		u.archiveFail(w, r, key, err)
		return
	}
	http.Redirect(w, r, seriesPath(key)+"/archive?msg=archive-requested", http.StatusSeeOther)
}

func (u *UI) archiveFollow(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.archiveKey(w, r)
	if !ok {
		return
	}
	on := r.PostForm.Get("follow") == "true"
	err := u.archive.SetFollow(r.Context(), reader, key, on)
	switch {
	case errors.Is(err, archive.ErrNotAllowed), errors.Is(err, archive.ErrCapReached):
		u.renderArchive(w, r, face.Status(err), func(p *archiveSeriesPage) { p.Error = capitalize(err.Error()) + "." })
		return
	case err != nil:
		u.archiveFail(w, r, key, err)
		return
	}
	msg := "archive-unfollowed"
	if on {
		msg = "archive-following"
	}
	http.Redirect(w, r, seriesPath(key)+"/archive?msg="+msg, http.StatusSeeOther)
}

// archiveDownload streams the CBZ or EPUB with the session, as the API does
// with a token.
func (u *UI) archiveDownload(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.archiveKey(w, r)
	if !ok {
		return
	}
	kind := latest.Manga
	if strings.HasSuffix(r.URL.Path, ".epub") {
		kind = latest.Novel
	}
	if err := u.archive.CanRead(r.Context(), reader, key); err != nil {
		u.archiveFail(w, r, key, err)
		return
	}
	q := r.URL.Query()
	sel, err := archive.ParseSelection(q.Get("chapters"), q.Get("ids"))
	if err != nil {
		u.archiveFail(w, r, key, err)
		return
	}
	exp, err := u.archive.PlanExport(r.Context(), key, sel, kind)
	if err != nil {
		u.archiveFail(w, r, key, err)
		return
	}
	face.ServeExport(w, r, exp, kind, u.log)
}

// archivePage serves one archived page's bytes to a signed-in Reader who
// holds the Series. Unlike a Cover this is not public: an archive is the
// Reader's copy of a Site's chapter, and a public route would make the
// deployment a mirror of the Sites' content for anyone with an address. The
// reader is same-origin, so the session cookie goes with every <img>. The
// bytes never change under an address, so the browser may keep them, but
// only privately.
func (u *UI) archivePage(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.archiveKey(w, r)
	if !ok {
		return
	}
	address := chi.URLParam(r, "address")
	if !blob.ValidAddress(address) {
		http.Error(w, "no such page", http.StatusNotFound)
		return
	}
	ct, err := u.archive.PageType(r.Context(), reader, key, address)
	if errors.Is(err, archive.ErrNotHeld) || errors.Is(err, archive.ErrNotFound) {
		http.Error(w, "no such page", face.Status(err))
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	f, err := u.archive.Pages.Open(r.Context(), address)
	if err != nil {
		site, _, _ := latest.SplitKey(key)
		u.log.ErrorContext(r.Context(), "serve archived page", "series", key, "site", site, "address", address, "err", err)
		status := http.StatusInternalServerError
		if errors.Is(err, blob.ErrUnavailable) {
			// The bucket, not the page, is away for now.
			w.Header().Set("Retry-After", "5")
			status = http.StatusServiceUnavailable
		}
		http.Error(w, "page unavailable", status)
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("ETag", `"`+address+`"`)
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	// Stricter than the pages' policy (an archived page is bytes of a Site's,
	// never a document to run), with the same frame-ancestors.
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	http.ServeContent(w, r, "", time.Time{}, f)
}

type archivePageView struct {
	N             int
	Src           string
	Width, Height int
	Eager         bool
}

type archiveNav struct {
	Label, Path string
}

type archiveReadPage struct {
	common
	Key, Title, Chapter, SourceURL string
	SeriesPath, ArchivePath, Path  string
	Novel, Paged, Held, IsProgress bool
	Pages                          []archivePageView
	Page                           *archivePageView
	PageCount                      int
	PrevPage, NextPage             string
	StripPath, PagedPath           string
	Paragraphs                     [][]string
	Prev, Next                     *archiveNav
	Download                       string
}

// archiveRead shows an archived chapter: a vertical strip of lazy images
// with their sizes reserved (or one page at a time with ?view=paged&p=N),
// or a novel's text.
func (u *UI) archiveRead(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.archiveKey(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		u.fail(w, r, http.StatusNotFound, "Not archived", "There is no archived chapter at "+r.URL.Path+".")
		return
	}
	ch, err := u.archive.Chapter(r.Context(), reader, key, id)
	if err != nil {
		u.archiveFail(w, r, key, err)
		return
	}
	title := latest.DisplayTitle(ch.Series.Title, ch.Series.SeriesURL)
	path := archive.ChapterPath(key, id)
	p := archiveReadPage{
		common: u.base(r, ch.Label+" · "+title, ch.Series.Kind),
		Key:    key, Title: title, Chapter: ch.Label, SourceURL: httpURL(ch.URL),
		SeriesPath: seriesPath(key), ArchivePath: seriesPath(key) + "/archive", Path: path,
		Novel: ch.Series.Kind == string(latest.Novel), Paragraphs: ch.Paragraphs,
		StripPath: path, PagedPath: path + "?view=paged",
	}
	ext := "cbz"
	if p.Novel {
		ext = "epub"
	}
	p.Download = p.ArchivePath + "." + ext + "?ids=" + strconv.FormatInt(id, 10)
	if ch.Prev != nil {
		p.Prev = &archiveNav{Label: ch.Prev.Label, Path: archive.ChapterPath(key, ch.Prev.ID)}
	}
	if ch.Next != nil {
		p.Next = &archiveNav{Label: ch.Next.Label, Path: archive.ChapterPath(key, ch.Next.ID)}
	}
	for i, pg := range ch.Pages {
		p.Pages = append(p.Pages, archivePageView{N: i + 1, Src: archive.PagePath(key, pg.Address), Width: pg.Width, Height: pg.Height, Eager: i < 2})
	}
	p.PageCount = len(p.Pages)
	if r.URL.Query().Get("view") == "paged" && len(p.Pages) > 0 {
		p.Paged = true
		n, err := strconv.Atoi(r.URL.Query().Get("p"))
		if err != nil || n < 1 || n > len(p.Pages) {
			n = 1
		}
		pg := p.Pages[n-1]
		pg.Eager = true
		p.Page = &pg
		if n > 1 {
			p.PrevPage = fmt.Sprintf("%s?view=paged&p=%d", path, n-1)
		}
		if n < len(p.Pages) {
			p.NextPage = fmt.Sprintf("%s?view=paged&p=%d", path, n+1)
		} else if p.Next != nil {
			p.NextPage = p.Next.Path + "?view=paged"
		}
	}
	if b, err := u.lib.Get(r.Context(), reader.ID, key); err == nil {
		p.Held = true
		p.IsProgress = b.ChapterURL != "" && b.ChapterURL == ch.URL
	} else if !errors.Is(err, store.ErrNotFound) {
		u.serverError(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "archive_read", p)
}

// archiveProgress records the archived chapter as the Reader's Progress,
// through bookmark.Put like every other way of recording it.
func (u *UI) archiveProgress(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	key, ok := u.archiveKey(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		u.fail(w, r, http.StatusNotFound, "Not archived", "There is no archived chapter at "+r.URL.Path+".")
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
	ch, err := u.archive.Chapter(r.Context(), reader, key, id)
	if err != nil {
		u.archiveFail(w, r, key, err)
		return
	}
	req := bookmark.PutRequest{Site: b.Site, SeriesURL: b.SeriesURL, Chapter: ch.Label, ChapterNumber: ch.Number, ChapterURL: ch.URL}
	if _, _, err := u.lib.Put(r.Context(), reader.ID, key, req); err != nil {
		if errs.CodeOf(err) == errs.Invalid {
			u.refuse(w, r, err, "Cannot record Progress", errs.MessageOf(err))
			return
		}
		u.serverError(w, r, err)
		return
	}
	back := archive.ChapterPath(key, id)
	if v := r.PostForm.Get("view"); v == "paged" {
		back += "?view=paged&msg=archive-progress"
	} else {
		back += "?msg=archive-progress"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// requestSummary says what a resolved request did.
func requestSummary(q archive.RequestStatus) string {
	if q.Selected == nil {
		return ""
	}
	out := fmt.Sprintf("%d named", *q.Selected)
	if q.Queued != nil {
		out += fmt.Sprintf(", %d queued", *q.Queued)
	}
	if q.Capped != nil && *q.Capped > 0 {
		out += fmt.Sprintf(", %d over the cap", *q.Capped)
	}
	return out
}

// byteSize is a size as people read it.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

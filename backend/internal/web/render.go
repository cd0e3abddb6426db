package web

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// pages are the views the handlers render. New fails unless every one parses
// and defines "content", so a missing or broken template stops the boot.
var pages = []string{
	"setup", "login", "error", "library", "series", "works_move", "settings", "owner_readers", "owner_reader_delete",
}

// view is one page: the layout and partials plus the page's own "content".
type view struct {
	name string
	t    *template.Template
}

// loadViews parses templates/layout.html (the layout and partials) with each
// page file in turn. Data never becomes template.HTML: every title and label
// is hostile input and goes through html/template's contextual escaping.
func loadViews(fsys fs.FS, a *assets) (map[string]*view, error) {
	funcs := template.FuncMap{"static": a.url}
	layoutSrc, err := fs.ReadFile(fsys, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("read layout template: %w", err)
	}
	base, err := template.New("layout.html").Funcs(funcs).Parse(string(layoutSrc))
	if err != nil {
		return nil, fmt.Errorf("parse layout template: %w", err)
	}
	for _, name := range []string{"layout", "cover"} {
		if base.Lookup(name) == nil {
			return nil, fmt.Errorf("templates/layout.html defines no %q template", name)
		}
	}
	views := make(map[string]*view, len(pages))
	for _, p := range pages {
		file := path.Join("templates", p+".html")
		src, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("template for page %q: %w", p, err)
		}
		t, err := template.Must(base.Clone()).New(p + ".html").Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", file, err)
		}
		if t.Lookup("content") == nil {
			return nil, fmt.Errorf("%s defines no \"content\" template", file)
		}
		views[p] = &view{name: p, t: t}
	}
	return views, nil
}

// common is what every page's layout reads.
type common struct {
	PageTitle string
	Reader    *store.Reader
	CSRF      string // masked per response
	Nav       string
	Flash     string
	Version   string
	Narrow    bool
	// OwnerNav is the Owner console's tabs (owner pages only).
	OwnerNav []navLink
}

// base fills the layout's fields for the request's Reader.
func (u *UI) base(r *http.Request, title, nav string) common {
	c := common{PageTitle: title, Nav: nav, Version: u.version, Flash: flashes[r.URL.Query().Get("msg")]}
	if reader, ok := readerFrom(r); ok {
		c.Reader = &reader
	}
	if s, ok := sessionFrom(r); ok {
		c.CSRF = maskToken(s.csrf)
	}
	if nav == "owner" {
		c.OwnerNav = u.ownerNav(r.URL.Path)
	}
	return c
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// render executes a page into a buffer first, so a failing template gives a
// clean 500 instead of half a page.
func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	v, ok := u.views[page]
	if !ok {
		u.serverError(w, r, fmt.Errorf("no view %q", page))
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if err := v.t.ExecuteTemplate(buf, "layout", data); err != nil {
		u.log.ErrorContext(r.Context(), "render page", "page", page, "err", err)
		if page != "error" {
			u.fail(w, r, http.StatusInternalServerError, "Something went wrong", "The page could not be drawn; the server log has details.")
			return
		}
		http.Error(w, "internal error; the server log has details", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Pages carry a Reader's library and CSRF tokens: never cached or shared.
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorPage struct {
	common
	Code      int
	Heading   string
	Message   string
	Back      string
	BackLabel string
}

// fail answers with the error page: a status, a heading and a sentence that
// says what was wrong and what to do.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, status int, heading, msg string) {
	p := errorPage{common: u.base(r, heading, ""), Code: status, Heading: heading, Message: msg, Back: "/", BackLabel: "Back to Lectern"}
	p.Flash = ""
	u.render(w, r, status, "error", p)
}

func (u *UI) notFound(w http.ResponseWriter, r *http.Request) {
	u.fail(w, r, http.StatusNotFound, "Not found", "There is no page at "+r.URL.Path+".")
}

func (u *UI) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	u.fail(w, r, http.StatusMethodNotAllowed, "Method not allowed", r.Method+" is not allowed on "+r.URL.Path+".")
}

// serverError logs an unexpected failure and answers with the page
// face.FaultPage words: 500 without details, or 503 with Retry-After while
// the database cannot be reached.
func (u *UI) serverError(w http.ResponseWriter, r *http.Request, err error) {
	u.log.ErrorContext(r.Context(), "web request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	status, heading, msg := face.FaultPage(w, err)
	u.fail(w, r, status, heading, msg)
}

// refuse answers an error the domain named with a code (errs) with the
// error page at that code's status (face.Status), in the page's words. An
// error without a code is the server's failure, not the request's.
func (u *UI) refuse(w http.ResponseWriter, r *http.Request, err error, heading, msg string) {
	if !face.Refused(err) {
		u.serverError(w, r, err)
		return
	}
	u.fail(w, r, face.Status(err), heading, msg)
}

// maxForm bounds a form body: the largest real one is a password change.
const maxForm = 16 << 10

// parseForm reads a POST body, answering 413 or 400 itself when it cannot.
func (u *UI) parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			u.fail(w, r, http.StatusRequestEntityTooLarge, "Form too large", fmt.Sprintf("The form sent more than %d bytes.", maxForm))
			return false
		}
		u.fail(w, r, http.StatusBadRequest, "Malformed form", "The form could not be read: "+err.Error())
		return false
	}
	for _, vs := range r.PostForm {
		for _, v := range vs {
			if !cleanText(v) {
				u.fail(w, r, http.StatusBadRequest, "Malformed form", "The form sent text that is not valid UTF-8 or contains a NUL character.")
				return false
			}
		}
	}
	return true
}

// cleanText reports text Postgres can store: valid UTF-8 without NUL.
// Anything else would fail in the database as a 500 instead of a clear 400.
func cleanText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// flashes are the messages a redirect after a successful action can show,
// named by a fixed code in ?msg= so no text travels through the URL.
var flashes = map[string]string{
	"welcome":          "Welcome! Install the userscript under Settings to start adding Bookmarks.",
	"caught-up":        "Marked as caught up.",
	"removed":          "Bookmark removed.",
	"linked":           "Linked: one Work, one Progress across its Sites.",
	"unlinked":         "Unlinked from the Work.",
	"dismissed":        "Suggestion dismissed: it will not be suggested again.",
	"moved":            "Moved: the ticked Bookmarks' Progress is on their new Sites, and each pair is linked.",
	"token-revoked":    "Token revoked.",
	"password-changed": "Password changed. Your other sessions were signed out.",
	"reader-created":   "Reader created.",
	"reader-deleted":   "Reader deleted with their Bookmarks.",
	"password-reset":   "Password reset. That Reader's sessions were signed out.",
	"owner-granted":    "Owner flag granted.",
	"owner-removed":    "Owner flag removed.",
}

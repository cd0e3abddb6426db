package web

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/lectern-reader/lectern/backend/internal/face"
	"github.com/lectern-reader/lectern/backend/internal/portability"
)

// The import and export page: download the Reader's Bookmarks, and import
// a Lectern export, a Kenmei CSV export or a list of series URLs with a
// preview first (docs/portability.md).

func init() {
	pages = append(pages, "import")
}

// uploadRoutes adds the import upload. It is outside the CSRF middleware
// only because that parses urlencoded forms of at most 16 KiB: the upload
// is a multipart file of up to face.MaxImportBody, and importSubmit checks
// the CSRF token itself once the form is read.
func (u *UI) uploadRoutes(r chi.Router) {
	r.With(u.requireReader).Post("/import", u.importSubmit)
}

// maxShownItems bounds the per-Series rows an import page lists.
const maxShownItems = 500

// maxCarried bounds the text a preview carries in its "import these" form,
// so applying a preview needs no second upload.
const maxCarried = 2 << 20

type importPage struct {
	common
	Formats []formatOption
	Format  string
	// Report is set after a preview or an import.
	Report    *portability.Report
	Items     []portability.Item
	MoreItems int
	Carried   string // the previewed text, for the apply form
	// CarriedBinary marks Carried as base64 of a binary file (a Mihon
	// backup, a .xml.gz), sent back as the form's data field.
	CarriedBinary bool
	SkipInvalid   bool
	// Unplaced are the entries no Site could be found for.
	Unplaced []portability.Unplaced
	// Source and ApplyPath are set for a tracker's list: the preview's
	// "Import these" posts there (nothing is carried: the list is read
	// again).
	Source, ApplyPath string
	Error             string
	MaxBytes          string
}

type formatOption struct{ Value, Label string }

var formatOptions = []formatOption{
	{string(portability.Lectern), "Lectern export (JSON or CSV)"},
	{string(portability.Kenmei), "Kenmei CSV export"},
	{string(portability.URLs), "List of series URLs, one per line"},
	{string(portability.MAL), "MyAnimeList XML export (.xml or .xml.gz)"},
	{string(portability.Mihon), "Mihon or Tachiyomi backup (.tachibk, .proto.gz)"},
}

func (u *UI) importPageData(r *http.Request) importPage {
	return importPage{common: u.base(r, "Import and export", "settings"), Formats: formatOptions,
		Format: string(portability.URLs), MaxBytes: fmt.Sprintf("%d MiB", face.MaxImportBody>>20)}
}

func (u *UI) importShow(w http.ResponseWriter, r *http.Request) {
	u.render(w, r, http.StatusOK, "import", u.importPageData(r))
}

// importSubmit reads the multipart form (a file, or pasted text), checks
// its CSRF token, and previews or imports.
func (u *UI) importSubmit(w http.ResponseWriter, r *http.Request) {
	p := u.importPageData(r)
	refuse := func(status int, msg string) {
		p.Error = msg
		u.render(w, r, status, "import", p)
	}
	r.Body = http.MaxBytesReader(w, r.Body, face.MaxImportBody+64<<10)
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("The file is larger than %s.", p.MaxBytes))
			return
		}
		if errors.Is(err, http.ErrNotMultipart) {
			// Not the upload form at all: a forged or broken request.
			u.csrfRefused(w, r)
			return
		}
		refuse(http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	defer r.MultipartForm.RemoveAll() //nolint:errcheck // temporary files of a large upload
	s, ok := sessionFrom(r)
	if !ok || !tokenMatches(r.PostForm.Get("csrf"), s.csrf) {
		u.csrfRefused(w, r)
		return
	}
	format, err := portability.ParseFormat(r.PostForm.Get("format"))
	if err != nil {
		refuse(http.StatusBadRequest, "Choose what kind of file this is.")
		return
	}
	p.Format = string(format)
	body, err := uploaded(r)
	if err != nil {
		refuse(http.StatusBadRequest, err.Error())
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		refuse(http.StatusBadRequest, "Choose a file or paste its text: there is nothing to import.")
		return
	}
	opts := portability.Options{DryRun: r.PostForm.Get("dry_run") != "", SkipInvalid: r.PostForm.Get("skip_invalid") != ""}
	p.SkipInvalid = opts.SkipInvalid
	reader, _ := readerFrom(r)
	im := &portability.Importer{Bookmarks: u.lib, Logger: u.log, Now: u.now}
	rep, err := im.Import(r.Context(), reader.ID, format, body, opts)
	switch {
	case errors.Is(err, portability.ErrTooMany):
		refuse(face.Status(err), err.Error()+".")
		return
	case errors.Is(err, portability.ErrUnreadable):
		// The form comes back saying what is wrong with the file: 422 for
		// the upload, where the API, with no form to show, answers 400.
		refuse(http.StatusUnprocessableEntity, "This is not a "+labelOf(format)+" file: "+err.Error()+".")
		return
	case err != nil:
		u.serverError(w, r, err)
		return
	}
	p.Report = &rep
	p.Items = rep.Items
	if len(p.Items) > maxShownItems {
		p.Items, p.MoreItems = p.Items[:maxShownItems], len(p.Items)-maxShownItems
	}
	p.Unplaced = rep.Unplaced
	if !rep.Applied && len(body) <= maxCarried {
		if format.Binary() {
			p.Carried, p.CarriedBinary = base64.StdEncoding.EncodeToString(body), true
		} else {
			p.Carried = string(body)
		}
	}
	status := http.StatusOK
	if rep.Refused {
		status = http.StatusUnprocessableEntity
	}
	u.render(w, r, status, "import", p)
}

// uploaded is the file of the form, or else its pasted text.
func uploaded(r *http.Request) ([]byte, error) {
	f, _, err := r.FormFile("file")
	switch {
	case err == nil:
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			return nil, fmt.Errorf("the file could not be read: %w", err)
		}
		if len(b) > 0 {
			return b, nil
		}
	case !errors.Is(err, http.ErrMissingFile):
		return nil, fmt.Errorf("the file could not be read: %w", err)
	}
	if data := r.PostForm.Get("data"); data != "" {
		// A previewed binary file coming back with "Import these".
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, errors.New("the previewed file came back damaged: upload it again")
		}
		return b, nil
	}
	return []byte(strings.ReplaceAll(r.PostForm.Get("text"), "\r\n", "\n")), nil
}

func labelOf(f portability.Format) string {
	for _, o := range formatOptions {
		if o.Value == string(f) {
			return o.Label
		}
	}
	return string(f)
}

// exportDownload sends the Reader's export as a file (the API's GET
// /api/export, for a signed-in browser).
func (u *UI) exportDownload(w http.ResponseWriter, r *http.Request) {
	reader, _ := readerFrom(r)
	now := u.now()
	exp, err := portability.Build(r.Context(), u.store, reader.ID, u.cfg.PublicBaseURL, now)
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	file, err := exp.Render(r.URL.Query().Get("format"), now)
	if errors.Is(err, portability.ErrExportFormat) {
		u.refuse(w, r, err, "Unknown format", "Lectern exports JSON, CSV or MyAnimeList XML.")
		return
	}
	if err != nil {
		u.serverError(w, r, err)
		return
	}
	file.Send(w)
}

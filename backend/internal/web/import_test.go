package web_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
)

// postMultipart sends the import form as a browser does.
func postMultipart(t *testing.T, c *apptest.Browser, path string, fields map[string]string, fileName string, file []byte) apptest.Page {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		require.NoError(t, mw.WriteField(k, v))
	}
	if fileName != "" {
		fw, err := mw.CreateFormFile("file", fileName)
		require.NoError(t, err)
		_, err = fw.Write(file)
		require.NoError(t, err)
	}
	require.NoError(t, mw.Close())
	req := c.Request(http.MethodPost, path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.Do(req)
}

const importList = `https://asurascans.com/comics/solo-leveling-1a2b3c4d	Chapter 150
https://asurascans.com/comics/omniscient-reader-9f8e7d6c  Chapter 99
https://example.org/manga/unknown  Chapter 2
https://asurascans.com/comics/solo-leveling-ffffffff	Chapter 170
`

func TestImportPreviewThenApply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.Reader("ann", false)
	c := b.Browser()
	c.SignIn("ann", password)
	form := c.Get("/import")
	require.Equal(t, http.StatusOK, form.Code)
	token := apptest.CSRF(t, form)

	// A bad line refuses the import, naming the line; nothing is written.
	r := postMultipart(t, c, "/import", map[string]string{"csrf": token, "format": "urls", "dry_run": "1"}, "list.txt", []byte(importList))
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, r.Body)
	require.Equal(t, "Nothing was imported", text(r, `[data-testid="report-heading"]`))
	errs := texts(r, `[data-testid="import-error"]`)
	require.Len(t, errs, 1)
	require.Contains(t, errs[0], "3")
	require.Contains(t, errs[0], "not a page of a supported Site: example.org")
	require.Zero(t, b.Count(`SELECT count(*) FROM bookmarks`))

	// "Import the other lines" carries the text: no second upload.
	apply := r.Doc.Find(`[data-testid="apply-form"]`)
	require.Equal(t, 1, apply.Length())
	carried := apply.Find(`textarea[name="text"]`).Text()
	require.Equal(t, importList, carried)
	r = postMultipart(t, c, "/import", map[string]string{"csrf": token, "format": "urls", "skip_invalid": "1", "dry_run": "1", "text": carried}, "", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Body)
	require.Equal(t, "Preview: nothing was written yet", text(r, `[data-testid="report-heading"]`))
	require.Equal(t, "2", text(r, `[data-testid="count-created"]`))
	require.Equal(t, "1", text(r, `[data-testid="count-merged"]`))
	require.Equal(t, []string{"create", "create"}, texts(r, `[data-testid="item-action"]`))
	require.Zero(t, b.Count(`SELECT count(*) FROM bookmarks`), "a preview writes nothing")

	r = postMultipart(t, c, "/import", map[string]string{"csrf": token, "format": "urls", "skip_invalid": "1", "text": carried}, "", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Body)
	require.Equal(t, "Imported", text(r, `[data-testid="report-heading"]`))
	require.Equal(t, 2, b.Count(`SELECT count(*) FROM bookmarks WHERE reader_id = $1`, ann.ID))
	got, err := b.lib.Get(t.Context(), ann.ID, soloKey)
	require.NoError(t, err)
	require.Equal(t, "Chapter 170", got.Chapter, "the duplicate's further Progress was kept")

	// Without its CSRF token the upload is refused.
	r = postMultipart(t, c, "/import", map[string]string{"format": "urls", "text": "https://asurascans.com/comics/nano-machine-aa11bb22"}, "", nil)
	require.Equal(t, http.StatusForbidden, r.Code)
	require.Equal(t, 2, b.Count(`SELECT count(*) FROM bookmarks`))

	// A file that is not the format it claims is named as such.
	r = postMultipart(t, c, "/import", map[string]string{"csrf": token, "format": "lectern"}, "x.json", []byte("{oops"))
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="import-error-message"]`), "not a Lectern export")

	// The export download round-trips through the same page.
	res := c.Get("/export")
	require.Equal(t, http.StatusOK, res.Code)
	require.Contains(t, res.Header.Get("Content-Disposition"), "attachment")
	var exp struct {
		Version   int `json:"version"`
		Bookmarks []struct {
			Key string `json:"key"`
		} `json:"bookmarks"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Body), &exp))
	require.Equal(t, 1, exp.Version)
	require.Len(t, exp.Bookmarks, 2)

	b.Reader("bob", false)
	bob := b.Browser()
	bob.SignIn("bob", password)
	r = postMultipart(t, bob, "/import", map[string]string{"csrf": apptest.CSRF(t, bob.Get("/import")), "format": "lectern"}, "export.json", []byte(res.Body))
	require.Equal(t, http.StatusOK, r.Code, r.Body)
	require.Equal(t, "Imported", text(r, `[data-testid="report-heading"]`), "the import form's preview box is unticked here")
}

package web_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// postMultipart sends the import form as a browser does.
func (c *client) postMultipart(path string, fields map[string]string, fileName string, file []byte) page {
	c.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		require.NoError(c.t, mw.WriteField(k, v))
	}
	if fileName != "" {
		fw, err := mw.CreateFormFile("file", fileName)
		require.NoError(c.t, err)
		_, err = fw.Write(file)
		require.NoError(c.t, err)
	}
	require.NoError(c.t, mw.Close())
	req, err := http.NewRequest(http.MethodPost, c.base+path, &buf)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.do(req)
}

const importList = `https://asurascans.com/comics/solo-leveling-1a2b3c4d	Chapter 150
https://asurascans.com/comics/omniscient-reader-9f8e7d6c  Chapter 99
https://example.org/manga/unknown  Chapter 2
https://asurascans.com/comics/solo-leveling-ffffffff	Chapter 170
`

func TestImportPreviewThenApply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.reader("ann", false)
	c := b.client()
	c.signIn("ann", password)
	form := c.get("/import")
	require.Equal(t, http.StatusOK, form.Code)
	token := csrf(t, form)

	// A bad line refuses the import, naming the line; nothing is written.
	r := c.postMultipart("/import", map[string]string{"csrf": token, "format": "urls", "dry_run": "1"}, "list.txt", []byte(importList))
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, r.Body)
	require.Equal(t, "Nothing was imported", text(r, `[data-testid="report-heading"]`))
	errs := texts(r, `[data-testid="import-error"]`)
	require.Len(t, errs, 1)
	require.Contains(t, errs[0], "3")
	require.Contains(t, errs[0], "not a page of a supported Site: example.org")
	require.Zero(t, b.count(`SELECT count(*) FROM bookmarks`))

	// "Import the other lines" carries the text: no second upload.
	apply := r.Doc.Find(`[data-testid="apply-form"]`)
	require.Equal(t, 1, apply.Length())
	carried := apply.Find(`textarea[name="text"]`).Text()
	require.Equal(t, importList, carried)
	r = c.postMultipart("/import", map[string]string{"csrf": token, "format": "urls", "skip_invalid": "1", "dry_run": "1", "text": carried}, "", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Body)
	require.Equal(t, "Preview: nothing was written yet", text(r, `[data-testid="report-heading"]`))
	require.Equal(t, "2", text(r, `[data-testid="count-created"]`))
	require.Equal(t, "1", text(r, `[data-testid="count-merged"]`))
	require.Equal(t, []string{"create", "create"}, texts(r, `[data-testid="item-action"]`))
	require.Zero(t, b.count(`SELECT count(*) FROM bookmarks`), "a preview writes nothing")

	r = c.postMultipart("/import", map[string]string{"csrf": token, "format": "urls", "skip_invalid": "1", "text": carried}, "", nil)
	require.Equal(t, http.StatusOK, r.Code, r.Body)
	require.Equal(t, "Imported", text(r, `[data-testid="report-heading"]`))
	require.Equal(t, 2, b.count(`SELECT count(*) FROM bookmarks WHERE reader_id = $1`, ann.ID))
	got, err := b.lib.Get(t.Context(), ann.ID, soloKey)
	require.NoError(t, err)
	require.Equal(t, "Chapter 170", got.Chapter, "the duplicate's further Progress was kept")

	// Without its CSRF token the upload is refused.
	r = c.postMultipart("/import", map[string]string{"format": "urls", "text": "https://asurascans.com/comics/nano-machine-aa11bb22"}, "", nil)
	require.Equal(t, http.StatusForbidden, r.Code)
	require.Equal(t, 2, b.count(`SELECT count(*) FROM bookmarks`))

	// A file that is not the format it claims is named as such.
	r = c.postMultipart("/import", map[string]string{"csrf": token, "format": "lectern"}, "x.json", []byte("{oops"))
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Contains(t, text(r, `[data-testid="import-error-message"]`), "not a Lectern export")

	// The export download round-trips through the same page.
	res := c.get("/export")
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

	b.reader("bob", false)
	bob := b.client()
	bob.signIn("bob", password)
	r = bob.postMultipart("/import", map[string]string{"csrf": csrf(t, bob.get("/import")), "format": "lectern"}, "export.json", []byte(res.Body))
	require.Equal(t, http.StatusOK, r.Code, r.Body)
	require.Equal(t, "Imported", text(r, `[data-testid="report-heading"]`), "the import form's preview box is unticked here")
}

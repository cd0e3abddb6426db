package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type testBundle struct {
	t   *testing.T
	st  *store.Store
	lib *bookmark.Service
	srv *httptest.Server
}

// setup serves the API with the export and import routes on a loopback
// server, over a fresh database and a River client that inserts real jobs.
func setup(t *testing.T) *testBundle {
	t.Helper()
	st := store.New(pgtest.New(t))
	rc, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{})
	require.NoError(t, err)
	lib := &bookmark.Service{Store: st, Registry: latest.Default(), Acquire: poll.Acquirer{Client: rc}, BaseURL: "https://lectern.example.net"}
	a := &api.API{Store: st, Library: lib, Version: "test"}
	a.ReaderRoutes = append(a.ReaderRoutes, a.ExportRoutes, a.ImportRoutes)
	srv := httptest.NewServer(a.Routes())
	t.Cleanup(srv.Close)
	return &testBundle{t: t, st: st, lib: lib, srv: srv}
}

func (b *testBundle) reader(name string) (int64, string) {
	b.t.Helper()
	r, err := b.st.CreateReader(context.Background(), name, "x", false)
	require.NoError(b.t, err)
	tok, hash, err := credential.NewToken()
	require.NoError(b.t, err)
	_, err = b.st.CreateToken(context.Background(), r.ID, "t", hash)
	require.NoError(b.t, err)
	return r.ID, tok
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func (b *testBundle) do(method, path, token string, body io.Reader) response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	require.NoError(b.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "text/plain")
	res, err := b.srv.Client().Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	return response{code: res.StatusCode, header: res.Header, body: data}
}

func (b *testBundle) put(readerID int64, seriesURL, title, chapter string) {
	b.t.Helper()
	ref, err := latest.Default().Resolve(seriesURL)
	require.NoError(b.t, err)
	_, _, err = b.lib.Put(context.Background(), readerID, ref.Key, bookmark.PutRequest{Site: ref.Site, SeriesURL: seriesURL, Title: title, Chapter: chapter})
	require.NoError(b.t, err)
}

func stripExportedAt(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "%s", body)
	delete(m, "exported_at")
	return m
}

func TestImportOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann, annTok := b.reader("ann")
	b.put(ann, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "Solo Leveling", "Chapter 179.5")
	b.put(ann, "https://demonicscans.org/manga/Martial-Peak", "", "Prologue")
	exported := b.do(http.MethodGet, "/export", annTok, nil).body

	_, bobTok := b.reader("bob")
	res := b.do(http.MethodPost, "/import?format=lectern", bobTok, bytes.NewReader(exported))
	require.Equal(t, http.StatusOK, res.code, "%s", res.body)
	var rep importReport
	require.NoError(t, json.Unmarshal(res.body, &rep))
	require.True(t, rep.Applied)
	require.Equal(t, 2, rep.Created)
	again := b.do(http.MethodGet, "/export", bobTok, nil).body
	require.Equal(t, stripExportedAt(t, exported), stripExportedAt(t, again), "export → import → export is the same file")

	// Bad lines: 422, the report names each, nothing is written.
	_, cyTok := b.reader("cy")
	list := "https://asurascans.com/comics/nano-machine-aa11bb22\tChapter 3\nhttps://example.com/manga/x\n"
	res = b.do(http.MethodPost, "/import?format=urls", cyTok, strings.NewReader(list))
	require.Equal(t, http.StatusUnprocessableEntity, res.code)
	rep = importReport{}
	require.NoError(t, json.Unmarshal(res.body, &rep))
	require.True(t, rep.Refused)
	require.Contains(t, rep.Error, "nothing was imported")
	require.Len(t, rep.Errors, 1)
	require.Equal(t, 2, rep.Errors[0].Line)
	require.Contains(t, rep.Errors[0].Error, "not a page of a supported Site: example.com")
	require.Equal(t, "[]", string(bytes.TrimSpace(b.doJSONBookmarks(cyTok))))

	res = b.do(http.MethodPost, "/import?format=urls&dry_run=true&skip_invalid=true", cyTok, strings.NewReader(list))
	require.Equal(t, http.StatusOK, res.code, "%s", res.body)
	require.Equal(t, "[]", string(bytes.TrimSpace(b.doJSONBookmarks(cyTok))), "a dry run writes nothing")
	res = b.do(http.MethodPost, "/import?format=urls&skip_invalid=1", cyTok, strings.NewReader(list))
	require.Equal(t, http.StatusOK, res.code, "%s", res.body)
	require.Contains(t, string(b.doJSONBookmarks(cyTok)), `"chapter": "Chapter 3"`)

	require.Equal(t, http.StatusBadRequest, b.do(http.MethodPost, "/import?format=mal", cyTok, strings.NewReader(list)).code)
	require.Equal(t, http.StatusBadRequest, b.do(http.MethodPost, "/import?format=urls", cyTok, strings.NewReader("")).code)
	require.Equal(t, http.StatusBadRequest, b.do(http.MethodPost, "/import?format=urls&dry_run=maybe", cyTok, strings.NewReader(list)).code)
	require.Equal(t, http.StatusBadRequest, b.do(http.MethodPost, "/import?format=lectern", cyTok, strings.NewReader("{not json")).code)
}

type importReport struct {
	Applied bool `json:"applied"`
	Refused bool `json:"refused"`
	Created int  `json:"created"`
	Errors  []struct {
		Line  int    `json:"line"`
		Error string `json:"error"`
	} `json:"errors"`
	Error string `json:"error"`
}

func (b *testBundle) doJSONBookmarks(tok string) []byte {
	b.t.Helper()
	exp := b.do(http.MethodGet, "/export", tok, nil)
	var doc struct {
		Bookmarks json.RawMessage `json:"bookmarks"`
	}
	require.NoError(b.t, json.Unmarshal(exp.body, &doc))
	return doc.Bookmarks
}

// The import endpoint alone takes bodies beyond the API's 64 KiB: a
// 5,000-line list (about 330 KiB) is accepted, 8 MiB + 1 byte is not.
func TestImportBodyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, tok := b.reader("ann")
	var list bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&list, "https://asurascans.com/comics/series-%d-a1b2c3d4\tChapter %d\n", i, i+1)
	}
	require.Greater(t, list.Len(), api.MaxBody)
	res := b.do(http.MethodPost, "/import?format=urls&dry_run=1", tok, &list)
	require.Equal(t, http.StatusOK, res.code, "%.300s", res.body)
	require.Contains(t, string(res.body), `"created":5000`)

	huge := io.MultiReader(strings.NewReader("https://asurascans.com/comics/x-a1b2c3d4 "), strings.NewReader(strings.Repeat("x", api.MaxImportBody)))
	res = b.do(http.MethodPost, "/import?format=urls", tok, huge)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.code, "%.300s", res.body)
	require.Contains(t, string(res.body), "at most 8388608 bytes")
}

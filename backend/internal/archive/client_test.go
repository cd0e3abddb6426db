package archive_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
)

// apiDo sends one API request with a Reader's token.
func (r *testBundle) apiDo(method, path, token string, body any) (int, http.Header, []byte) {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(r.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.app.URL+path, rd)
	require.NoError(r.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(r.t, err)
	return resp.StatusCode, resp.Header, b
}

func seriesAPI(key, rest string) string { return "/api/series/" + url.PathEscape(key) + rest }

// signIn is a web UI session of name's.
func (r *testBundle) signIn(name string) *apptest.Browser {
	r.t.Helper()
	b := r.app.Browser()
	b.SignIn(name, apptest.Password)
	return b
}

func openZip(t *testing.T, b []byte) *zip.Reader {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	return zr
}

func readEntry(t *testing.T, f *zip.File) []byte {
	t.Helper()
	rc, err := f.Open()
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err, "entry %s", f.Name)
	return b
}

func names(zr *zip.Reader) []string {
	var out []string
	for _, f := range zr.File {
		out = append(out, f.Name)
	}
	return out
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

package cover

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
	"github.com/stretchr/testify/require"
)

type routeBundle struct {
	dir   string
	store *blob.FS
	srv   *httptest.Server
}

// setupRoute mounts the handler on a chi router at prefix+"/covers/{address}",
// as the lead's router will, and serves it over real loopback HTTP.
func setupRoute(t *testing.T, dir, prefix string) *routeBundle {
	t.Helper()
	store := &blob.FS{Dir: dir}
	r := chi.NewRouter()
	h := NewHandler(store)
	r.Handle(prefix+"/covers/{address}", h)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return &routeBundle{dir: dir, store: store, srv: srv}
}

func (rb *routeBundle) do(t *testing.T, method, path string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, rb.srv.URL+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	// A bare client: no cookie jar, no credential of any kind.
	resp, err := (&http.Client{}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

func TestRouteServesStoredBytesWithoutCredentials(t *testing.T) {
	t.Parallel()
	rb := setupRoute(t, t.TempDir(), "")
	images := map[string][]byte{
		imagetype.TypeJPEG: imagetest.JPEG(t, 30_000),
		imagetype.TypePNG:  imagetest.PNG(t, 20_000),
		imagetype.TypeWebP: imagetest.WebP(t, 25_000),
		imagetype.TypeGIF:  imagetest.GIF(t, 1_000),
		imagetype.TypeAVIF: imagetest.AVIF(t, 40_000),
	}
	for typ, b := range images {
		addr, err := rb.store.Put(context.Background(), b, typ)
		require.NoError(t, err)
		for _, path := range []string{"/covers/" + addr, "/covers/" + addr + "." + imagetype.Ext(typ)} {
			resp, body := rb.do(t, http.MethodGet, path, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
			require.True(t, bytes.Equal(b, body), path)
			h := resp.Header
			require.Equal(t, typ, h.Get("Content-Type"), path)
			require.Equal(t, `"`+addr+`"`, h.Get("ETag"))
			require.Equal(t, "public, max-age=31536000, immutable", h.Get("Cache-Control"))
			require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
			require.Equal(t, "cross-origin", h.Get("Cross-Origin-Resource-Policy"))
			require.Equal(t, "default-src 'none'", h.Get("Content-Security-Policy"))
			require.Equal(t, len(b), int(resp.ContentLength))
			require.Empty(t, h.Values("Set-Cookie"), "the route creates no session")
			require.Empty(t, h.Get("Last-Modified"))
		}
	}
}

func TestRouteConditionalHeadAndRange(t *testing.T) {
	t.Parallel()
	rb := setupRoute(t, t.TempDir(), "")
	b := imagetest.JPEG(t, 20_000)
	addr, err := rb.store.Put(context.Background(), b, imagetype.TypeJPEG)
	require.NoError(t, err)
	path := "/covers/" + addr + ".jpg"

	for _, inm := range []string{`"` + addr + `"`, `W/"` + addr + `"`, `"other", "` + addr + `"`, "*"} {
		resp, body := rb.do(t, http.MethodGet, path, http.Header{"If-None-Match": {inm}})
		require.Equal(t, http.StatusNotModified, resp.StatusCode, inm)
		require.Empty(t, body)
		require.Equal(t, `"`+addr+`"`, resp.Header.Get("ETag"))
		require.Equal(t, "public, max-age=31536000, immutable", resp.Header.Get("Cache-Control"))
	}
	resp, body := rb.do(t, http.MethodGet, path, http.Header{"If-None-Match": {`"` + strings.Repeat("0", 64) + `"`}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, bytes.Equal(b, body))

	resp, body = rb.do(t, http.MethodHead, path, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, body)
	require.Equal(t, imagetype.TypeJPEG, resp.Header.Get("Content-Type"))
	require.Equal(t, "20000", resp.Header.Get("Content-Length"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))

	resp, body = rb.do(t, http.MethodGet, path, http.Header{"Range": {"bytes=0-9"}})
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	require.Equal(t, b[:10], body)
}

func TestRouteNotFoundForWhatWasNeverStored(t *testing.T) {
	t.Parallel()
	rb := setupRoute(t, t.TempDir(), "")
	stored := imagetest.JPEG(t, 5_000)
	addr, err := rb.store.Put(context.Background(), stored, imagetype.TypeJPEG)
	require.NoError(t, err)

	never := strings.Repeat("0", 64)
	for _, path := range []string{
		"/covers/" + never,
		"/covers/" + never + ".jpg",
		"/covers/" + addr + ".png", // stored, but not as a PNG
		"/covers/" + addr + ".webp",
	} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			resp, body := rb.do(t, method, path, nil)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
			require.Less(t, len(body), 64, "a small body")
			require.NotContains(t, string(body), string(stored[:3]))
			require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
			require.Empty(t, resp.Header.Get("ETag"))
		}
	}
	_, body := rb.do(t, http.MethodGet, "/covers/"+never, nil)
	require.JSONEq(t, `{"error":"cover not found"}`, string(body))
	require.Len(t, testenv.FilesUnder(t, rb.dir), 1, "a lookup never creates anything")
}

// TestRouteGivesNoBytesToMalformedOrTraversalShapedAddresses plants a secret
// file next to the store and a non-image file inside it, and asks for them
// in every shape an attacker might try.
func TestRouteGivesNoBytesToMalformedOrTraversalShapedAddresses(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "covers")
	rb := setupRoute(t, dir, "")
	stored := imagetest.PNG(t, 5_000)
	addr, err := rb.store.Put(context.Background(), stored, imagetype.TypePNG)
	require.NoError(t, err)

	secret := []byte("SECRET-DATABASE-PASSWORD")
	require.NoError(t, os.WriteFile(filepath.Join(root, "secret"), secret, 0o644))
	// Bytes that did not come through Put (an operator's mistake, a restore
	// from the wrong backup) at a valid-looking address: not an image, not
	// served.
	planted := strings.Repeat("e", 64)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "ee", "ee"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ee", "ee", planted), []byte("<script>alert(1)</script>"), 0o644))

	shard := addr[:2] + "/" + addr[2:4] + "/" + addr
	paths := []string{
		"/covers/",
		"/covers/abc",
		"/covers/" + strings.ToUpper(addr),
		"/covers/" + addr[:63],
		"/covers/" + addr + "0",
		"/covers/" + addr + ".",
		"/covers/" + addr + ".jpeg",
		"/covers/" + addr + ".PNG",
		"/covers/" + addr + ".png.png",
		"/covers/" + addr + ".svg",
		"/covers/" + addr + "%00",
		"/covers/" + addr + "%2Fx",
		"/covers/" + addr + "?x=1/../../secret",
		"/covers/..%2fsecret",
		"/covers/..%2F..%2Fsecret",
		"/covers/%2e%2e/secret",
		"/covers/../secret",
		"/covers/../../secret",
		"/covers/" + shard,
		"/covers/..%2f" + addr,
		"/covers/%2e%2e%2f" + addr,
		"/covers/" + planted,
		"/covers/" + planted + ".jpg",
		"/covers/%20" + addr,
		"/covers/" + addr + "%20",
	}
	for _, path := range paths {
		resp, body := rb.do(t, http.MethodGet, path, nil)
		if strings.HasPrefix(path, "/covers/"+addr+"?") {
			// The query is not part of the address: the Cover itself.
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
			require.True(t, bytes.Equal(stored, body), path)
			continue
		}
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.NotContains(t, string(body), string(secret), path)
		require.NotContains(t, string(body), "script", path)
		require.False(t, bytes.Contains(body, stored[:16]), path)
	}
}

// TestHandlerAloneRefusesEncodedTraversal drives the handler without chi,
// mounted under StripPrefix-free catch-all routing, where the last-segment
// rule alone must hold.
func TestHandlerAloneRefusesEncodedTraversal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := &blob.FS{Dir: dir}
	addr, err := store.Put(context.Background(), imagetest.GIF(t, 3_000), imagetype.TypeGIF)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/", NewHandler(store))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for path, want := range map[string]int{
		"/covers/" + addr:                 http.StatusOK,
		"/anywhere/else/" + addr:          http.StatusOK,
		"/covers/..%2f" + addr:            http.StatusNotFound,
		"/covers/x%2F" + addr:             http.StatusNotFound,
		"/covers/" + addr + "%2e" + "gif": http.StatusNotFound,
	} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, want, resp.StatusCode, path)
	}
}

func TestRouteRefusesOtherMethods(t *testing.T) {
	t.Parallel()
	rb := setupRoute(t, t.TempDir(), "")
	addr, err := rb.store.Put(context.Background(), imagetest.JPEG(t, 1_000), imagetype.TypeJPEG)
	require.NoError(t, err)
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
		resp, body := rb.do(t, method, "/covers/"+addr, nil)
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
		require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
		require.JSONEq(t, `{"error":"method not allowed"}`, string(body))
	}
	require.Len(t, testenv.FilesUnder(t, rb.dir), 1, "nothing was changed or removed")
}

// TestCoversSurviveARestart stores through one store and router, then serves
// from a fresh store, handler and server over the same volume, mounted under
// a different prefix.
func TestCoversSurviveARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := setupRoute(t, dir, "")
	b := imagetest.WebP(t, 33_000)
	addr, err := first.store.Put(context.Background(), b, imagetype.TypeWebP)
	require.NoError(t, err)
	first.srv.Close()

	second := setupRoute(t, dir, "/lectern")
	resp, body := second.do(t, http.MethodGet, "/lectern/covers/"+addr+".webp", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, imagetype.TypeWebP, resp.Header.Get("Content-Type"))
	require.True(t, bytes.Equal(b, body))
}

func TestURLIsAbsoluteAndServed(t *testing.T) {
	t.Parallel()
	addr := strings.Repeat("a1", 32)
	require.Equal(t, "https://lectern.example/covers/"+addr+".png", URL("https://lectern.example", addr, imagetype.TypePNG))
	require.Equal(t, "https://lectern.example/covers/"+addr+".png", URL("https://lectern.example/", addr, imagetype.TypePNG))
	require.Equal(t, "https://h.example/sub/covers/"+addr+".avif", URL("https://h.example/sub/", addr, imagetype.TypeAVIF))
	require.Equal(t, "https://lectern.example/covers/"+addr, URL("https://lectern.example", addr, "application/octet-stream"))
	require.Empty(t, URL("https://lectern.example", "", imagetype.TypeJPEG), "no bytes yet: the empty string")

	rb := setupRoute(t, t.TempDir(), "")
	for typ, b := range map[string][]byte{imagetype.TypeJPEG: imagetest.JPEG(t, 2_000), imagetype.TypeAVIF: imagetest.AVIF(t, 2_000)} {
		stored, err := rb.store.Put(context.Background(), b, typ)
		require.NoError(t, err)
		resp, err := http.Get(URL(rb.srv.URL, stored, typ))
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.True(t, bytes.Equal(b, got))
	}
}

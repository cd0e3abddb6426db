package face_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/face"
)

func TestNegotiate(t *testing.T) {
	for accept, want := range map[string]face.Encoding{
		"":                           face.Identity,
		"identity":                   face.Identity,
		"gzip":                       face.Gzip,
		"x-gzip":                     face.Gzip,
		"gzip, deflate, br, zstd":    face.Zstd,
		"zstd;q=0.1, gzip;q=0.9":     face.Gzip,
		"zstd;q=0, gzip":             face.Gzip,
		"gzip;q=0":                   face.Identity,
		"br":                         face.Identity,
		"*":                          face.Zstd,
		"*;q=0":                      face.Identity,
		"gzip, *;q=0":                face.Gzip,
		"ZSTD":                       face.Zstd,
		"gzip;q=0.5, zstd;q=0.5":     face.Zstd,
		"deflate, gzip;q=1.0, *;q=0": face.Gzip,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if accept != "" {
			r.Header.Set("Accept-Encoding", accept)
		}
		require.Equal(t, want, face.Negotiate(r), "Accept-Encoding: %s", accept)
	}
}

func serve(h http.Handler, accept string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Accept-Encoding", accept)
	w := httptest.NewRecorder()
	face.Compress(h).ServeHTTP(w, r)
	return w
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return string(out)
}

func TestCompressJSONOnly(t *testing.T) {
	big := strings.Repeat(`{"key":"asura:solo-leveling"},`, 100)
	jsonH := func(body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"abc"`)
			face.WriteJSON(w, http.StatusOK, body)
		})
	}
	w := serve(jsonH(big), "gzip")
	require.Equal(t, "gzip", w.Header().Get("Content-Encoding"))
	require.Equal(t, "Accept-Encoding", w.Header().Get("Vary"))
	require.Equal(t, `W/"abc"`, w.Header().Get("ETag"), "the compressed bytes are not the tagged ones")
	require.Equal(t, `"`+strings.ReplaceAll(big, `"`, `\"`)+`"`+"\n", gunzip(t, w.Body.Bytes()))

	w = serve(jsonH("small"), "gzip")
	require.Empty(t, w.Header().Get("Content-Encoding"), "under 1 KiB goes as it is")
	require.Equal(t, `"abc"`, w.Header().Get("ETag"))
	require.Equal(t, "\"small\"\n", w.Body.String())
	require.Equal(t, "Accept-Encoding", w.Header().Get("Vary"))

	w = serve(jsonH(big), "")
	require.Empty(t, w.Header().Get("Content-Encoding"))
	require.Equal(t, "Accept-Encoding", w.Header().Get("Vary"), "a cache must know the answer varies")

	img := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/webp")
		_, _ = w.Write([]byte(big))
	})
	w = serve(img, "gzip")
	require.Empty(t, w.Header().Get("Content-Encoding"), "only JSON is compressed")
	require.Equal(t, big, w.Body.String())

	// A handler that already encoded its body is left alone.
	pre := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		face.WriteEncoded(w, face.JSONType, face.Gzip, []byte("already gzip"))
	})
	w = serve(pre, "gzip")
	require.Equal(t, "gzip", w.Header().Get("Content-Encoding"))
	require.Equal(t, "already gzip", w.Body.String())

	// Streamed in small writes, flushed midway.
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", face.JSONType)
		for i := range 300 {
			_, _ = io.WriteString(w, `{"n":`+strings.Repeat("1", i%7+1)+`},`)
			if i == 10 {
				http.NewResponseController(w).Flush() //nolint:errcheck
			}
		}
	})
	want := serve(stream, "")
	w = serve(stream, "gzip")
	require.Equal(t, "gzip", w.Header().Get("Content-Encoding"))
	require.Equal(t, want.Body.String(), gunzip(t, w.Body.Bytes()))
}

func TestCompressAbortLeavesABrokenBody(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", face.JSONType)
		_, _ = io.WriteString(w, strings.Repeat(`{"entry":1},`, 200))
		panic(http.ErrAbortHandler)
	})
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	w := httptest.NewRecorder()
	require.PanicsWithValue(t, http.ErrAbortHandler, func() { face.Compress(h).ServeHTTP(w, r) })
	zr, err := gzip.NewReader(bytes.NewReader(w.Body.Bytes()))
	if err == nil {
		_, err = io.ReadAll(zr)
	}
	require.Error(t, err, "no gzip trailer: the client sees a broken body, not a short one that looks whole")
}

package cover

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
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
)

// The public Cover route, asked for any path under /covers/ with any Range
// or validator: it answers only 200/206/304 with the stored bytes of exactly
// the address asked for, and 404/405/416 otherwise; never a 5xx, never bytes
// from outside the store. A file planted beside the store (a secret next to
// the volume) is never served, whatever the path does to reach it.
func FuzzCoverRoute(f *testing.F) {
	root := f.TempDir()
	dir := filepath.Join(root, "covers")
	store := &blob.FS{Dir: dir}
	img := imagetest.PNG(f, 3000)
	address, err := store.Put(context.Background(), img, imagetype.TypePNG)
	if err != nil {
		f.Fatal(err)
	}
	secret := []byte("SECRET-NOT-A-COVER")
	if err := os.WriteFile(filepath.Join(root, "secret"), secret, 0o644); err != nil {
		f.Fatal(err)
	}
	r := chi.NewRouter()
	r.Handle("/covers/{address}", NewHandler(store))

	for _, s := range []string{
		address, address + ".png", address + ".jpg", strings.ToUpper(address), address[:63],
		address + ".png.png", address + "%2epng", "..%2f..%2fsecret", "../secret", "%2e%2e/secret",
		address[:2] + "%2f" + address[2:4] + "%2f" + address, address + "?x=1", address + ";.png", "",
	} {
		f.Add(uint8(0), s, "")
	}
	f.Add(uint8(0), address, "bytes=0-10")
	f.Add(uint8(1), address+".png", "bytes=5000-")
	f.Add(uint8(2), address, "")

	methods := []string{"GET", "HEAD", "POST", "DELETE", "OPTIONS"}
	f.Fuzz(func(t *testing.T, method uint8, name, rng string) {
		if strings.ContainsAny(name, " \r\n") || strings.ContainsAny(rng, "\r\n") {
			return
		}
		m := methods[int(method)%len(methods)]
		raw := fmt.Sprintf("%s /covers/%s HTTP/1.1\r\nHost: x\r\n", m, name)
		if rng != "" {
			raw += "Range: " + rng + "\r\nIf-None-Match: " + rng + "\r\n"
		}
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + "\r\n")))
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		if bytes.Contains(body, secret) {
			t.Fatalf("%s /covers/%s served the planted file", m, name)
		}
		switch rec.Code {
		case http.StatusOK, http.StatusPartialContent, http.StatusNotModified:
			want := strings.TrimSuffix(req.URL.EscapedPath(), ".png")
			if want != "/covers/"+address {
				t.Fatalf("%s %q answered %d for a path that is not the stored address", m, req.URL.EscapedPath(), rec.Code)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" || (rec.Code == http.StatusOK && rec.Header().Get("Content-Type") != imagetype.TypePNG) {
				t.Fatalf("%s %q: headers %v", m, name, rec.Header())
			}
			if rec.Code == http.StatusOK && m == "GET" && !bytes.Equal(body, img) {
				t.Fatalf("%s %q: %d bytes, not the stored Cover", m, name, len(body))
			}
			if rec.Code == http.StatusPartialContent && !bytes.Contains(img, body) && !strings.Contains(rec.Header().Get("Content-Type"), "multipart") {
				t.Fatalf("%s %q range %q: bytes not from the Cover", m, name, rng)
			}
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusRequestedRangeNotSatisfiable:
		default:
			t.Fatalf("%s %q (range %q) answered %d: %s", m, name, rng, rec.Code, body)
		}
	})
}

// parseName accepts exactly an address, optionally with one known image
// extension, and nothing that could name another path.
func FuzzParseName(f *testing.F) {
	a := strings.Repeat("0123456789abcdef", 4)
	for _, s := range []string{a, a + ".png", a + ".jpeg", a + ".", "." + a, a + "/x", strings.ToUpper(a)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		address, ctype, ok := parseName(name)
		if !ok {
			if address != "" || ctype != "" {
				t.Fatalf("%q refused but answered %q %q", name, address, ctype)
			}
			return
		}
		if !blob.ValidAddress(address) || strings.ContainsAny(address, "./\\%") {
			t.Fatalf("%q gave address %q", name, address)
		}
		want := address
		if ctype != "" {
			want += "." + imagetype.Ext(ctype)
		}
		if name != want {
			t.Fatalf("%q accepted as %q %q, which names %q", name, address, ctype, want)
		}
	})
}

package web

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/go-chi/chi/v5"
)

// asset is one embedded static file at its checksummed URL.
type asset struct {
	url         string
	etag        string
	contentType string
	body        []byte
}

// assets maps static file names to checksummed URLs. A URL names the bytes,
// so a year of immutable caching is safe: a changed file gets a new URL.
type assets struct {
	byName map[string]*asset
	byFile map[string]*asset // the last URL segment, e.g. cinder.3f2a1b4c5d6e.css
}

var staticTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
	".svg": "image/svg+xml",
	".png": "image/png",
	".ico": "image/x-icon",
}

func loadAssets(fsys fs.FS) (*assets, error) {
	a := &assets{byName: map[string]*asset{}, byFile: map[string]*asset{}}
	entries, err := fs.ReadDir(fsys, "static")
	if err != nil {
		return nil, fmt.Errorf("read static files: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		ext := path.Ext(name)
		ct, ok := staticTypes[ext]
		if !ok {
			return nil, fmt.Errorf("static file %s: no content type known for %q", name, ext)
		}
		body, err := fs.ReadFile(fsys, "static/"+name)
		if err != nil {
			return nil, fmt.Errorf("read static file %s: %w", name, err)
		}
		sum := sha256.Sum256(body)
		short := hex.EncodeToString(sum[:6])
		file := strings.TrimSuffix(name, ext) + "." + short + ext
		x := &asset{url: "/static/" + file, etag: `"` + short + `"`, contentType: ct, body: body}
		a.byName[name] = x
		a.byFile[file] = x
	}
	return a, nil
}

// url is the template function {{static "cinder.css"}}. An unknown name is
// an error, so a template naming a missing file fails its first render in
// the tests.
func (a *assets) url(name string) (string, error) {
	x, ok := a.byName[name]
	if !ok {
		return "", fmt.Errorf("no static file %q", name)
	}
	return x.url, nil
}

// static serves an embedded file by its checksummed name only: an old or
// guessed checksum is a 404, never a stale file cached for a year.
func (u *UI) static(w http.ResponseWriter, r *http.Request) {
	x, ok := u.assets.byFile[chi.URLParam(r, "name")]
	if !ok {
		http.Error(w, "no such static file", http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", x.contentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", x.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && match == x.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(x.body)
}

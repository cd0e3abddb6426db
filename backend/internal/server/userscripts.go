package server

import (
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/go-chi/chi/v5"

	webassets "github.com/lectern-reader/lectern/assets"
)

// userscriptHandler serves the built userscripts with PUBLIC_BASE_URL and
// its host written in, so Tampermonkey or Violentmonkey installs them from a
// link and they talk to this deployment only. The substituted bodies are
// built once at start: the base URL does not change while running.
func userscriptHandler(baseURL string) (http.HandlerFunc, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, err
	}
	repl := strings.NewReplacer("__LECTERN_BASE_URL__", baseURL, "__LECTERN_HOST__", u.Hostname())
	bodies := map[string][]byte{}
	err = fs.WalkDir(webassets.Userscripts, "userscripts", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := fs.ReadFile(webassets.Userscripts, p)
		if err != nil {
			return err
		}
		bodies[path.Base(p)] = []byte(repl.Replace(string(raw)))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func(w http.ResponseWriter, r *http.Request) {
		body, ok := bodies[chi.URLParam(r, "name")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		// Short caching: a script manager checks @updateURL for new versions.
		h.Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(body)
	}, nil
}

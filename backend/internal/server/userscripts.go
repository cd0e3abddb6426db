package server

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	webassets "github.com/lectern-reader/lectern/assets"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// changedSince is what the userscripts need of the added Sites: when they
// last changed, the same on every replica (addedsites.Service).
type changedSince interface{ Changed() int64 }

// userscriptHandler serves the built userscripts with PUBLIC_BASE_URL and
// its host written in, so Tampermonkey or Violentmonkey installs them from a
// link and they talk to this deployment only. Their @match lines are made
// at each request from the live registry: every host of every Site of the
// script's Library, built-in and added; and their @version gains the time
// the added Sites last changed, so a script manager's update check brings
// the new list. @connect stays this deployment only.
func userscriptHandler(baseURL string, reg *latest.Registry, sites changedSince) (http.HandlerFunc, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, err
	}
	repl := strings.NewReplacer("__LECTERN_BASE_URL__", baseURL, "__LECTERN_HOST__", u.Hostname())
	bodies := map[string]string{}
	err = fs.WalkDir(webassets.Userscripts, "userscripts", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := fs.ReadFile(webassets.Userscripts, p)
		if err != nil {
			return err
		}
		bodies[path.Base(p)] = repl.Replace(string(raw))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "name")
		body, ok := bodies[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		kind := latest.Manga
		if strings.Contains(name, "novel") {
			kind = latest.Novel
		}
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		// Short caching: a script manager checks @updateURL for new versions.
		h.Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write([]byte(withSites(body, reg, kind, sites.Changed())))
	}, nil
}

// withSites rewrites a userscript's header: one @match pair per host of
// every Site of kind, in the place of the built ones, and the version
// suffixed with changed (Unix seconds; 0 leaves it as built). The adapter
// table for added Sites replaces __LECTERN_ADDED_SITES__ when the script
// carries it.
func withSites(body string, reg *latest.Registry, kind latest.Kind, changed int64) string {
	end := strings.Index(body, "// ==/UserScript==")
	if end < 0 {
		return body
	}
	var head strings.Builder
	matched := false
	for line := range strings.SplitSeq(body[:end], "\n") {
		field := strings.Fields(strings.TrimPrefix(line, "//"))
		switch {
		case len(field) > 0 && field[0] == "@match":
			if matched {
				continue
			}
			matched = true
			for _, s := range reg.Sites() {
				if s.Kind != kind {
					continue
				}
				for _, h := range s.AllHostNames() {
					head.WriteString("// @match        https://" + h + "/*\n")
				}
			}
			continue
		case len(field) > 1 && field[0] == "@version" && changed > 0:
			line = "// @version      " + field[1] + "." + strconv.FormatInt(changed, 10)
		}
		head.WriteString(line + "\n")
	}
	out := strings.TrimSuffix(head.String(), "\n") + body[end:]
	return strings.Replace(out, "__LECTERN_ADDED_SITES__", addedSitesJSON(reg, kind), 1)
}

// addedSiteJSON is what a userscript's family adapters know of an added
// Site: which theme its pages have and where its series pages live.
type addedSiteJSON struct {
	Site        string   `json:"site"`
	Family      string   `json:"family"`
	Hosts       []string `json:"hosts"`
	SeriesPaths []string `json:"series_paths"`
}

func addedSitesJSON(reg *latest.Registry, kind latest.Kind) string {
	out := []addedSiteJSON{}
	for _, s := range reg.Added() {
		if s.Kind != kind {
			continue
		}
		paths := latest.UsualSeriesPaths
		if p := s.Options[latest.OptSeriesPath]; p != "" {
			paths = []string{strings.Trim(p, "/")}
		}
		out = append(out, addedSiteJSON{Site: s.Name, Family: s.Family, Hosts: s.Hosts, SeriesPaths: paths})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "[]"
	}
	return string(b)
}

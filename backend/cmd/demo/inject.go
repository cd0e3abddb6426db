package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// The demo's injection: the one thing `make demo` adds to a Site page. See
// demo_loader.js for what it is and why it exists only here.

//go:embed demo_loader.js
var loaderTemplate string

// demoPrefix is where the demo's endpoints live on every fixture host.
const demoPrefix = "/__lectern-demo/"

// maxValueBytes bounds one stored GM value (a cached Bookmarks list of a
// few hundred entries is a few hundred kilobytes).
const maxValueBytes = 4 << 20

// injection serves the loader, the GM storage behind it and the same-origin
// proxy to Lectern's API. It answers 503 until ready is called.
type injection struct {
	client   *http.Client
	registry *latest.Registry

	mu     sync.Mutex
	origin string
	proxy  *httputil.ReverseProxy
	values map[string]map[string]json.RawMessage // script name → GM storage
}

func newInjection() *injection {
	return &injection{client: &http.Client{Timeout: 10 * time.Second}, registry: latest.Default()}
}

// ready points the injection at a running Lectern and gives both scripts'
// storage the demo Reader's token, as if it had been pasted into the panel.
func (in *injection) ready(origin, token string) error {
	target, err := url.Parse(origin)
	if err != nil {
		return fmt.Errorf("demo injection: %w", err)
	}
	tok, err := json.Marshal(token)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.origin = target.Scheme + "://" + target.Host
	in.values = map[string]map[string]json.RawMessage{
		"lectern-manga": {"lectern.token": tok},
		"lectern-novel": {"lectern.token": tok},
	}
	in.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
			pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, strings.TrimSuffix(demoPrefix, "/"))
			pr.Out.URL.RawPath = strings.TrimPrefix(pr.In.URL.RawPath, strings.TrimSuffix(demoPrefix, "/"))
			pr.Out.Host = target.Host
			// What GM_xmlhttpRequest with anonymous: true sends: no cookies
			// and nothing that names the Site's page.
			for _, h := range []string{"Cookie", "Origin", "Referer"} {
				pr.Out.Header.Del(h)
			}
		},
	}
	return nil
}

// scriptFor names the userscript of a Site's Library.
func scriptFor(reg *latest.Registry, site string) string {
	if s, ok := reg.Lookup(site); ok && s.Kind == latest.Novel {
		return "lectern-novel"
	}
	return "lectern-manga"
}

// inject is the fixture server's Inject hook: one deferred script tag, so
// the userscript runs after the page is parsed, as document-idle does.
func (in *injection) inject(_ *http.Request, p fixturesites.Page) string {
	src := demoPrefix + "userscript.js?script=" + url.QueryEscape(scriptFor(in.registry, p.Site))
	return "\n<!-- make demo only: the Lectern userscript with stand-in GM_* functions -->\n" +
		`<script src="` + html.EscapeString(src) + `" defer></script>` + "\n"
}

func (in *injection) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.mu.Lock()
	origin, proxy := in.origin, in.proxy
	in.mu.Unlock()
	if proxy == nil {
		http.Error(w, "the demo is starting", http.StatusServiceUnavailable)
		return
	}
	path := r.URL.Path
	switch {
	case path == demoPrefix+"userscript.js" && r.Method == http.MethodGet:
		in.loader(w, r, origin)
	case path == demoPrefix+"gm" && r.Method == http.MethodPost:
		in.setValue(w, r)
	case strings.HasPrefix(path, demoPrefix+"api/"):
		switch r.Method {
		case http.MethodGet, http.MethodPut, http.MethodDelete:
			proxy.ServeHTTP(w, r)
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	default:
		http.NotFound(w, r)
	}
}

// loader answers the built userscript exactly as Lectern serves it (its
// base URL written in), wrapped by demo_loader.js with the storage's current
// values.
func (in *injection) loader(w http.ResponseWriter, r *http.Request, origin string) {
	script := r.URL.Query().Get("script")
	values, ok := in.snapshot(script)
	if !ok {
		http.NotFound(w, r)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, origin+"/userscripts/"+script+".user.js", nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	resp, err := in.client.Do(req)
	if err != nil {
		http.Error(w, "fetch the userscript from Lectern: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		http.Error(w, fmt.Sprintf("fetch the userscript from Lectern: HTTP %d %v", resp.StatusCode, err), http.StatusBadGateway)
		return
	}
	name, _ := json.Marshal(script)
	org, _ := json.Marshal(origin)
	// One pass, so nothing inside the userscript is taken for a placeholder.
	out := strings.NewReplacer("__SCRIPT__", string(name), "__ORIGIN__", string(org),
		"__VALUES__", string(values), "__USERSCRIPT__", string(body)).Replace(loaderTemplate)
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = io.WriteString(w, out)
}

// snapshot is a script's storage as a JSON object.
func (in *injection) snapshot(script string) ([]byte, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	vals, ok := in.values[script]
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(vals)
	return b, err == nil
}

// setValue stores one GM value: {"key": "lectern.…", "value": <JSON>}.
func (in *injection) setValue(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxValueBytes))
	if err := dec.Decode(&body); err != nil || !strings.HasPrefix(body.Key, "lectern.") || len(body.Value) == 0 || !json.Valid(body.Value) {
		http.Error(w, `want {"key": "lectern.…", "value": <JSON>}`, http.StatusBadRequest)
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	vals, ok := in.values[r.URL.Query().Get("script")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	vals[body.Key] = body.Value
	w.WriteHeader(http.StatusNoContent)
}

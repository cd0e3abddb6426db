// Package fixturesites serves every supported Site and the image hosts their
// pages name on the fake network (package fakenet): the pages of
// testdata/sites (or, file by file, of Options.Override) at the URLs they
// represent, generated Cover and page images at the addresses the Site
// registry reads from those pages, and 404 for anything else on those
// hosts.
//
// It is for tests, for `make demo` and for fault tests (SetMode: 429, 503, a
// request that never answers). Lectern reaches it through the fake network's
// seams for the destination gate (LookupNetIP and DialContext, promoted
// from the Net), a browser through Chromium's --host-resolver-rules
// (ChromiumFlags). A test's own answers on the same Net (Options.Net) win
// over the fixtures' for the URLs they name. Nothing here is reachable from
// `lectern serve`, which has no such seams.
package fixturesites

import (
	"errors"
	"fmt"
	"html"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// Mode is how the server answers the requests for a host.
type Mode int

// The modes. Normal serves the fixtures; the others answer every request for
// the host (pages and images alike) the way an unwell Site does.
const (
	Normal Mode = iota
	// TooManyRequests answers 429 with Retry-After: 60.
	TooManyRequests
	// Unavailable answers 503.
	Unavailable
	// Hang never answers: the request is held until the client gives up or
	// the server closes.
	Hang
)

func (m Mode) String() string {
	switch m {
	case Normal:
		return "normal"
	case TooManyRequests:
		return "429"
	case Unavailable:
		return "503"
	case Hang:
		return "hang"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// Options configure a Server. The zero value serves the repository's
// testdata/sites on a free loopback port.
type Options struct {
	// Dir holds the fixtures (<Dir>/<site>/<file>); default testdata/sites
	// of the repository above the working directory.
	Dir string
	// Override, when set, is a directory laid out like Dir whose files win:
	// a page whose <Override>/<site>/<file> exists serves that file, read on
	// every request so it can be changed while the server runs; the others
	// serve Dir's. Only the names in the pages table are looked up, never a
	// path from a request. A file there that cannot be read answers 404 with
	// a warning in the log, so a broken override is not mistaken for the
	// fixture it was meant to replace. Images are derived from Dir's
	// fixtures, at Start.
	Override string
	// Net is the fake network the fixtures are served on, shared with the
	// test's own answers; nil starts one of their own (on Addr), closed by
	// Close.
	Net *fakenet.Net
	// Addr is the listen address of a network of their own; default
	// 127.0.0.1:0.
	Addr string
	// Inject, when set, returns HTML inserted before </body> of every HTML
	// page served (the demo's userscript loader). Tests leave it nil.
	Inject func(r *http.Request, p Page) string
	// Extra maps path prefixes to handlers asked before the fixtures on
	// every host (the demo's same-origin endpoints). Tests leave it nil.
	Extra map[string]http.Handler
	// Logger receives a line per request at debug level; default discards.
	Logger *slog.Logger
	// Registry names the Sites the fixtures are pages of; default the
	// built-in Sites.
	Registry *latest.Registry
}

// Server is the fixture Sites on a running fake network, whose seams
// (LookupNetIP, DialContext, RootCAs, ChromiumFlags...) it carries.
type Server struct {
	*fakenet.Net
	ownNet bool
	opts   Options
	hosts  []string
	known  map[string]bool
	routes map[string]*route
	covers map[string]string
	images []string
	quit   chan struct{}
	closed sync.Once

	mu    sync.Mutex
	modes map[string]Mode
	all   Mode

	pushes pushes
	// started dates the listings' entries of pages never edited.
	started time.Time
}

// route is one answer: a page, or a generated image made on first request.
type route struct {
	page   *Page
	body   []byte
	ctype  string
	kind   imageKind
	seed   string
	once   sync.Once
	isHTML bool
	// listing names the Site whose listing the route generates from the
	// series pages listed (listings.go).
	listing string
	listed  []*Page
}

func (r *route) bytes() []byte {
	if r.page != nil {
		return r.body
	}
	r.once.Do(func() { r.body = generate(r.seed, r.kind) })
	return r.body
}

// Start loads the fixtures, derives the images from them with the Site
// registry, and serves them on the fake network.
func Start(opts Options) (*Server, error) {
	if opts.Dir == "" {
		dir, err := findFixtures()
		if err != nil {
			return nil, err
		}
		opts.Dir = dir
	}
	if opts.Override != "" {
		dir, err := OverrideDir(opts.Override)
		if err != nil {
			return nil, fmt.Errorf("fixture sites: override directory: %w", err)
		}
		opts.Override = dir
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:    opts,
		known:   map[string]bool{},
		routes:  map[string]*route{},
		covers:  map[string]string{},
		quit:    make(chan struct{}),
		modes:   map[string]Mode{},
		started: time.Now().UTC().Truncate(time.Second),
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	s.Net = opts.Net
	if s.Net == nil {
		n, err := fakenet.Start(fakenet.Options{Addr: opts.Addr, Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("fixture sites: %w", err)
		}
		s.Net, s.ownNet = n, true
	}
	for _, h := range s.hosts {
		s.HandleHost(h, s)
	}
	for h := range pushServices {
		s.HandleHost(h, s.pushHandler(h))
	}
	// The fixture server's own address lists the pushes too.
	s.HandleHost("127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != PushesPath {
			http.NotFound(w, r)
			return
		}
		s.servePushes(w, r)
	}))
	return s, nil
}

// OverrideDir is dir made absolute, or an error when it is not a directory:
// Start's check of Options.Override, for a caller that wants it sooner.
func OverrideDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	return abs, nil
}

// Close ends held (Hang) requests at once, and stops the fake network when
// it is the fixtures' own.
func (s *Server) Close() error {
	var err error
	s.closed.Do(func() {
		close(s.quit)
		if s.ownNet {
			err = s.Net.Close()
		}
	})
	return err
}

// Hosts are every hostname the server answers for, sorted: the Sites' hosts
// with and without "www." and the image hosts the fixtures name.
func (s *Server) Hosts() []string { return slices.Clone(s.hosts) }

// Pages are the pages served.
func (s *Server) Pages() []Page { return slices.Clone(pages) }

// CoverOf is the Cover address the registry reads from the series page at
// seriesPageURL (a Page's ReadAs, else its URL), "" when it reads none.
func (s *Server) CoverOf(seriesPageURL string) string { return s.covers[seriesPageURL] }

// Images are the URLs of every generated image served.
func (s *Server) Images() []string { return slices.Clone(s.images) }

// SetMode sets how requests for host are answered ("www." ignored); host ""
// sets every host without a mode of its own.
func (s *Server) SetMode(host string, m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if host == "" {
		s.all = m
		return
	}
	s.modes[strings.TrimPrefix(normHost(host), "www.")] = m
}

// Hits counts the requests for rawURL so far (its path, and its query when
// it has one; "www." ignored).
func (s *Server) Hits(rawURL string) int {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0
	}
	u.Host = strings.TrimPrefix(normHost(u.Hostname()), "www.")
	bare := s.Net.Hits(u.String())
	u.Host = "www." + u.Host
	return bare + s.Net.Hits(u.String())
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if r.URL.Path == PushesPath {
		s.servePushes(w, r)
		return
	}
	for prefix, h := range s.opts.Extra {
		if strings.HasPrefix(r.URL.Path, prefix) {
			h.ServeHTTP(w, r)
			return
		}
	}
	s.mu.Lock()
	mode, ok := s.modes[strings.TrimPrefix(normHost(host), "www.")]
	if !ok {
		mode = s.all
	}
	s.mu.Unlock()
	s.opts.Logger.Debug("fixture request", "method", r.Method, "host", host, "path", r.URL.RequestURI(), "mode", mode)

	switch mode {
	case TooManyRequests:
		w.Header().Set("Retry-After", "60")
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
		return
	case Unavailable:
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		return
	case Hang:
		select {
		case <-r.Context().Done():
		case <-s.quit:
		}
		// Hang up without an answer, as a dead upstream does.
		panic(http.ErrAbortHandler)
	}
	rt := s.routes[key(host, r.URL.Path, r.URL.RawQuery)]
	if rt == nil {
		rt = s.routes[key(host, r.URL.Path, "")]
	}
	// Pages are read with GET; a theme's ajax chapter list (Post) answers
	// the POST its script sends.
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !(r.Method == http.MethodPost && rt != nil && rt.page != nil && rt.page.Post) {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if rt == nil {
		http.NotFound(w, r)
		return
	}
	body, ok := s.body(rt)
	if rt.listing != "" {
		body, ok = s.listingBody(rt.listing, rt.listed)
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	if rt.isHTML && s.opts.Inject != nil {
		body = injectBeforeBodyEnd(body, s.opts.Inject(r, *rt.page))
	}
	h := w.Header()
	h.Set("Content-Type", rt.ctype)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// body is what rt serves now, false for a 404: the one place that chooses
// between a page's override (Options.Override) and its fixture.
func (s *Server) body(rt *route) ([]byte, bool) {
	if s.opts.Override == "" || rt.page == nil || rt.page.File == "" {
		return rt.bytes(), true
	}
	// Built from the pages table alone (load checked its names).
	path := filepath.Join(s.opts.Override, rt.page.Site, rt.page.File)
	b, err := readOverride(path)
	switch {
	case err == nil:
		return b, true
	case errors.Is(err, fs.ErrNotExist):
		return rt.bytes(), true
	}
	s.opts.Logger.Warn("fixture override unreadable: answering 404", "file", path, "err", err)
	return nil, false
}

// readOverride reads a regular file only: opening a FIFO would hold the
// request until something writes to it.
func readOverride(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return os.ReadFile(path)
}

func injectBeforeBodyEnd(body []byte, snippet string) []byte {
	if snippet == "" {
		return body
	}
	i := strings.LastIndex(strings.ToLower(string(body)), "</body>")
	if i < 0 {
		i = len(body)
	}
	out := make([]byte, 0, len(body)+len(snippet))
	out = append(out, body[:i]...)
	out = append(out, snippet...)
	return append(out, body[i:]...)
}

// imgSrc finds the images a page shows, so they load in a browser too.
var imgSrc = regexp.MustCompile(`(?i)<img\b[^>]*?\bsrc="([^"]+)"`)

// load reads the fixtures and builds the routes: every page, every Cover and
// chapter page image the registry reads from them, and the images the pages
// show on hosts already known.
func (s *Server) load() error {
	if s.opts.Registry == nil {
		s.opts.Registry = latest.Default()
	}
	for _, site := range s.opts.Registry.Sites() {
		for _, h := range site.Hosts {
			s.known[h] = true
			s.known["www."+h] = true
		}
	}
	addImage := func(raw string, kind imageKind) error {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" {
			return fmt.Errorf("fixture sites: image address %q is not an https URL", raw)
		}
		k := key(u.Hostname(), u.Path, u.RawQuery)
		if _, dup := s.routes[k]; dup {
			return nil
		}
		s.known[strings.ToLower(u.Hostname())] = true
		s.routes[k] = &route{ctype: "image/png", kind: kind, seed: raw}
		s.images = append(s.images, raw)
		return nil
	}
	var shown []*url.URL
	all := slices.Clone(pages)
	for _, p := range familyPages {
		if _, ok := s.opts.Registry.Lookup(p.Site); ok {
			all = append(all, p)
		}
	}
	for i := range all {
		p := &all[i]
		site, ok := s.opts.Registry.Lookup(p.Site)
		if !ok {
			return fmt.Errorf("fixture sites: page %s names unknown site %q", p.URL, p.Site)
		}
		if !plainName(p.Site) || (p.File != "" && !plainName(p.File)) {
			return fmt.Errorf("fixture sites: page %s: %s/%s is not one file in one directory", p.URL, p.Site, p.File)
		}
		u, err := url.Parse(p.URL)
		if err != nil || u.Scheme != "https" || !site.HasHost(u.Hostname()) {
			return fmt.Errorf("fixture sites: page %q is not an https URL on %s's hosts", p.URL, p.Site)
		}
		body := []byte(p.Body)
		if p.File != "" {
			dir := filepath.Join(s.opts.Dir, p.Site)
			if p.Family != "" {
				dir = filepath.Join(s.opts.Dir, "..", "families", p.Family)
			}
			if body, err = os.ReadFile(filepath.Join(dir, p.File)); err != nil {
				return fmt.Errorf("fixture sites: %w", err)
			}
		}
		ctype := p.ContentType
		if ctype == "" {
			ctype = "text/html; charset=utf-8"
		}
		isHTML := strings.HasPrefix(ctype, "text/html")
		k := key(u.Hostname(), u.Path, u.RawQuery)
		if _, dup := s.routes[k]; dup {
			return fmt.Errorf("fixture sites: two pages at %s", p.URL)
		}
		s.routes[k] = &route{page: p, body: body, ctype: ctype, isHTML: isHTML}

		readAs := u
		if p.ReadAs != "" {
			if readAs, err = url.Parse(p.ReadAs); err != nil {
				return fmt.Errorf("fixture sites: page %s: read-as %q: %w", p.URL, p.ReadAs, err)
			}
		}
		if p.Series {
			c, err := site.Cover(body, readAs)
			if err != nil {
				return fmt.Errorf("fixture sites: the registry reads no Cover from %s/%s: %w", p.Site, p.File, err)
			}
			if c != "" {
				s.covers[readAs.String()] = c
				if err := addImage(c, coverImage); err != nil {
					return err
				}
			}
		}
		if p.Chapter {
			// A locked or scrambled chapter has no page images: nothing to add.
			if content, err := site.Content(body, readAs); err == nil {
				for _, img := range content.Pages {
					if err := addImage(img, pageImage); err != nil {
						return err
					}
				}
			}
		}
		if isHTML {
			for _, m := range imgSrc.FindAllSubmatch(body, -1) {
				if ref, err := u.Parse(html.UnescapeString(string(m[1]))); err == nil && ref.Scheme == "https" {
					shown = append(shown, ref)
				}
			}
		}
	}
	// After the registry's images, so only hosts the fixtures stand for get
	// decorations: a page's ad or tracker image stays a 404 on no host.
	for _, ref := range shown {
		if s.known[normHost(ref.Hostname())] {
			if err := addImage(ref.String(), smallImage); err != nil {
				return err
			}
		}
	}
	s.addListings(all)
	for h := range s.known {
		s.hosts = append(s.hosts, h)
	}
	sort.Strings(s.hosts)
	return nil
}

// key names a route: host without "www.", the decoded path, and the raw
// query when there is one.
func key(host, path, query string) string {
	if path == "" {
		path = "/"
	}
	k := strings.TrimPrefix(normHost(host), "www.") + path
	if query != "" {
		k += "?" + query
	}
	return k
}

// plainName reports whether name is a single path element, so that a path
// joined from the table's names stays inside Dir and Override.
func plainName(name string) bool { return filepath.IsLocal(name) && filepath.Base(name) == name }

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// findFixtures finds testdata/sites in the repository that holds the
// working directory (tests run in their package's directory).
func findFixtures() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("fixture sites: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			sites := filepath.Join(dir, "testdata", "sites")
			if _, err := os.Stat(sites); err != nil {
				return "", fmt.Errorf("fixture sites: %w", err)
			}
			return sites, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("fixture sites: no go.mod above %s; set Options.Dir to testdata/sites", wd)
		}
	}
}

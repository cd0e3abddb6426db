package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/addedsites"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// probeMaxBody bounds the saved body probe reads, as the fetchers bound
// what they read from a Site.
const probeMaxBody = 32 << 20

const probeUsage = `Usage:
  lectern probe --site SITE --file PATH [--file PATH2] [--page series|chapter] [--url PAGE_URL]
  lectern probe --family F [--kind manga|novel] [--option k=v] --url PAGE_URL --file PATH [--file PATH2] [--page series|chapter]
  lectern probe URL

Reads a page of a Site the way the Poll and the archive do, and prints one
JSON object with every answer the Site registry gives for it. With a URL it
fetches the page now, through the Poll's own fetcher (the plain fetcher, or
the browser for a browser Site when BROWSER_URL or BROWSER_PATH is set) and
the pacing gate shared with the running replicas (DATABASE_URL is required;
USER_AGENT, SITE_PACE, FETCH_* apply). A series URL is probed as a series
page, a chapter URL as a chapter page:

  {"site","key","page","title","latest_chapter":{"label","number","url","locked"},
   "cover","chapters":[...],"pages":[...],"text_chars":N,"text":"...","problem":"",
   "detail","body_bytes"}

For an Owner debugging a Site that changed: save the page's body (for
browser Sites, the payload as read in the tab: kagane's API JSON) and probe it.
For a Site of a family not added yet (or to see which family fits a site),
--family reads the body as that family would, the host taken from --url; the
family's usual series paths (/manga/, /series/, /comic/, /novel/, /webtoon/)
are recognised without options, and the key is FAMILY:slug.

  --site SITE    the Site the body is from (%s)
  --family F     the family to read the body as (%s), instead of --site
  --kind KIND    with --family: manga or novel (default: the family's usual one)
  --option k=v   with --family: one of its options (repeat for more)
  --file PATH    the saved body; - reads standard input. Repeat it in the order
                 the poll reads them: the series page, then its chapter list
                 (madara's ajax answer); one --file may be probed alone
  --page KIND    series (default): title, Latest Chapter, Cover, chapter list;
                 chapter: the page images or the text
  --url URL      the page's URL, for its key and for relative links; one that
                 names no Series (a chapter of a theme that puts chapters at the
                 root) is accepted, with "key": ""

Exit status: 0 when the page answered (problem may still name a chapter that
is locked or a Series without chapters), 3 when the body is not a series or
chapter page (problem says why: challenge, access_denied, not_series_page...),
2 for usage errors, 1 when the file cannot be read or the page fetched.
`

func init() {
	commands["probe"] = command{
		summary: "read a saved Site page and print what the Site registry answers",
		run:     runProbe,
	}
}

func runProbe(ctx context.Context, env *cmdEnv, args []string) int {
	reg := latest.Default()
	names := reg.Names()
	usage := fmt.Sprintf(probeUsage, strings.Join(names, ", "), strings.Join(familyNames(), ", "))

	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	site := fs.String("site", "", "")
	family := fs.String("family", "", "")
	kind := fs.String("kind", "", "")
	var files, options repeated
	fs.Var(&files, "file", "")
	fs.Var(&options, "option", "")
	page := fs.String("page", latest.PageSeries, "")
	pageURL := fs.String("url", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(env.stdout, usage)
			return 0
		}
		fmt.Fprintf(env.stderr, "lectern probe: %v\n\n%s", err, usage)
		return 2
	}
	if fs.NArg() > 0 {
		if *site != "" || *family != "" || len(files) > 0 || fs.NArg() > 1 {
			fmt.Fprintf(env.stderr, "lectern probe: give either a URL or --site and --file\n\n%s", usage)
			return 2
		}
		return probeURL(ctx, env, reg, fs.Arg(0))
	}
	if *family != "" {
		return probeFamily(env, *family, *kind, options, *page, *pageURL, files, usage)
	}
	if *site == "" || len(files) == 0 {
		fmt.Fprintf(env.stderr, "lectern probe: --site and --file are required\n\n%s", usage)
		return 2
	}
	s, ok := reg.Lookup(*site)
	if !ok {
		fmt.Fprintf(env.stderr, "lectern probe: unknown site %q (one of %s)\n", *site, strings.Join(names, ", "))
		return 2
	}
	return probeFiles(env, s, *page, *pageURL, files)
}

// probeFamily probes saved bodies as a Site of a family on the host of
// pageURL would read them.
func probeFamily(env *cmdEnv, family, kind string, options []string, page, pageURL string, files []string, usage string) int {
	if pageURL == "" || len(files) == 0 {
		fmt.Fprintf(env.stderr, "lectern probe: --family needs --url (its host is the Site's) and --file\n\n%s", usage)
		return 2
	}
	u, err := url.Parse(strings.TrimSpace(pageURL))
	if err != nil || u.Hostname() == "" {
		fmt.Fprintf(env.stderr, "lectern probe: --url %q is not an absolute URL\n", pageURL)
		return 2
	}
	opts := map[string]string{}
	for _, o := range options {
		k, v, ok := strings.Cut(o, "=")
		if !ok || k == "" {
			fmt.Fprintf(env.stderr, "lectern probe: --option %q must be key=value\n", o)
			return 2
		}
		opts[k] = v
	}
	// The family's name is the Site's, so the key reads FAMILY:slug.
	s, err := latest.NewFamilySite(family, family, []string{u.Hostname()}, latest.Kind(kind), opts)
	if err != nil {
		fmt.Fprintf(env.stderr, "lectern probe: %v\n", err)
		return 2
	}
	return probeFiles(env, s, page, pageURL, files)
}

// probeFiles reads the bodies and probes the first; the others answer the
// further requests the Site makes, in order.
func probeFiles(env *cmdEnv, s *latest.Site, page, pageURL string, files []string) int {
	if page != latest.PageSeries && page != latest.PageChapter {
		fmt.Fprintf(env.stderr, "lectern probe: --page must be series or chapter, not %q\n", page)
		return 2
	}
	if pageURL != "" {
		// A URL of the Site that names no Series is a page still: its key
		// is "".
		if _, err := s.ResolveOn(pageURL); err != nil && !errors.Is(err, latest.ErrNotSeriesURL) {
			fmt.Fprintf(env.stderr, "lectern probe: --url: %v\n", err)
			return 2
		}
	}
	bodies := make([][]byte, 0, len(files))
	for _, f := range files {
		body, err := readProbeBody(env, f)
		if err != nil {
			fmt.Fprintf(env.stderr, "lectern probe: %v\n", err)
			return 1
		}
		bodies = append(bodies, body)
	}
	var more latest.PageFetcher
	if len(bodies) > 1 {
		more = &savedBodies{bodies: bodies[1:], files: files[1:]}
	}
	return printProbe(env, latest.ProbeWith(context.Background(), s, page, pageURL, bodies[0], more))
}

// savedBodies answers a Site's further requests with the saved bodies, in
// the order given. Once they are spent, a request for an address whose path
// a body already answered gets that body again: the same resource read with
// another query (MangaDex's feed, asked newest first for the Latest Chapter,
// then in reading order for the chapter list), as the Poll's reads are one
// file each.
type savedBodies struct {
	bodies [][]byte
	files  []string
	byPath map[string][]byte
}

func (b *savedBodies) next(rawURL, what string) ([]byte, error) {
	path := rawURL
	if u, err := url.Parse(rawURL); err == nil {
		path = u.Host + u.Path
	}
	if len(b.bodies) == 0 {
		if body, ok := b.byPath[path]; ok {
			return body, nil
		}
		return nil, fmt.Errorf("the Site asks for %s, and no further --file is given", what)
	}
	body := b.bodies[0]
	b.bodies = b.bodies[1:]
	if b.byPath == nil {
		b.byPath = map[string][]byte{}
	}
	b.byPath[path] = body
	return body, nil
}

func (b *savedBodies) FetchPage(_ context.Context, rawURL string) ([]byte, error) {
	return b.next(rawURL, rawURL)
}

func (b *savedBodies) PostForm(_ context.Context, rawURL string, form url.Values) ([]byte, error) {
	return b.next(rawURL, "POST "+rawURL+" "+form.Encode())
}

// printProbe writes the result and returns the exit status.
func printProbe(env *cmdEnv, result latest.ProbeResult) int {
	enc := json.NewEncoder(env.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(result); err != nil {
		fmt.Fprintf(env.stderr, "lectern probe: write result: %v\n", err)
		return 1
	}
	if !result.Answered {
		return 3
	}
	return 0
}

func readProbeBody(env *cmdEnv, path string) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		r = env.stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		defer f.Close()
		r = f
	}
	body, err := io.ReadAll(io.LimitReader(r, probeMaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read body %s: %w", path, err)
	}
	if len(body) > probeMaxBody {
		return nil, fmt.Errorf("read body %s: larger than %d bytes", path, probeMaxBody)
	}
	return body, nil
}

// probeSeams replace the network under probe's fetcher in tests.
var probeSeams *server.Seams

// probeURL fetches a Site page through the Poll's fetcher and pacing gate
// and probes it.
func probeURL(ctx context.Context, env *cmdEnv, reg *latest.Registry, raw string) int {
	ref, unknown := reg.Resolve(raw)
	if unknown != nil && !errors.Is(unknown, latest.ErrUnknownSite) {
		fmt.Fprintf(env.stderr, "lectern probe: %v\n", unknown)
		return 2
	}
	cfg, err := config.Load(config.Lookup(env.getenv), "probe")
	if err == nil && cfg.DatabaseURL == "" {
		if unknown != nil {
			fmt.Fprintf(env.stderr, "lectern probe: %v\n", unknown)
			return 2
		}
		err = errors.New("DATABASE_URL is required: probe URL paces its request through the gate shared with the running replicas")
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "lectern probe: %v\n", err)
		return 2
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		fmt.Fprintf(env.stderr, "lectern probe: %v\n", err)
		return 1
	}
	defer st.Close()
	if unknown != nil {
		// Perhaps a Site the Owner added: the registry as the replicas have it.
		added := &addedsites.Service{Store: st, Registry: reg, Logger: newLogger(env.stderr, cfg)}
		if err := added.Refresh(ctx); err != nil {
			fmt.Fprintf(env.stderr, "lectern probe: %v\n", err)
			return 1
		}
		if ref, err = reg.Resolve(raw); err != nil {
			fmt.Fprintf(env.stderr, "lectern probe: %v\n", err)
			return 2
		}
	}
	site, _ := reg.Lookup(ref.Site)
	sites, closeFetch, err := server.NewSiteFetcher(cfg, st, reg, newLogger(env.stderr, cfg), probeSeams)
	if err != nil {
		fmt.Fprintf(env.stderr, "lectern probe: %v\n", err)
		return 2
	}
	defer closeFetch()

	// The URL as given (with "www." and a chapter path), pinned to the
	// Site's hosts by the fetcher; a series page is fetched at its key's URL.
	page, pageURL := latest.PageChapter, strings.TrimSpace(raw)
	// A Site read where its ReadURL says reads every URL of its series page
	// (MangaDex's /title/<id>/<slug>) from one address.
	if sameSeriesPage(pageURL, ref.SeriesURL) || site.ReadURL != nil && site.ReadFrom(pageURL) == site.ReadFrom(ref.SeriesURL) {
		page, pageURL = latest.PageSeries, ref.SeriesURL
	}
	got, err := sites.FetchSeries(ctx, site, pageURL, fetch.Conditional{})
	if err != nil {
		fmt.Fprintf(env.stderr, "lectern probe: %v\n", err)
		return 1
	}
	return printProbe(env, latest.ProbeWith(ctx, site, page, got.URL, got.Body, fetch.Pages(sites, site)))
}

// sameSeriesPage reports whether raw is the series page ref names (any
// scheme, "www.", query or trailing slash).
func sameSeriesPage(raw, seriesURL string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	s, err := url.Parse(seriesURL)
	if err != nil {
		return false
	}
	return strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.") == s.Hostname() &&
		strings.TrimRight(u.Path, "/") == strings.TrimRight(s.Path, "/")
}

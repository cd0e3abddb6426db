package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// probeMaxBody bounds the saved body probe reads, as the fetchers bound
// what they read from a Site.
const probeMaxBody = 32 << 20

const probeUsage = `Usage:
  lectern probe --site SITE --file PATH [--page series|chapter] [--url PAGE_URL]
  lectern probe URL

Reads a page of a Site the way the Poll and the archive do, and prints one
JSON object with every answer the Site registry gives for it:

  {"site","key","page","title","latest_chapter":{"label","number","url","locked"},
   "cover","chapters":[...],"pages":[...],"text_chars":N,"problem":"",
   "detail","body_bytes"}

For an Owner debugging a Site that changed: save the page's body (for
browser Sites, the payload as read in the tab: kagane's API JSON) and probe it.

  --site SITE    the Site the body is from (%s)
  --file PATH    the saved body; - reads standard input
  --page KIND    series (default): title, Latest Chapter, Cover, chapter list;
                 chapter: the page images or the text
  --url URL      the page's URL, for its key and for relative links

Exit status: 0 when the page answered (problem may still name a chapter that
is locked or a Series without chapters), 3 when the body is not a series or
chapter page (problem says why: challenge, access_denied, not_series_page...),
2 for usage errors, 1 when the file cannot be read.
`

func init() {
	commands["probe"] = command{
		summary: "read a saved Site page and print what the Site registry answers",
		run:     runProbe,
	}
}

func runProbe(_ context.Context, env *cmdEnv, args []string) int {
	names := make([]string, 0, 6)
	for _, s := range latest.Sites() {
		names = append(names, s.Name)
	}
	usage := fmt.Sprintf(probeUsage, strings.Join(names, ", "))

	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	site := fs.String("site", "", "")
	file := fs.String("file", "", "")
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
		if *site != "" || *file != "" || fs.NArg() > 1 {
			fmt.Fprintf(env.stderr, "lectern probe: give either a URL or --site and --file\n\n%s", usage)
			return 2
		}
		if _, err := latest.Resolve(fs.Arg(0)); err != nil {
			fmt.Fprintf(env.stderr, "lectern probe: %v\n", err)
			return 2
		}
		fmt.Fprintln(env.stderr, "probe URL: fetching needs the Poll's fetchers")
		return 2
	}
	if *site == "" || *file == "" {
		fmt.Fprintf(env.stderr, "lectern probe: --site and --file are required\n\n%s", usage)
		return 2
	}
	s, ok := latest.Lookup(*site)
	if !ok {
		fmt.Fprintf(env.stderr, "lectern probe: unknown site %q (one of %s)\n", *site, strings.Join(names, ", "))
		return 2
	}
	if *page != latest.PageSeries && *page != latest.PageChapter {
		fmt.Fprintf(env.stderr, "lectern probe: --page must be series or chapter, not %q\n", *page)
		return 2
	}
	if *pageURL != "" {
		if _, err := s.ResolveOn(*pageURL); err != nil {
			fmt.Fprintf(env.stderr, "lectern probe: --url: %v\n", err)
			return 2
		}
	}
	body, err := readProbeBody(env, *file)
	if err != nil {
		fmt.Fprintf(env.stderr, "lectern probe: %v\n", err)
		return 1
	}
	result := latest.Probe(s, *page, *pageURL, body)
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

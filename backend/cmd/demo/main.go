// Command demo is `make demo`: Lectern with local fixture Sites, so the whole
// loop (panel → Bookmark → Poll → Cover → web library) can be tried without
// reaching any live Site.
//
// It runs, in one process:
//   - a loopback HTTPS server standing in for every supported Site and the
//     image hosts their pages name (backend/internal/fixturesites: the pages
//     of testdata/sites, generated Covers, a throwaway CA);
//   - Lectern (the same server `lectern serve` runs) on the database
//     lectern_demo, recreated empty on each run, with its fetchers' network
//     seams pointing every Site host at the fixture server and its
//     destination gate able to reach that one address and nothing else;
//   - a demo Reader (an Owner) with a password and an API token.
//
// It is a separate binary on purpose: `lectern serve` has no setting that
// remaps Site hostnames or opens the destination gate.
//
// In this mode only, the fixture Sites also put the built userscript into
// every page they serve (see demo_loader.js), so a browser without a
// userscript manager shows the panel; -inject=false turns that off for a
// browser with Tampermonkey or Violentmonkey installed.
//
// -sites DIR serves a page from DIR/<site>/<file> instead of the fixture of
// that name while the file is there, read on every request, so a page saved
// from a Site, or one edited while the demo runs, is what Lectern polls.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/addedsites"
	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

var version = "demo"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8090", "loopback address Lectern listens on")
	sitesAddr := fs.String("sites-addr", "127.0.0.1:0", "loopback address of the fixture Sites (HTTPS)")
	sitesDir := fs.String("sites", "", "directory laid out like testdata/sites: its files replace the fixtures of the same name, read on every request")
	inject := fs.Bool("inject", true, "put the userscript into the fixture pages (false: install it in a userscript manager instead)")
	browserFlag := fs.String("browser", "auto", `Chromium for Lectern's browser Sites (kagane, novelfull): a path, "auto" or "none"`)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: demo [flags]   (make demo)\n\nRuns Lectern against local fixture Sites with a demo Reader and prints how to open a\nSite page with the panel in Chromium. DATABASE_URL, when set, names the Postgres server\nof the demo database "+demoDatabase+"; otherwise the cluster under ./.lectern/pg is used.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if !loopback(*addr) || !loopback(*sitesAddr) {
		return errors.New("-addr and -sites-addr must be loopback addresses (127.0.0.1:PORT)")
	}
	// Before the database, so a mistyped directory costs nothing.
	if *sitesDir != "" {
		dir, err := fixturesites.OverrideDir(*sitesDir)
		if err != nil {
			return fmt.Errorf("-sites: %w", err)
		}
		*sitesDir = dir
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	dataDir := demoDataDir(wd)
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	logPath := filepath.Join(dataDir, "lectern.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	logger := slog.New(slog.NewTextHandler(logFile, nil))

	fmt.Fprintln(stderr, "demo: preparing the database", demoDatabase)
	dbURL, err := prepareDatabase(ctx, os.Getenv("DATABASE_URL"), filepath.Join(wd, ".lectern", "pg"), demoDatabase)
	if err != nil {
		return err
	}

	d, err := startDemo(ctx, demoOptions{
		DatabaseURL: dbURL, DataDir: dataDir, Listen: *addr, SitesListen: *sitesAddr, SitesDir: *sitesDir,
		Inject: *inject, BrowserPath: findBrowser(*browserFlag), Logger: logger, Blobs: blobEnv(os.LookupEnv),
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := d.Close(); err != nil {
			fmt.Fprintln(stderr, "demo: stop:", err)
		}
	}()
	instructions(stdout, d.sites, d.lectern.BaseURL, d.password, d.token, d.browserPath, *inject, *sitesDir, logPath)
	<-ctx.Done()
	fmt.Fprintln(stderr, "demo: stopping")
	return nil
}

type demoOptions struct {
	DatabaseURL, DataDir string
	// Blobs are the blob store's variables (blobEnv); none means DataDir.
	Blobs map[string]string
	// Listen and SitesListen are Lectern's and the fixture Sites' addresses.
	Listen, SitesListen string
	// SitesDir, when set, overrides fixtures (fixturesites.Options.Override).
	SitesDir    string
	Inject      bool
	BrowserPath string
	Logger      *slog.Logger
	// Env adds Lectern settings (lecternOptions.Env).
	Env map[string]string
	// WatchEvery and FailingHold: lecternOptions'.
	WatchEvery, FailingHold time.Duration
}

// demo is everything `make demo` runs.
type demo struct {
	sites       *fixturesites.Server
	lectern     *lectern
	readerID    int64
	password    string
	token       string
	browserPath string
}

// startDemo starts the fixture Sites (with the userscript injection when
// o.Inject), Lectern on o.DatabaseURL, the demo Reader and its first
// Bookmarks.
func startDemo(ctx context.Context, o demoOptions) (_ *demo, err error) {
	in := newInjection()
	opts := fixturesites.Options{Addr: o.SitesListen, Override: o.SitesDir, Logger: o.Logger}
	if o.Inject {
		opts.Inject = in.inject
		opts.Extra = map[string]http.Handler{demoPrefix: in}
	}
	d := &demo{browserPath: o.BrowserPath}
	// The fixture server also stands in for the demo's Sites of a family,
	// which Lectern learns only when they are added below.
	if opts.Registry, err = familyRegistry(); err != nil {
		return nil, err
	}
	in.registry = opts.Registry
	if d.sites, err = fixturesites.Start(opts); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	d.lectern, err = startLectern(ctx, d.sites, lecternOptions{
		DatabaseURL: o.DatabaseURL, DataDir: o.DataDir, Listen: o.Listen, Workers: 4, BrowserPath: o.BrowserPath,
		SitePace: brisk(200 * time.Millisecond), RiverPoll: 200 * time.Millisecond, Version: version, Logger: o.Logger,
		Blobs: o.Blobs, Env: o.Env, WatchEvery: o.WatchEvery, FailingHold: o.FailingHold,
	})
	if err != nil {
		return nil, err
	}
	if d.password, err = credential.NewSecret(); err != nil {
		return nil, err
	}
	d.password = d.password[:16]
	if d.readerID, d.token, err = newReader(ctx, d.lectern.Store, "demo", d.password, true); err != nil {
		return nil, err
	}
	if err := addFamilySites(ctx, d.lectern); err != nil {
		return nil, err
	}
	if err := seed(ctx, d.lectern.Server.Library(), d.readerID); err != nil {
		return nil, err
	}
	if err := in.ready(d.lectern.BaseURL, d.token); err != nil {
		return nil, err
	}
	return d, nil
}

// Close stops Lectern, then the fixture Sites.
func (d *demo) Close() error {
	var errs []error
	if d.lectern != nil {
		errs = append(errs, d.lectern.Close())
	}
	if d.sites != nil {
		errs = append(errs, d.sites.Close())
	}
	return errors.Join(errs...)
}

// familyRegistry is the built-in Sites and the demo's Sites of a family,
// for the fixture server to know their hosts and pages.
func familyRegistry() (*latest.Registry, error) {
	reg := latest.Default()
	var added []*latest.Site
	for _, f := range fixturesites.FamilySites {
		s, err := latest.NewFamilySite(f.Site, f.Family, f.Hosts, latest.Kind(f.Kind), nil)
		if err != nil {
			return nil, err
		}
		added = append(added, s)
	}
	return reg, reg.SetAdded(added...)
}

// addFamilySites adds the demo's Sites of a family to the running Lectern
// the way `lectern site add` does (addedsites.Service.Add), at the demo's
// brisk pace, so a newcomer sees an added Site work end to end.
func addFamilySites(ctx context.Context, l *lectern) error {
	pace := 200 * time.Millisecond
	for _, f := range fixturesites.FamilySites {
		if _, _, err := l.Server.Sites().Add(ctx, addedsites.Def{Site: f.Site, Family: f.Family, Kind: f.Kind, Hosts: f.Hosts}); err != nil {
			return fmt.Errorf("add the demo Site %s: %w", f.Site, err)
		}
		if err := l.Store.ChangeSiteSettings(ctx, f.Site, store.SiteChange{SetPace: true, Pace: &pace}); err != nil {
			return err
		}
	}
	return nil
}

// seed bookmarks one Series of each Library, so the panel has something to
// show at once; their Acquisitions run like any new Bookmark's.
func seed(ctx context.Context, lib *bookmark.Service, readerID int64) error {
	for _, s := range []struct {
		url, chapter string
		number       float64
	}{
		{fixturesites.ComixSeries, "Chapter 200", 200},
		{fixturesites.NovelFullSeries, "Chapter 1400", 1400},
	} {
		ref, err := lib.Registry.Resolve(s.url)
		if err != nil {
			return err
		}
		n := s.number
		if _, _, err := lib.Put(ctx, readerID, ref.Key, bookmark.PutRequest{
			Site: ref.Site, SeriesURL: ref.SeriesURL, Chapter: s.chapter, ChapterNumber: &n,
		}); err != nil {
			return fmt.Errorf("seed a Bookmark of %s: %w", ref.Key, err)
		}
	}
	return nil
}

// brisk paces every Site at every: the fixtures are local and the demo
// should not keep a Reader waiting on politeness meant for real Sites.
func brisk(every time.Duration) string {
	var parts []string
	for _, s := range latest.Default().Sites() {
		parts = append(parts, s.Name+"="+every.String())
	}
	return strings.Join(parts, ",")
}

func loopback(addr string) bool {
	return strings.HasPrefix(addr, "127.0.0.1:") || strings.HasPrefix(addr, "localhost:") || strings.HasPrefix(addr, "[::1]:")
}

// findBrowser resolves -browser: an explicit path, none, or the first
// Chromium found the way scripts/ensure-chromium.sh looks.
func findBrowser(flag string) string {
	switch flag {
	case "none", "":
		return ""
	case "auto":
	default:
		return flag
	}
	if p := os.Getenv("BROWSER_PATH"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// chromiumCommand is the command line that opens pageURL in a fresh
// Chromium profile mapped to the fixture Sites.
func chromiumCommand(sites *fixturesites.Server, browserPath, pageURL string) string {
	bin := browserPath
	if bin == "" {
		bin = "chromium"
	}
	flags := sites.ChromiumFlags()
	names := make([]string, 0, len(flags))
	for n := range flags {
		names = append(names, n)
	}
	sort.Strings(names)
	lines := []string{shellQuote(bin) + ` --user-data-dir="$(mktemp -d)" --no-first-run --no-default-browser-check`}
	for _, n := range names {
		lines = append(lines, "--"+n+"="+shellQuote(flags[n]))
	}
	lines = append(lines, shellQuote(pageURL))
	return "  " + strings.Join(lines, " \\\n    ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func instructions(w io.Writer, sites *fixturesites.Server, base, password, token, browserPath string, inject bool, sitesDir, logPath string) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("")
	p("Lectern demo is running. Nothing here reaches a live Site.")
	p("")
	p("  Lectern          %s  (web library: %s/library/manga)", base, base)
	p("  sign in as       demo / %s   (an Owner)", password)
	p("  API token        %s", token)
	p("  fixture Sites    https://%s  (loopback HTTPS, throwaway CA; stands in for asurascans.com and", sites.Addr())
	p("                   api.asurascans.com, comix.to, demonicscans.org, kagane.to, mangadex.org and api.mangadex.org, webtoons.com,")
	p("                   lightnovelworld.com, novelfull.com, royalroad.com, the added Sites")
	p("                   toonhaven.test and lanternreads.test, and their image hosts)")
	if sitesDir != "" {
		p("  Site pages       %s/<site>/<file> when there (read on every request), else testdata/sites", sitesDir)
	}
	p("  push services    https://%s%s lists what the stand-ins for discord.com, api.telegram.org,", sites.Addr(), fixturesites.PushesPath)
	p("                   %s, %s, ntfy.sh and %s received, newest first", fixturesites.PushGotifyHost, fixturesites.PushMatrixHost, fixturesites.PushHooksHost)
	p("  database         %s (recreated empty on every run); Covers under %s", demoDatabase, filepath.Dir(logPath))
	p("  server log       %s", logPath)
	p("")
	p("Open a demo Site page in a local Chromium (a fresh profile; the flags send the Site hostnames")
	p("to the fixture server, accept its certificate, and resolve no other name):")
	p("")
	p("%s", chromiumCommand(sites, browserPath, fixturesites.AsuraChapter))
	p("")
	p("Then click the L button at the bottom right (or Alt+L): the panel lists the demo Reader's manga")
	p("Bookmarks. Click \"Bookmark this chapter\": Lectern records the Progress and runs the Acquisition")
	p("(Poll of the series page, then the Cover). Click Refresh a moment later and the Cover shows,")
	p("served from %s/covers/. The same Bookmarks are in the web library at %s/library/manga.", base, base)
	p("A novel page, with the novel userscript: %s", fixturesites.LightNovelWorldChapter)
	p("The mainstream Sites: %s (MangaDex, read through its API),", fixturesites.MangadexChapter)
	p("  %s (WEBTOON) and %s (Royal Road).", fixturesites.WebtoonsChapter, fixturesites.RoyalroadChapter)
	p("")
	p("One story on two Sites, for Works: Omniscient Reader's Viewpoint is on asura (the chapter above)")
	p("  and on demonic, one chapter ahead: %s. Bookmark it on asura, open the demonic", fixturesites.DemonicORVSeries)
	p("  page and the panel offers to link the two; once linked it shows the Work's Progress on either Site.")
	p("")
	p("Two Sites of a family were added at start, as an Owner adds one (lectern site add, or the Owner")
	p("console's Sites page): toonhaven (madara, manga) and lanternreads (lightnovelwp, novel), on invented")
	p("hosts. Bookmark them from the panel the same way: %s and %s.", fixturesites.ToonhavenSeries, fixturesites.LanternreadsChapter)
	p("")
	if inject {
		p("DEMO ONLY: the fixture server puts the built userscript into every page it serves, with stand-in")
		p("GM_* functions: the demo token is written into the page, and API calls go to a same-origin proxy")
		p("on the fixture server (%s) that passes them to Lectern. Lectern's API stays without CORS.", demoPrefix+"api/")
		p("A real install (Tampermonkey or Violentmonkey, from %s/userscripts/lectern-manga.user.js)", base)
		p("keeps the token in the userscript manager, out of the page. Run with -inject=false to try that.")
	} else {
		p("Install the userscripts in this profile's userscript manager from")
		p("  %s/userscripts/lectern-manga.user.js and %s/userscripts/lectern-novel.user.js", base, base)
		p("and paste the token above into the panel's Settings.")
	}
	p("")
	p("Ctrl+C stops the demo.")
}

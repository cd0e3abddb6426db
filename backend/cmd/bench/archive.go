package main

// bench archive: the Archive's figures, each against a reference measured in
// the same run.
//
//   - pages/s archiving one 300-page chapter, and then 2,000 pages in eight
//     chapters, from a loopback HTTPS Site with pacing at zero, through the
//     real parts (River, the Site fetcher, the destination gate, the pacing
//     gate, Postgres, the content-addressed volume); reference: the same
//     images fetched by a bare http.Client over the same TLS loopback;
//   - bytes fetched against bytes stored (identical pages stored once);
//   - the peak RSS of a worker process archiving the 300-page chapter, and
//     of a process exporting a 2,000-page CBZ; reference: the peak RSS of
//     the same process idle, and a process reading the same page files.
//
// The measured work runs in child processes (this binary re-executed) so
// that each peak RSS is that work's alone, not the fixture Site's or
// Postgres's.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testcert"
)

// archiveChild is the first argument of this binary re-executed as one of
// the archive scenario's child processes.
const archiveChild = "archive-child"

// The child's environment.
const (
	envArchiveDB   = "BENCH_ARCHIVE_DB"
	envArchiveDir  = "BENCH_ARCHIVE_DIR"
	envArchiveSite = "BENCH_ARCHIVE_SITE"
	envArchiveCA   = "BENCH_ARCHIVE_CA"
	envArchiveURLs = "BENCH_ARCHIVE_URLS"
)

// The bench Series: eight chapters of 250 pages and a ninth of 300; the
// first two pages of every chapter are the same credits pages.
const (
	benchSeriesURL  = "https://demonicscans.org/manga/Bench-Manga"
	benchKey        = "demonic:Bench-Manga"
	benchImageHost  = "cdn.demoniclibs.com"
	benchChapters   = 9
	benchShortPages = 250
	benchLongPages  = 300
	benchShared     = 2
)

var benchPublic = netip.MustParseAddr("93.184.216.34")

func chapterPages(n int) int {
	if n == benchChapters {
		return benchLongPages
	}
	return benchShortPages
}

func pageURL(ch, p int) string {
	return fmt.Sprintf("https://%s/b/%d/%03d.jpg", benchImageHost, ch, p)
}

// benchSite is the loopback Site: a demonic-shaped series page, chapter
// pages, and JPEG pages made unique by a comment segment over a few base
// images, so they cost no encoding while served.
type benchSite struct {
	srv    *http.Server
	addr   string
	caPEM  []byte
	bases  [][]byte
	credit [][]byte
	served atomic.Int64
	pages  atomic.Int64
}

func newBenchSite() (*benchSite, error) {
	ca, err := testcert.NewAuthority()
	if err != nil {
		return nil, err
	}
	tlsCfg, err := ca.ServerConfig("demonicscans.org", benchImageHost)
	if err != nil {
		return nil, err
	}
	s := &benchSite{caPEM: ca.CertPEM()}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 16 {
		b, err := benchJPEG(rng, 720, 1000)
		if err != nil {
			return nil, err
		}
		if i < benchShared {
			s.credit = append(s.credit, b)
		} else {
			s.bases = append(s.bases, b)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.addr = ln.Addr().String()
	s.srv = &http.Server{Handler: s, TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = s.srv.ServeTLS(ln, "", "") }()
	return s, nil
}

// benchJPEG is a page-like JPEG: soft bands with grain, about the size of a
// real manhwa page.
func benchJPEG(rng *rand.Rand, w, h int) ([]byte, error) {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		band := uint8(120 + 100*((y/40)%2))
		for x := range w {
			img.Pix[y*w+x] = band + uint8(rng.IntN(40))
		}
	}
	var buf bytes.Buffer
	err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80})
	return buf.Bytes(), err
}

func (s *benchSite) close() { _ = s.srv.Close() }

func (s *benchSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.Host)
	if host == "" {
		host = r.Host
	}
	switch {
	case host == "demonicscans.org" && r.URL.Path == "/manga/Bench-Manga":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		b.WriteString(`<!DOCTYPE html><html><head><meta charset="UTF-8"><title>Bench Manga | Demonic Scans</title></head><body>
<div id="manga-info-container"><h1 class="big-fat-titles">Bench Manga</h1>
<div class="read-buttons"><a class="btn" href="/chaptered.php?manga=77&amp;chapter=1">Read First</a></div></div>
<div id="chapters-list">`)
		for n := benchChapters; n >= 1; n-- {
			fmt.Fprintf(&b, `<a class="chplinks" href="/chaptered.php?manga=77&amp;chapter=%d">Chapter %d <span>2026-11-%02d</span></a>`+"\n", n, n, n)
		}
		b.WriteString("</div></body></html>")
		_, _ = io.WriteString(w, b.String())
	case host == "demonicscans.org" && r.URL.Path == "/chaptered.php":
		n, err := strconv.Atoi(r.URL.Query().Get("chapter"))
		if err != nil || n < 1 || n > benchChapters {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		fmt.Fprintf(&b, `<!DOCTYPE html><html><head><title>Bench Manga Chapter %d</title></head><body><div class="main-width center-m">`, n)
		for p := 1; p <= chapterPages(n); p++ {
			fmt.Fprintf(&b, `<img class="imgholder" src="%s" alt="page %d">`+"\n", pageURL(n, p), p)
		}
		b.WriteString("</div></body></html>")
		_, _ = io.WriteString(w, b.String())
	case host == benchImageHost && strings.HasPrefix(r.URL.Path, "/b/"):
		var ch, p int
		if _, err := fmt.Sscanf(r.URL.Path, "/b/%d/%d.jpg", &ch, &p); err != nil {
			http.NotFound(w, r)
			return
		}
		b := s.page(ch, p)
		w.Header().Set("Content-Type", "image/jpeg")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
		s.served.Add(int64(len(b)))
		s.pages.Add(1)
	default:
		http.NotFound(w, r)
	}
}

// page is a page's bytes: a shared credits page, or a base image with a
// comment segment naming the page, which makes its SHA-256 its own.
func (s *benchSite) page(ch, p int) []byte {
	if p <= benchShared {
		return s.credit[p-1]
	}
	base := s.bases[(ch*31+p)%len(s.bases)]
	note := fmt.Sprintf("bench chapter %d page %d", ch, p)
	out := make([]byte, 0, len(base)+len(note)+4)
	out = append(out, 0xff, 0xd8, 0xff, 0xfe, byte((len(note)+2)>>8), byte(len(note)+2))
	out = append(out, note...)
	return append(out, base[2:]...)
}

// benchArchive runs the scenario.
func benchArchive(ctx context.Context, e *env) error {
	db, err := e.database(ctx)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "lectern-bench-archive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	dir := filepath.Join(work, "archive")
	site, err := newBenchSite()
	if err != nil {
		return err
	}
	defer site.close()
	caFile := filepath.Join(work, "ca.pem")
	if err := os.WriteFile(caFile, site.caPEM, 0o600); err != nil {
		return err
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	reader, err := benchOwner(ctx, st)
	if err != nil {
		return err
	}
	inserter, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{})
	if err != nil {
		return err
	}
	svc := &archive.Service{Store: st, Registry: latest.Default(), River: inserter, Pages: &blob.FS{Dir: dir}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	env := []string{envArchiveDB + "=" + db, envArchiveDir + "=" + dir, envArchiveSite + "=" + site.addr, envArchiveCA + "=" + caFile}

	fmt.Printf("Archive, from a loopback HTTPS Site with pacing at zero (every request still passes the pacing gate)\n\n")
	idle, err := runIdle(ctx, env)
	if err != nil {
		return err
	}

	// Reference: the 300 pages fetched by a bare client over the same TLS.
	urlsFile := filepath.Join(work, "urls.txt")
	var urls []string
	for p := 1; p <= benchLongPages; p++ {
		urls = append(urls, pageURL(benchChapters, p))
	}
	if err := os.WriteFile(urlsFile, []byte(strings.Join(urls, "\n")), 0o600); err != nil {
		return err
	}
	raw, err := runChild(ctx, append(env, envArchiveURLs+"="+urlsFile), "rawfetch")
	if err != nil {
		return err
	}

	// One 300-page chapter.
	site.served.Store(0)
	long, err := archiveRun(ctx, env, svc, st, reader, "chapter "+strconv.Itoa(benchChapters), 1)
	if err != nil {
		return err
	}
	fmt.Printf("one chapter of %d pages:\n", benchLongPages)
	fmt.Printf("  %-34s %6d pages in %8s = %7.1f pages/s   peak RSS %s\n", "lectern archive (worker process)", benchLongPages, long.elapsed.Round(time.Millisecond),
		float64(benchLongPages)/long.elapsed.Seconds(), mib(long.maxRSS))
	fmt.Printf("  %-34s %6d pages in %8s = %7.1f pages/s   peak RSS %s\n", "reference: bare http.Client fetch", benchLongPages, raw.elapsed.Round(time.Millisecond),
		float64(benchLongPages)/raw.elapsed.Seconds(), mib(raw.maxRSS))
	fmt.Printf("  ratio archive / bare fetch = %.2f (pages/s)\n", raw.elapsed.Seconds()/long.elapsed.Seconds())
	fmt.Printf("  peak RSS archiving %s vs the same worker idle %s: +%s\n\n", mib(long.maxRSS), mib(idle.maxRSS), mib(long.maxRSS-idle.maxRSS))

	// Eight chapters, 2,000 pages.
	many, err := archiveRun(ctx, env, svc, st, reader, "first "+strconv.Itoa(benchChapters-1), benchChapters-1)
	if err != nil {
		return err
	}
	n := (benchChapters - 1) * benchShortPages
	fmt.Printf("%d chapters, %d pages:\n", benchChapters-1, n)
	fmt.Printf("  %-34s %6d pages in %8s = %7.1f pages/s   peak RSS %s\n\n", "lectern archive (worker process)", n, many.elapsed.Round(time.Millisecond),
		float64(n)/many.elapsed.Seconds(), mib(many.maxRSS))

	fetched := site.served.Load()
	stored, files, err := dirSize(dir)
	if err != nil {
		return err
	}
	totals, err := st.ArchiveTotalsAll(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("bytes, both runs (%d pages, the first %d of each chapter the same credits pages):\n", totals.Pages, benchShared)
	fmt.Printf("  page images fetched from the Site %s; stored on the volume %s in %d files = %.2f of fetched\n",
		mib(fetched), mib(stored), files, float64(stored)/float64(fetched))
	fmt.Printf("  Lectern's own counts: %s of pages archived, %s downloaded (images, chapter and series pages)\n\n",
		mib(totals.Bytes), mib(totals.FetchedBytes))

	exp, err := runChild(ctx, env, "export", "1-"+strconv.Itoa(benchChapters-1))
	if err != nil {
		return err
	}
	read, err := runChild(ctx, env, "readfiles", "1-"+strconv.Itoa(benchChapters-1))
	if err != nil {
		return err
	}
	fmt.Printf("export of a %d-page CBZ (%s), streamed:\n", n, mib(exp.bytes))
	fmt.Printf("  %-34s %8s = %7.1f MiB/s   peak RSS %s\n", "lectern CBZ export", exp.elapsed.Round(time.Millisecond),
		float64(exp.bytes)/(1<<20)/exp.elapsed.Seconds(), mib(exp.maxRSS))
	fmt.Printf("  %-34s %8s = %7.1f MiB/s   peak RSS %s\n", "reference: read the same files", read.elapsed.Round(time.Millisecond),
		float64(read.bytes)/(1<<20)/read.elapsed.Seconds(), mib(read.maxRSS))
	fmt.Printf("  ratio export / read = %.2f (throughput); peak RSS export / read = %.2f\n",
		read.elapsed.Seconds()/exp.elapsed.Seconds()*float64(exp.bytes)/float64(read.bytes), float64(exp.maxRSS)/float64(read.maxRSS))
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func benchOwner(ctx context.Context, st *store.Store) (store.Reader, error) {
	hash, err := credential.HashPassword("bench password")
	if err != nil {
		return store.Reader{}, err
	}
	r, err := st.CreateReader(ctx, "owner", hash, true)
	if err != nil {
		return store.Reader{}, err
	}
	_, err = st.PutBookmarkKeepProgress(ctx, r.ID, store.NewSeries{Key: benchKey, Site: "demonic", Kind: "manga", SeriesURL: benchSeriesURL}, "Bench Manga")
	return r, err
}

// childResult is what a child process reports and what its exit says.
type childResult struct {
	elapsed time.Duration
	bytes   int64
	maxRSS  int64
}

// startChild re-executes this binary as a child of the given mode and waits
// for its "ready" line.
func startChild(ctx context.Context, env []string, args ...string) (*exec.Cmd, *bufio.Scanner, error) {
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{archiveChild}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	sc := bufio.NewScanner(out)
	return cmd, sc, nil
}

// peakRSS is this process's peak resident set (VmHWM). It is read by the
// child itself: the rusage a parent gets from wait counts the parent's own
// memory too, which the child shared until it exec'd.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// scanChild reads a child's report lines: "done <ns> <bytes>" and
// "rss <bytes>".
func scanChild(sc *bufio.Scanner, res *childResult) {
	for sc.Scan() {
		var ns int64
		line := sc.Text()
		if _, err := fmt.Sscanf(line, "done %d %d", &ns, &res.bytes); err == nil {
			res.elapsed = time.Duration(ns)
		}
		_, _ = fmt.Sscanf(line, "rss %d", &res.maxRSS)
	}
}

// runChild runs a child that does its work and reports "done <ns> <bytes>".
func runChild(ctx context.Context, env []string, args ...string) (childResult, error) {
	cmd, sc, err := startChild(ctx, env, args...)
	if err != nil {
		return childResult{}, err
	}
	var res childResult
	scanChild(sc, &res)
	if err := cmd.Wait(); err != nil {
		return childResult{}, fmt.Errorf("child %v: %w", args, err)
	}
	if res.elapsed == 0 || res.maxRSS == 0 {
		return childResult{}, fmt.Errorf("child %v reported nothing", args)
	}
	return res, nil
}

// runIdle measures a worker process that starts and archives nothing.
func runIdle(ctx context.Context, env []string) (childResult, error) {
	cmd, sc, err := startChild(ctx, env, "worker")
	if err != nil {
		return childResult{}, err
	}
	if !sc.Scan() || sc.Text() != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return childResult{}, errors.New("idle worker did not start")
	}
	time.Sleep(2 * time.Second)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	var res childResult
	scanChild(sc, &res)
	if err := cmd.Wait(); err != nil {
		return childResult{}, fmt.Errorf("idle worker: %w", err)
	}
	return res, nil
}

// archiveRun starts a worker process, requests scope once it is ready, and
// times until chapters more chapters are archived.
func archiveRun(ctx context.Context, env []string, svc *archive.Service, st *store.Store, reader store.Reader, scope string, chapters int) (childResult, error) {
	cmd, sc, err := startChild(ctx, env, "worker")
	if err != nil {
		return childResult{}, err
	}
	var res childResult
	scanned := make(chan struct{})
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-scanned
		_ = cmd.Wait()
	}
	if !sc.Scan() || sc.Text() != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return childResult{}, errors.New("worker did not start")
	}
	go func() {
		scanChild(sc, &res)
		close(scanned)
	}()
	before, err := st.ArchivedChapters(ctx, benchKey)
	if err != nil {
		stop()
		return childResult{}, err
	}
	sco, err := archive.ParseScope(scope)
	if err != nil {
		stop()
		return childResult{}, err
	}
	start := time.Now()
	if _, err := svc.Request(ctx, reader, benchKey, sco); err != nil {
		stop()
		return childResult{}, err
	}
	deadline := start.Add(10 * time.Minute)
	for {
		got, err := st.ArchivedChapters(ctx, benchKey)
		if err != nil {
			stop()
			return childResult{}, err
		}
		if len(got) >= len(before)+chapters {
			break
		}
		var failed int
		_ = st.Pool.QueryRow(ctx, `SELECT count(*) FROM archive_chapters WHERE state = 'failed'`).Scan(&failed)
		if failed > 0 || time.Now().After(deadline) {
			stop()
			return childResult{}, fmt.Errorf("archive %q did not finish (%d failed)", scope, failed)
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	stop()
	res.elapsed = elapsed
	return res, nil
}

func dirSize(dir string) (int64, int, error) {
	var total int64
	files := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total += fi.Size()
		files++
		return nil
	})
	return total, files, err
}

// runArchiveChild is the child process: "worker" runs the archive's jobs
// until SIGTERM; "rawfetch" fetches the URLs listed in BENCH_ARCHIVE_URLS
// with a bare client; "export RANGE" streams a CBZ of those chapters into a
// counter; "readfiles RANGE" reads the page files of those chapters.
func runArchiveChild(args []string) int {
	if err := archiveChildMain(args); err != nil {
		fmt.Fprintln(os.Stderr, "bench archive child:", err)
		return 1
	}
	return 0
}

func archiveChildMain(args []string) error {
	if len(args) == 0 {
		return errors.New("no mode")
	}
	ctx := context.Background()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(os.Getenv(envArchiveCA))
	if err != nil {
		return err
	}
	pool.AppendCertsFromPEM(pem)
	dial := func(ctx context.Context, _, target string) (net.Conn, error) {
		if target != netip.AddrPortFrom(benchPublic, 443).String() {
			return nil, fmt.Errorf("no route to %s", target)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", os.Getenv(envArchiveSite))
	}
	defer func() { fmt.Printf("rss %d\n", peakRSS()) }()
	if args[0] == "rawfetch" {
		return rawFetch(ctx, pool)
	}
	st, err := store.Open(ctx, os.Getenv(envArchiveDB))
	if err != nil {
		return err
	}
	defer st.Close()
	pages := &blob.FS{Dir: os.Getenv(envArchiveDir)}
	switch args[0] {
	case "worker":
		return benchWorker(ctx, st, pages, pool, dial)
	case "export", "readfiles":
		if len(args) < 2 {
			return errors.New("export needs a chapter range")
		}
		sel, err := archive.ParseSelection(args[1], "")
		if err != nil {
			return err
		}
		svc := &archive.Service{Store: st, Registry: latest.Default(), Pages: pages}
		exp, err := svc.PlanExport(ctx, benchKey, sel, latest.Manga)
		if err != nil {
			return err
		}
		start := time.Now()
		var n int64
		if args[0] == "export" {
			cw := &countWriter{}
			err = exp.WriteCBZ(ctx, cw)
			n = cw.n
		} else {
			n, err = readPages(ctx, st, pages, exp.Chapters)
		}
		if err != nil {
			return err
		}
		fmt.Printf("done %d %d\n", time.Since(start).Nanoseconds(), n)
		return nil
	}
	return fmt.Errorf("unknown mode %q", args[0])
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

func readPages(ctx context.Context, st *store.Store, pages blob.Store, chapters []store.ArchiveChapter) (int64, error) {
	var n int64
	buf := make([]byte, 32<<10)
	for _, c := range chapters {
		list, err := st.ArchivePagesOf(ctx, c.ID)
		if err != nil {
			return 0, err
		}
		for _, p := range list {
			f, err := pages.Open(ctx, p.Address)
			if err != nil {
				return 0, err
			}
			k, err := io.CopyBuffer(io.Discard, f, buf)
			f.Close()
			if err != nil {
				return 0, err
			}
			n += k
		}
	}
	return n, nil
}

// rawFetch is the reference: the same page images fetched one after the
// other by a bare keep-alive client over the same TLS loopback.
func rawFetch(ctx context.Context, pool *x509.CertPool) error {
	b, err := os.ReadFile(os.Getenv(envArchiveURLs))
	if err != nil {
		return err
	}
	addr := os.Getenv(envArchiveSite)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		},
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
	}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	start := time.Now()
	var n int64
	for _, u := range strings.Split(string(b), "\n") {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		k, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		n += k
	}
	fmt.Printf("done %d %d\n", time.Since(start).Nanoseconds(), n)
	return nil
}

// benchWorker runs the archive's workers as a replica does, pacing at zero,
// until SIGTERM.
func benchWorker(ctx context.Context, st *store.Store, pages blob.Store, roots *x509.CertPool, dial gate.DialFunc) error {
	dest := gate.New(gate.Options{Resolver: benchResolver{}, Dial: dial, RootCAs: roots, MaxBytes: 8 << 20})
	reg := latest.Default()
	paces := fetch.Paces{}
	for _, s := range reg.Sites() {
		paces[s.Name] = 0
	}
	tree := fetch.New(fetch.Options{Registry: reg, Paces: paces, States: st, Pacer: pacing.New(st, pacing.Options{}),
		Gate: dest, RootCAs: roots})
	svc := &archive.Service{
		Store: st, Pages: pages, Fetch: tree.Sites, Images: dest, Pacer: tree.Pacer, Registry: reg, Policy: tree.Policy,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	workers := river.NewWorkers()
	if err := svc.AddWorkers(workers); err != nil {
		return err
	}
	client, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:           workers,
		FetchCooldown:     10 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	svc.River = client
	if err := client.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return client.Stop(stopCtx)
}

type benchResolver struct{}

func (benchResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{benchPublic}, nil
}

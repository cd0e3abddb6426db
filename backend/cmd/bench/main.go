// Command bench measures Lectern under load against references measured in
// the same run, for `make bench`. It starts what it measures itself: a
// throwaway Postgres (or BENCH_DATABASE_URL's server), the real server
// in-process on loopback, and Go's http.FileServer as the reference.
//
//	bench [-d 10s] [-c 32] bookmarks
//	bench [-d 10s] [-c 32] [-one-site] [-planner-only] scale
//	bench archive
//	bench [-n 1000] polls
//	bench [-n 200] gate
//	bench [-n 500] pacing
//	bench crash
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/loadgen"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func main() {
	dur := flag.Duration("d", 10*time.Second, "duration of each scenario")
	clients := flag.Int("c", 32, "concurrent keep-alive clients")
	count := flag.Int("n", 0, "polls (polls, default 1000) or requests (gate, default 200; pacing, per gate, default 500)")
	flag.BoolVar(&scaleOneSite, "one-site", false, "scale: every Series on one Site (asura), so the planner tick is measured for a 100,000-Series Site")
	flag.BoolVar(&scalePlannerOnly, "planner-only", false, "scale: seed, then measure only the planner ticks")
	flag.Parse()
	ctx := context.Background()
	what := flag.Arg(0)
	if what == "" {
		what = "bookmarks"
	}
	if what == archiveChild {
		// This binary re-executed for one measured part of "archive".
		os.Exit(runArchiveChild(flag.Args()[1:]))
	}
	if what == "crash" {
		// The drill starts a cluster of its own, with fsync on, to crash.
		if err := benchCrash(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	env, err := newEnv(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer env.close()
	if p := os.Getenv("BENCH_CPUPROFILE"); p != "" {
		// The in-process scenarios (bookmarks, polls, gate) profile the
		// server and the load generator together: go tool pprof FILE.
		stop, err := startCPUProfile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer stop()
	}
	switch what {
	case "bookmarks":
		err = benchBookmarks(ctx, env, *clients, *dur)
	case "archive":
		err = benchArchive(ctx, env)
	case "polls":
		err = benchPolls(ctx, env, cmp.Or(*count, 1000))
	case "gate":
		err = benchGate(ctx, env, cmp.Or(*count, 200))
	case "pacing":
		err = benchPacing(ctx, env, cmp.Or(*count, 500))
	case "mixed":
		err = benchMixed(ctx, env, *clients, *dur)
	case "scale":
		err = benchScale(ctx, env, *clients, *dur)
	case "backup":
		err = benchBackup(ctx, env)
	default:
		err = fmt.Errorf("unknown scenario %q (bookmarks, mixed, scale, archive, polls, gate, pacing, crash, backup)", what)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		// os.Exit skips the deferred drops: a failed scale seeding would
		// leave hundreds of MB on BENCH_DATABASE_URL's server.
		env.close()
		os.Exit(1)
	}
}

// env is a database server to create benchmark databases on.
type env struct {
	serverURL string
	cluster   *store.LocalCluster
	dbs       []string
}

func newEnv(ctx context.Context) (*env, error) {
	if u := os.Getenv("BENCH_DATABASE_URL"); u != "" {
		return &env{serverURL: u}, nil
	}
	dir, err := os.MkdirTemp("", "lectern-bench-pg-")
	if err != nil {
		return nil, err
	}
	c, err := store.StartLocalCluster(ctx, dir, true)
	if err != nil {
		return nil, fmt.Errorf("start a throwaway Postgres (or set BENCH_DATABASE_URL): %w", err)
	}
	return &env{serverURL: c.URL("postgres"), cluster: c}, nil
}

// database creates a fresh, migrated database.
func (e *env) database(ctx context.Context) (string, error) {
	u, err := e.emptyDatabase(ctx)
	if err != nil {
		return "", err
	}
	if err := store.MigrateUp(ctx, u); err != nil {
		return "", err
	}
	return u, nil
}

// emptyDatabase creates a database with nothing in it (a restore's target).
func (e *env) emptyDatabase(ctx context.Context) (string, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "lectern_bench_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, e.serverURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	e.dbs = append(e.dbs, name)
	u, _ := url.Parse(e.serverURL)
	u.Path = "/" + name
	return u.String(), nil
}

func (e *env) close() {
	ctx := context.Background()
	if os.Getenv("BENCH_KEEP_DATABASES") != "" && e.cluster == nil {
		// For a look at the fixture afterwards (psql, EXPLAIN).
		fmt.Fprintln(os.Stderr, "bench: kept databases:", strings.Join(e.dbs, ", "))
		return
	}
	if conn, err := pgx.Connect(ctx, e.serverURL); err == nil {
		for _, db := range e.dbs {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		}
		conn.Close(ctx)
	}
	if e.cluster != nil {
		_ = e.cluster.Remove()
	}
}

// startLectern runs the real server in-process on a loopback port.
func startLectern(ctx context.Context, dbURL, dataDir string) (base string, st *store.Store, stop func(), err error) {
	st, err = store.Open(ctx, dbURL)
	if err != nil {
		return "", nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	base = "http://" + ln.Addr().String()
	cfg := config.Config{DatabaseURL: dbURL, PublicBaseURL: base, DataDir: dataDir,
		CoverDir: filepath.Join(dataDir, "covers"), ArchiveDir: filepath.Join(dataDir, "archive"),
		ListCacheBytes: config.DefaultListCacheBytes}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(ctx, server.Deps{Config: cfg, Store: st, Logger: logger, Version: "bench"})
	if err != nil {
		return "", nil, nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = srv.Run(runCtx, ln); close(done) }()
	return base, st, func() { cancel(); <-done; st.Close() }, nil
}

// seedReader creates a Reader with n Bookmarks on n Series with realistic
// facts, and returns a token for them.
func seedReader(ctx context.Context, st *store.Store, name string, n int) (string, error) {
	hash, err := credential.HashPassword("bench password")
	if err != nil {
		return "", err
	}
	r, err := st.CreateReader(ctx, name, hash, false)
	if err != nil {
		return "", err
	}
	token, th, err := credential.NewToken()
	if err != nil {
		return "", err
	}
	if _, err := st.CreateToken(ctx, r.ID, "bench", th); err != nil {
		return "", err
	}
	_, err = st.Pool.Exec(ctx, `
		INSERT INTO series (key, site, kind, series_url, title, cover_address, cover_type,
		                    latest_label, latest_number, latest_url, latest_at)
		SELECT 'asura:bench-series-' || i, 'asura', 'manga',
		       'https://asurascans.com/comics/bench-series-' || i || '-1a2b3c4d',
		       'The Benchmark Chronicles, Volume ' || i,
		       encode(sha256(('cover' || i)::bytea), 'hex'), 'image/webp',
		       'Chapter ' || (i % 300 + 10), i % 300 + 10,
		       'https://asurascans.com/comics/bench-series-' || i || '-1a2b3c4d/chapter/' || (i % 300 + 10),
		       now() - (i || ' minutes')::interval
		FROM generate_series(1, $1) i
		ON CONFLICT (key) DO NOTHING`, n)
	if err != nil {
		return "", fmt.Errorf("seed series: %w", err)
	}
	_, err = st.Pool.Exec(ctx, `
		INSERT INTO bookmarks (reader_id, series_key, chapter, chapter_number, chapter_url, progress_at)
		SELECT $1, 'asura:bench-series-' || i, 'Chapter ' || (i % 300 + 5), i % 300 + 5,
		       'https://asurascans.com/comics/bench-series-' || i || '-1a2b3c4d/chapter/' || (i % 300 + 5),
		       now() - (i || ' hours')::interval
		FROM generate_series(1, $2) i`, r.ID, n)
	if err != nil {
		return "", fmt.Errorf("seed bookmarks: %w", err)
	}
	return token, nil
}

// acceptEncoding is what the bench's panel refreshes send: what a browser's
// userscript manager sends, in the order Lectern prefers.
const acceptEncoding = "zstd, gzip"

func benchBookmarks(ctx context.Context, e *env, clients int, d time.Duration) error {
	db, err := e.database(ctx)
	if err != nil {
		return err
	}
	dataDir, err := os.MkdirTemp("", "lectern-bench-data-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	base, st, stop, err := startLectern(ctx, db, dataDir)
	if err != nil {
		return err
	}
	defer stop()
	token, err := seedReader(ctx, st, "reader", 1000)
	if err != nil {
		return err
	}

	// Both loads ask for the same coding; one request learns the body Lectern
	// sends in it and its ETag, and the reference serves those very bytes,
	// so neither side decodes what the other does not.
	sizes := map[string]int{}
	var body []byte
	var etag string
	for _, ae := range []string{"identity", "gzip", acceptEncoding} {
		req, _ := http.NewRequest("GET", base+"/api/bookmarks", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept-Encoding", ae)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("ETag") == "" {
			return fmt.Errorf("unexpected first response: %d, etag %q, %d bytes", resp.StatusCode, resp.Header.Get("ETag"), len(b))
		}
		sizes[ae] = len(b)
		if ae == "identity" && strings.Count(string(b), `"key"`) != 1000 {
			return fmt.Errorf("unexpected first response: %d bytes without 1,000 Bookmarks", len(b))
		}
		body, etag = b, resp.Header.Get("ETag")
		if ae == acceptEncoding {
			sizes[resp.Header.Get("Content-Encoding")] = len(b)
		}
	}
	staticDir, err := os.MkdirTemp("", "lectern-bench-static-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staticDir)
	if err := os.WriteFile(filepath.Join(staticDir, "bookmarks.json"), body, 0o644); err != nil {
		return err
	}
	ref, stopRef, err := serveStatic(staticDir)
	if err != nil {
		return err
	}
	defer stopRef()
	refResp, err := http.Get(ref + "/bookmarks.json")
	if err != nil {
		return err
	}
	refResp.Body.Close()
	lastMod := refResp.Header.Get("Last-Modified")

	get := func(u string, hdr ...string) loadgen.Request {
		return func(int, int) (*http.Request, error) {
			r, err := http.NewRequest("GET", u, nil)
			for i := 0; err == nil && i+1 < len(hdr); i += 2 {
				r.Header.Set(hdr[i], hdr[i+1])
			}
			return r, err
		}
	}
	auth := "Bearer " + token
	fmt.Printf("GET /api/bookmarks, 1 Reader with 1,000 Bookmarks, Accept-Encoding: %s in both loads, %d keep-alive clients, %s each\n", acceptEncoding, clients, d)
	fmt.Printf("bytes on the wire for a full refresh: %d identity, %d gzip, %d zstd (sent: %d)\n\n", sizes["identity"], sizes["gzip"], sizes["zstd"], len(body))
	ae := "Accept-Encoding"
	full := loadgen.Run(ctx, "lectern full body", clients, d, 200, get(base+"/api/bookmarks", "Authorization", auth, ae, acceptEncoding))
	refFull := loadgen.Run(ctx, "http.FileServer same bytes", clients, d, 200, get(ref+"/bookmarks.json", ae, acceptEncoding))
	nm := loadgen.Run(ctx, "lectern 304 (If-None-Match)", clients, d, 304, get(base+"/api/bookmarks", "Authorization", auth, ae, acceptEncoding, "If-None-Match", etag))
	refNM := loadgen.Run(ctx, "http.FileServer 304 (If-Modified-Since)", clients, d, 304, get(ref+"/bookmarks.json", ae, acceptEncoding, "If-Modified-Since", lastMod))
	for _, r := range []loadgen.Result{full, refFull, nm, refNM} {
		fmt.Println(r)
	}
	fmt.Printf("\nratio full body: lectern / FileServer = %s (throughput)\n", loadgen.Ratio(full, refFull))
	fmt.Printf("ratio 304:       lectern / FileServer = %s (throughput)\n", loadgen.Ratio(nm, refNM))
	return nil
}

// serveStatic runs http.FileServer over dir on a loopback port.
func serveStatic(dir string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

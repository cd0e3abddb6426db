package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/loadgen"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The mixed workload of `make bench`: Lectern as its own process (so its
// peak RSS is its own) on a database seeded with 200 Readers × 500
// Bookmarks over 5,000 Series, driven by keep-alive clients doing what
// Readers do, next to references measured in the same run.
const (
	mixedReaders   = 200
	mixedPerReader = 500
	mixedSeries    = 5000
	mixedCovers    = 1000
)

// op is one kind of request in the mix, with its share of requests.
type op struct {
	name  string
	share int
}

var mixedOps = []op{
	{"panel refresh (If-None-Match)", 70},
	{"PUT Progress", 10},
	{"Cover GET", 15},
	{"library page render", 5},
}

type opStats struct {
	mu     sync.Mutex
	lat    []time.Duration
	errors int
	bytes  int64
	n304   int
}

func (s *opStats) add(d time.Duration, n int64, ok bool, status int) {
	s.mu.Lock()
	if status == http.StatusNotModified {
		s.n304++
	}
	s.lat = append(s.lat, d)
	s.bytes += n
	if !ok {
		s.errors++
	}
	s.mu.Unlock()
}

func benchMixed(ctx context.Context, e *env, clients int, d time.Duration) error {
	db, err := e.database(ctx)
	if err != nil {
		return err
	}
	dataDir, err := os.MkdirTemp("", "lectern-bench-mixed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	st, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()

	fmt.Printf("seeding %d Readers × %d Bookmarks over %d Series, %d Covers...\n", mixedReaders, mixedPerReader, mixedSeries, mixedCovers)
	covers, err := seedCovers(filepath.Join(dataDir, "covers"))
	if err != nil {
		return err
	}
	readers, err := seedMixed(ctx, st, covers)
	if err != nil {
		return err
	}

	bin, err := buildLectern(dataDir)
	if err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	base := "http://" + addr
	cmd := exec.CommandContext(ctx, bin, "serve")
	// The metrics listener reports the list cache (and serves
	// /debug/pprof: go tool pprof http://$BENCH_PPROF_ADDR/debug/pprof/profile).
	metricsAddr := os.Getenv("BENCH_PPROF_ADDR")
	if metricsAddr == "" {
		if metricsAddr, err = freeAddr(); err != nil {
			return err
		}
	}
	cmd.Env = append(os.Environ(), "DATABASE_URL="+db, "PUBLIC_BASE_URL="+base, "DATA_DIR="+dataDir,
		"LISTEN_ADDR="+addr, "WORKERS=0", "LOG_LEVEL=warn", "LOG_FORMAT=text", "METRICS_ADDR="+metricsAddr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	if err := waitReady(base); err != nil {
		return err
	}
	// Fill the list cache before the mix: every Reader's list in every
	// coding is more than LIST_CACHE_BYTES' default, so the peak RSS below is
	// that of a replica with its cache full.
	for _, r := range readers {
		for _, ae := range []string{"identity", "gzip", acceptEncoding} {
			if _, err := panelBody(base, r, ae); err != nil {
				return err
			}
		}
	}
	warm := cacheStats("http://" + metricsAddr)

	stats := make([]*opStats, len(mixedOps))
	for i := range stats {
		stats[i] = &opStats{}
	}
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	var total atomic.Int64
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 42))
			etags := map[int]string{}
			// Each client is the device of a few Readers, so its panel
			// refreshes revalidate the ETags it holds, as a real panel does.
			mine := make([]mixedReader, 0, len(readers)/clients+1)
			for i := c; i < len(readers); i += clients {
				mine = append(mine, readers[i])
			}
			for runCtx.Err() == nil {
				r := mine[rng.IntN(len(mine))]
				pick := rng.IntN(100)
				i := 0
				for acc := mixedOps[0].share; pick >= acc; acc += mixedOps[i].share {
					i++
				}
				req, want := mixedRequest(i, base, r, rng, covers, etags)
				t0 := time.Now()
				resp, err := hc.Do(req.WithContext(context.WithoutCancel(runCtx)))
				if err != nil {
					stats[i].add(time.Since(t0), 0, false, 0)
					continue
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ok := slices.Contains(want, resp.StatusCode)
				stats[i].add(time.Since(t0), n, ok, resp.StatusCode)
				if i == 0 && resp.StatusCode == http.StatusOK {
					etags[r.id] = resp.Header.Get("ETag")
				}
				total.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	peak := childPeakRSS(cmd.Process.Pid)
	after := cacheStats("http://" + metricsAddr)

	// References in the same run: a full panel body as Lectern sends it
	// (compressed) served by http.FileServer, and a bare SELECT 1 round trip.
	fullBody, err := panelBody(base, readers[0], acceptEncoding)
	if err != nil {
		return err
	}
	staticDir, err := os.MkdirTemp("", "lectern-bench-static-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staticDir)
	if err := os.WriteFile(filepath.Join(staticDir, "panel.json"), fullBody, 0o644); err != nil {
		return err
	}
	ref, stopRef, err := serveStatic(staticDir)
	if err != nil {
		return err
	}
	defer stopRef()
	refD := min(d, 10*time.Second)
	static := loadgen.Run(ctx, "http.FileServer, same bytes", clients, refD, 200, func(int, int) (*http.Request, error) {
		req, err := http.NewRequest("GET", ref+"/panel.json", nil)
		if err == nil {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		return req, err
	})
	sel, err := selectOne(ctx, db, clients, refD)
	if err != nil {
		return err
	}

	fmt.Printf("\nmixed workload: %d keep-alive clients for %s against `lectern serve` (WORKERS=0)\n\n", clients, d)
	fmt.Printf("%-32s %9s %9s %10s %10s %8s\n", "operation", "requests", "req/s", "p50", "p99", "errors")
	errorsTotal := 0
	for i, o := range mixedOps {
		s := stats[i]
		slices.Sort(s.lat)
		p50, p99 := pct(s.lat, 50), pct(s.lat, 99)
		errorsTotal += s.errors
		fmt.Printf("%-32s %9d %9.0f %10s %10s %8d\n", o.name, len(s.lat), float64(len(s.lat))/elapsed.Seconds(),
			p50.Round(time.Microsecond), p99.Round(time.Microsecond), s.errors)
	}
	fmt.Printf("%-32s %9d %9.0f\n", "all", total.Load(), float64(total.Load())/elapsed.Seconds())
	fmt.Printf("\npanel refreshes answered 304: %.0f%%; mean panel response %.1f KB\n",
		100*float64(stats[0].n304)/float64(max(len(stats[0].lat), 1)), float64(stats[0].bytes)/float64(max(len(stats[0].lat), 1))/1024)
	fmt.Printf("\nerrors: %d   peak RSS of lectern serve: %.1f MiB\n", errorsTotal, float64(peak)/(1<<20))
	fmt.Printf("list cache: %s after the warm-up, %s at the end\n", warm, after)
	fmt.Printf("\nreferences (same run, %s each):\n", refD)
	fmt.Println(static)
	fmt.Println(sel)
	fmt.Printf("full panel body: %d bytes as sent with Accept-Encoding: %s (the static file is those bytes)\n", len(fullBody), acceptEncoding)
	if errorsTotal > 0 {
		return fmt.Errorf("%d requests failed", errorsTotal)
	}
	return nil
}

type mixedReader struct {
	id            int
	token, cookie string
	keys          []string
}

func mixedRequest(i int, base string, r mixedReader, rng *rand.Rand, covers []string, etags map[int]string) (*http.Request, []int) {
	switch i {
	case 0:
		req, _ := http.NewRequest("GET", base+"/api/bookmarks?kind=manga", nil)
		req.Header.Set("Authorization", "Bearer "+r.token)
		req.Header.Set("Accept-Encoding", acceptEncoding)
		if et := etags[r.id]; et != "" {
			req.Header.Set("If-None-Match", et)
		}
		return req, []int{200, 304}
	case 1:
		key := r.keys[rng.IntN(len(r.keys))]
		slug := strings.TrimPrefix(key, "asura:")
		n := rng.IntN(400) + 1
		body := fmt.Sprintf(`{"site":"asura","series_url":"https://asurascans.com/comics/%s-1a2b3c4d","chapter":"Chapter %d","chapter_url":"https://asurascans.com/comics/%s-1a2b3c4d/chapter/%d"}`, slug, n, slug, n)
		req, _ := http.NewRequest("PUT", base+"/api/bookmarks/"+key, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+r.token)
		req.Header.Set("Content-Type", "application/json")
		return req, []int{200}
	case 2:
		// The short reference, as the panel's list names Covers (ADR 0032).
		req, _ := http.NewRequest("GET", cover.ShortURL(base, covers[rng.IntN(len(covers))], imagetype.TypeJPEG), nil)
		return req, []int{200}
	default:
		req, _ := http.NewRequest("GET", base+"/library/manga", nil)
		req.AddCookie(&http.Cookie{Name: "lectern_session", Value: r.cookie})
		return req, []int{200}
	}
}

// seedCovers writes mixedCovers distinct 20–60 KB JPEG-headed files where
// the Cover store keeps them and returns their addresses.
func seedCovers(dir string) ([]string, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]string, 0, mixedCovers)
	for range mixedCovers {
		b := make([]byte, 20<<10+rng.IntN(40<<10))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		copy(b, []byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00})
		sum := sha256.Sum256(b)
		addr := hex.EncodeToString(sum[:])
		p := filepath.Join(dir, addr[:2], addr[2:4], addr)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
		out = append(out, addr)
	}
	return out, nil
}

func seedMixed(ctx context.Context, st *store.Store, covers []string) ([]mixedReader, error) {
	hash, err := credential.HashPassword("bench password")
	if err != nil {
		return nil, err
	}
	_, err = st.Pool.Exec(ctx, `
		INSERT INTO series (key, site, kind, series_url, title, cover_address, cover_type,
		                    latest_label, latest_number, latest_url, latest_at)
		SELECT 'asura:mixed-' || i, 'asura', 'manga', 'https://asurascans.com/comics/mixed-' || i || '-1a2b3c4d',
		       'A Series Called Number ' || i, ($1::text[])[1 + i % $2], 'image/jpeg',
		       'Chapter ' || (i % 400 + 10), i % 400 + 10,
		       'https://asurascans.com/comics/mixed-' || i || '-1a2b3c4d/chapter/' || (i % 400 + 10),
		       now() - (i || ' minutes')::interval
		FROM generate_series(1, $3) i`, covers, len(covers), mixedSeries)
	if err != nil {
		return nil, fmt.Errorf("seed series: %w", err)
	}
	readers := make([]mixedReader, 0, mixedReaders)
	for r := 1; r <= mixedReaders; r++ {
		rd, err := st.CreateReader(ctx, "reader"+strconv.Itoa(r), hash, r == 1)
		if err != nil {
			return nil, err
		}
		token, th, err := credential.NewToken()
		if err != nil {
			return nil, err
		}
		if _, err := st.CreateToken(ctx, rd.ID, "bench", th); err != nil {
			return nil, err
		}
		sid, err := credential.NewSecret()
		if err != nil {
			return nil, err
		}
		if err := st.CreateSession(ctx, credential.HashSecret(sid), rd.ID, "csrf", time.Now().Add(time.Hour)); err != nil {
			return nil, err
		}
		// Reader r holds 500 distinct Series: (r·97 + i·7) mod 5000, and 7 is
		// coprime with 5000.
		rows, err := st.Pool.Query(ctx, `
			INSERT INTO bookmarks (reader_id, series_key, chapter, chapter_number, chapter_url, progress_at)
			SELECT $1, 'asura:mixed-' || s, 'Chapter ' || (s % 400 + 5), s % 400 + 5,
			       'https://asurascans.com/comics/mixed-' || s || '-1a2b3c4d/chapter/' || (s % 400 + 5), now()
			FROM (SELECT (($2 * 97 + i * 7) % $3) + 1 AS s FROM generate_series(0, $4 - 1) i) q
			RETURNING series_key`, rd.ID, r, mixedSeries, mixedPerReader)
		if err != nil {
			return nil, err
		}
		var keys []string
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		readers = append(readers, mixedReader{id: int(rd.ID), token: token, cookie: sid, keys: keys})
	}
	_, err = st.Pool.Exec(ctx, `ANALYZE`)
	return readers, err
}

func buildLectern(dir string) (string, error) {
	bin := filepath.Join(dir, "lectern")
	out, err := exec.Command("go", "build", "-o", bin, "./backend/cmd/lectern").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build lectern (run bench from the repository root): %w\n%s", err, out)
	}
	return bin, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitReady(base string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("lectern at %s never became ready", base)
}

func panelBody(base string, r mixedReader, acceptEncoding string) ([]byte, error) {
	req, _ := http.NewRequest("GET", base+"/api/bookmarks?kind=manga", nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Accept-Encoding", acceptEncoding)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = io.Copy(&buf, resp.Body)
	return buf.Bytes(), err
}

// childPeakRSS reads a process's high-water resident set size.
func childPeakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// selectOne is the database reference: SELECT 1 round trips from the same
// number of clients.
func selectOne(ctx context.Context, db string, clients int, d time.Duration) (string, error) {
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			var local []time.Duration
			for runCtx.Err() == nil {
				t0 := time.Now()
				var one int
				if err := pool.QueryRow(context.WithoutCancel(runCtx), "SELECT 1").Scan(&one); err != nil {
					continue
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(lat)
	return fmt.Sprintf("%-34s %9.0f req/s  p50 %8s  p99 %8s", "SELECT 1 round trip (pgx pool)",
		float64(len(lat))/time.Since(start).Seconds(), pct(lat, 50).Round(time.Microsecond), pct(lat, 99).Round(time.Microsecond)), nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}

// cacheStats reads the list cache's gauges from a replica's metrics.
func cacheStats(metricsBase string) string {
	resp, err := http.Get(metricsBase + "/metrics")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	v := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && strings.HasPrefix(f[0], "lectern_list_cache_") {
			v[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return fmt.Sprintf("%.1f of %.0f MiB, %.0f lists (hits %.0f, misses %.0f)", v["lectern_list_cache_bytes"]/(1<<20),
		v["lectern_list_cache_max_bytes"]/(1<<20), v["lectern_list_cache_entries"], v["lectern_list_cache_hits_total"], v["lectern_list_cache_misses_total"])
}

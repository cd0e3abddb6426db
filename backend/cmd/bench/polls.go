package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/fetch/pacing"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/riverjob"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testcert"
)

// The Poll's figures: what one poll costs the machinery (River, the pinned
// TLS fetch, the registry, the store) with pacing at zero, next to a bare
// HTTP GET of the same body over the same TLS; and how exactly two gates on
// one database ("replicas") hold a Site's rate.

const pollWorkers = 4

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pgCPU is the CPU time of the bench's own Postgres (the postmaster and its
// children), or -1 when the server is not ours to measure.
func (e *env) pgCPU() time.Duration {
	if e.cluster == nil {
		return -1
	}
	raw, err := os.ReadFile(filepath.Join(e.cluster.Dir, "data", "postmaster.pid"))
	if err != nil {
		return -1
	}
	root, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil {
		return -1
	}
	tick := 100.0 // USER_HZ on Linux
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var total float64
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state ppid ... utime(14) stime(15).
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(s)[0])
		ppid, _ := strconv.Atoi(f[1])
		if pid != root && ppid != root {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		total += (ut + st) / tick
	}
	return time.Duration(total * float64(time.Second))
}

// benchSeriesPage serves the asura fixture for every /comics/ path, over TLS
// for asurascans.com signed by a throwaway CA.
type benchSeriesPage struct {
	srv  *http.Server
	ln   net.Listener
	body []byte
	tls  *tls.Config
}

func newBenchSeriesPage() (*benchSeriesPage, error) {
	body, err := os.ReadFile(filepath.Join("testdata", "sites", "asura", "series.html"))
	if err != nil {
		return nil, fmt.Errorf("read the asura fixture (run bench from the repository root): %w", err)
	}
	ca, err := testcert.NewAuthority()
	if err != nil {
		return nil, err
	}
	srvTLS, err := ca.ServerConfig("asurascans.com")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &benchSeriesPage{ln: ln, body: body, tls: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, TLSConfig: srvTLS, ErrorLog: nil,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.URL.Path, "/comics/") {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(body)
		})}
	go func() { _ = p.srv.ServeTLS(ln, "", "") }()
	return p, nil
}

func (p *benchSeriesPage) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", p.ln.Addr().String())
}

func (p *benchSeriesPage) close() { _ = p.srv.Close() }

type costRow struct {
	name      string
	n         int
	elapsed   time.Duration
	cpu, pgCP time.Duration
}

func (c costRow) String() string {
	pg := "n/a"
	if c.pgCP >= 0 {
		pg = fmt.Sprintf("%.3f", float64(c.pgCP.Microseconds())/1000/float64(c.n))
	}
	return fmt.Sprintf("%-44s %6d in %7s  %8.0f /s  lectern CPU %6.3f ms each  postgres CPU %s ms each",
		c.name, c.n, c.elapsed.Round(time.Millisecond), float64(c.n)/c.elapsed.Seconds(),
		float64(c.cpu.Microseconds())/1000/float64(c.n), pg)
}

func benchPolls(ctx context.Context, e *env, n int) error {
	db, err := e.database(ctx)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	page, err := newBenchSeriesPage()
	if err != nil {
		return err
	}
	defer page.close()

	// n asura Series, each held by one Reader. They share the fixture's
	// series URL: the registry reads a page's chapters only for the Series
	// its URL names, so each poll extracts exactly what a real one would.
	if _, err := st.Pool.Exec(ctx, `INSERT INTO readers (name, password_hash) VALUES ('bench', 'x')`); err != nil {
		return err
	}
	if _, err := st.Pool.Exec(ctx, `
		INSERT INTO series (key, site, kind, series_url)
		SELECT 'asura:bench-' || i, 'asura', 'manga', 'https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b'
		FROM generate_series(1, $1) i`, n); err != nil {
		return err
	}
	if _, err := st.Pool.Exec(ctx, `
		INSERT INTO bookmarks (reader_id, series_key) SELECT (SELECT id FROM readers LIMIT 1), 'asura:bench-' || i FROM generate_series(1, $1) i`, n); err != nil {
		return err
	}

	// The production fetcher and gate, pacing at zero.
	reg := latest.Default()
	policy := &fetch.Policy{Registry: reg, Paces: fetch.Paces{"asura": 0}, States: st}
	pacer := pacing.New(st, pacing.Options{})
	plain := fetch.NewPlainFetcher(fetch.PlainOptions{Dial: page.dial, RootCAs: page.tls.RootCAs, UserAgent: "LecternBench/1",
		Pace: func(ctx context.Context, host string) error {
			every, err := policy.Admit(ctx, host, nil)
			if err != nil {
				return err
			}
			return pacer.Wait(ctx, host, every)
		}})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	poller := &poll.Poller{Store: st, Registry: reg, Policy: policy, Fetch: &fetch.Sites{Plain: plain, Policy: policy},
		Interval: time.Hour, Logger: quiet}
	workers := river.NewWorkers()
	river.AddWorker(workers, &poll.PollWorker{Poller: poller})
	client, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: pollWorkers}},
		Workers: workers, Logger: quiet,
		FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()

	pass := func(name string) (costRow, error) {
		params := make([]river.InsertManyParams, n)
		for i := range n {
			params[i] = river.InsertManyParams{Args: poll.PollArgs{Key: fmt.Sprintf("asura:bench-%d", i+1), Reason: "bench"}}
		}
		cpu0, pg0, t0 := cpuTime(), e.pgCPU(), time.Now()
		if _, err := client.InsertMany(ctx, params); err != nil {
			return costRow{}, err
		}
		for {
			var left int
			if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = '`+riverjob.PollSeries+`' AND state IN (`+riverjob.InFlightSQL+`)`).Scan(&left); err != nil {
				return costRow{}, err
			}
			if left == 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		row := costRow{name: name, n: n, elapsed: time.Since(t0), cpu: cpuTime() - cpu0, pgCP: -1}
		if pg0 >= 0 {
			row.pgCP = e.pgCPU() - pg0
		}
		var bad int
		if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM series WHERE poll_status <> 'ok' OR latest_label = ''`).Scan(&bad); err != nil {
			return costRow{}, err
		}
		if bad > 0 {
			return costRow{}, fmt.Errorf("%d of %d polls did not store a Latest Chapter", bad, n)
		}
		if _, err := st.Pool.Exec(ctx, `DELETE FROM river_job WHERE kind = '`+riverjob.PollSeries+`'`); err != nil {
			return costRow{}, err
		}
		return row, nil
	}
	first, err := pass("poll (new Latest Chapter, history row)")
	if err != nil {
		return err
	}
	steady, err := pass("poll (unchanged: the steady state)")
	if err != nil {
		return err
	}

	// The reference: the bare GET of the same body, same TLS, same
	// concurrency, keep-alive.
	hc := &http.Client{Transport: &http.Transport{DialContext: page.dial, TLSClientConfig: page.tls, ForceAttemptHTTP2: true,
		MaxIdleConnsPerHost: pollWorkers}}
	var next = make(chan int, n)
	for i := range n {
		next <- i + 1
	}
	close(next)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var getErr error
	cpu0, pg0, t0 := cpuTime(), e.pgCPU(), time.Now()
	for range pollWorkers {
		wg.Go(func() {
			for range next {
				resp, err := hc.Get("https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b")
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil {
					mu.Lock()
					getErr = errors.Join(getErr, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if getErr != nil {
		return getErr
	}
	ref := costRow{name: "bare HTTP GET of the same body", n: n, elapsed: time.Since(t0), cpu: cpuTime() - cpu0, pgCP: -1}
	if pg0 >= 0 {
		ref.pgCP = e.pgCPU() - pg0
	}

	fmt.Printf("Poll cost: %d asura Series, %d workers, pacing at zero, loopback TLS Site serving the %d-byte asura fixture\n", n, pollWorkers, len(page.body))
	fmt.Println("(lectern CPU includes the in-process fixture server's share, the same in every row)")
	fmt.Println()
	for _, r := range []costRow{first, steady, ref} {
		fmt.Println(r)
	}
	fmt.Printf("\nratio throughput: steady poll / bare GET = %.2f\n", (float64(n)/steady.elapsed.Seconds())/(float64(n)/ref.elapsed.Seconds()))
	fmt.Printf("ratio lectern CPU per request: steady poll / bare GET = %.2f\n", float64(steady.cpu)/float64(max(ref.cpu, 1)))
	return nil
}

func benchGate(ctx context.Context, e *env, total int) error {
	db, err := e.database(ctx)
	if err != nil {
		return err
	}
	var arrivals []time.Time
	var mu sync.Mutex
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	target := "http://" + ln.Addr().String() + "/"

	// Two replicas: two pools, two gates, on one database.
	var gates []*pacing.Gate
	for range 2 {
		st, err := store.Open(ctx, db)
		if err != nil {
			return err
		}
		defer st.Close()
		gates = append(gates, pacing.New(st, pacing.Options{}))
	}
	fmt.Printf("Gate accuracy: %d requests to one host through 2 gates on one database (8 goroutines each), jitter up to %.0f%%\n\n",
		total, pacing.DefaultJitter*100)
	for _, every := range []time.Duration{100 * time.Millisecond, 20 * time.Millisecond} {
		mu.Lock()
		arrivals = arrivals[:0]
		mu.Unlock()
		host := fmt.Sprintf("gate-%d.example", every.Milliseconds())
		work := make(chan struct{}, total)
		for range total {
			work <- struct{}{}
		}
		close(work)
		var wg sync.WaitGroup
		var waitErr error
		for _, g := range gates {
			for range 8 {
				wg.Go(func() {
					hc := &http.Client{}
					for range work {
						if err := g.Wait(ctx, host, every); err != nil {
							mu.Lock()
							waitErr = errors.Join(waitErr, err)
							mu.Unlock()
							return
						}
						if resp, err := hc.Get(target); err == nil {
							resp.Body.Close()
						}
					}
				})
			}
		}
		wg.Wait()
		if waitErr != nil {
			return waitErr
		}
		mu.Lock()
		at := append([]time.Time(nil), arrivals...)
		mu.Unlock()
		sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
		span := at[len(at)-1].Sub(at[0])
		observed := float64(len(at)-1) / span.Seconds()
		limit := 1 / every.Seconds()
		expected := 1 / (every.Seconds() * (1 + pacing.DefaultJitter/2))
		minGap := time.Duration(1<<63 - 1)
		for i := 1; i < len(at); i++ {
			minGap = min(minGap, at[i].Sub(at[i-1]))
		}
		fmt.Printf("interval %-6s limit %6.2f req/s  expected with jitter %6.2f  observed %6.2f  observed/limit %.3f  observed/expected %.3f  smallest gap %s\n",
			every, limit, expected, observed, observed/limit, observed/expected, minGap.Round(100*time.Microsecond))
	}
	return nil
}

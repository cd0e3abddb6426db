package cover

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/s3test"
)

const (
	benchCovers  = 1000
	benchClients = 32
	benchBatch   = 4000 // requests per server per iteration
	benchRounds  = 8    // alternating rounds per iteration
)

// BenchmarkCoverRoute serves 1,000 distinct stored Covers (20–60 KB of random
// bytes behind a JPEG header) to 32 concurrent keep-alive clients from the
// Cover route and, in the same run over the same directory, from Go's
// http.FileServer, alternating batches so both see the same machine state.
// It reports requests per second for each and their ratio. With NGINX_PATH
// set (make bench sets it from scripts/ensure-nginx.sh), nginx serves the
// same directory too and joins the rounds. The same Covers are also put in
// a bucket of a real S3 server (versitygw, s3test) and served by the Cover
// route from it, warm (every Cover in the Cover cache) and cold (no cache:
// every request a GET to the bucket):
//
//	NGINX_PATH=$(scripts/ensure-nginx.sh) go test -run '^$' -bench CoverRoute -benchtime 5x ./backend/internal/cover/
func BenchmarkCoverRoute(b *testing.B) {
	dir := b.TempDir()
	store := &blob.FS{Dir: dir}
	type item struct {
		route, file string
		size        int64
	}
	items := make([]item, benchCovers)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range items {
		size := 20_000 + rng.IntN(40_001)
		addr, err := store.Put(context.Background(), imagetest.JPEG(b, size), imagetype.TypeJPEG)
		if err != nil {
			b.Fatal(err)
		}
		items[i] = item{
			route: "/covers/" + addr + ".jpg",
			file:  "/" + addr[:2] + "/" + addr[2:4] + "/" + addr,
			size:  int64(size),
		}
	}

	mux := http.NewServeMux()
	mux.Handle("GET /covers/{address}", NewHandler(store))
	route := httptest.NewServer(mux)
	defer route.Close()

	s3srv := s3test.Start(b)
	s3srv.Bucket(b, "bench")
	bucket, err := blob.NewS3("bench", "covers", s3srv.Options())
	if err != nil {
		b.Fatal(err)
	}
	if err := store.List(context.Background(), func(address string, _ int64) error {
		o, err := store.Open(context.Background(), address)
		if err != nil {
			return err
		}
		defer o.Close()
		data, err := io.ReadAll(o)
		if err != nil {
			return err
		}
		_, err = bucket.Put(context.Background(), data, imagetype.TypeJPEG)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	serve := func(st blob.Store) *httptest.Server {
		m := http.NewServeMux()
		m.Handle("GET /covers/{address}", NewHandler(st))
		return httptest.NewServer(m)
	}
	// Large enough for every Cover: the warm figure is the cache's.
	warm := serve(blob.NewCached(bucket, 128<<20))
	defer warm.Close()
	cold := serve(bucket)
	defer cold.Close()
	files := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer files.Close()
	nginx := startNginx(b, dir)

	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns:        2 * benchClients,
		MaxIdleConnsPerHost: benchClients,
		DisableCompression:  true,
	}}
	defer client.CloseIdleConnections()

	// run sends n requests from benchClients workers, each walking the
	// covers from its own random offset, and checks every answer.
	run := func(base string, useRoute bool, n int) time.Duration {
		var next atomic.Int64
		var failed atomic.Value
		var wg sync.WaitGroup
		start := time.Now()
		for w := range benchClients {
			wg.Go(func() {
				offset := w * (benchCovers / benchClients)
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					it := items[(offset+i)%benchCovers]
					path := it.file
					if useRoute {
						path = it.route
					}
					resp, err := client.Get(base + path)
					if err != nil {
						failed.Store(err)
						return
					}
					got, err := io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK || got != it.size {
						failed.Store(fmt.Errorf("%s: status %d, %d of %d bytes, %v", path, resp.StatusCode, got, it.size, err))
						return
					}
				}
			})
		}
		wg.Wait()
		if err, ok := failed.Load().(error); ok {
			b.Fatal(err)
		}
		return time.Since(start)
	}

	// Warm both: page cache, connections, and one full pass over every cover.
	run(route.URL, true, benchCovers)
	run(files.URL, false, benchCovers)
	run(warm.URL, true, benchCovers)
	run(cold.URL, true, benchCovers)
	if nginx != "" {
		run(nginx, false, benchCovers)
	}

	// Each iteration interleaves the two servers in short alternating rounds,
	// so a burst of load from elsewhere on the machine lands on both alike.
	var routeTime, fileTime, nginxTime, warmTime, coldTime time.Duration
	total := 0
	for b.Loop() {
		for r := range benchRounds {
			if r%2 == 0 {
				routeTime += run(route.URL, true, benchBatch/benchRounds)
				fileTime += run(files.URL, false, benchBatch/benchRounds)
			} else {
				fileTime += run(files.URL, false, benchBatch/benchRounds)
				routeTime += run(route.URL, true, benchBatch/benchRounds)
			}
			if nginx != "" {
				nginxTime += run(nginx, false, benchBatch/benchRounds)
			}
			warmTime += run(warm.URL, true, benchBatch/benchRounds)
			coldTime += run(cold.URL, true, benchBatch/benchRounds)
		}
		total += benchBatch
	}
	routeRate := float64(total) / routeTime.Seconds()
	fileRate := float64(total) / fileTime.Seconds()
	b.ReportMetric(routeRate, "route-req/s")
	b.ReportMetric(fileRate, "fileserver-req/s")
	b.ReportMetric(routeRate/fileRate, "route/fileserver")
	warmRate := float64(total) / warmTime.Seconds()
	coldRate := float64(total) / coldTime.Seconds()
	b.ReportMetric(warmRate, "s3warm-req/s")
	b.ReportMetric(coldRate, "s3cold-req/s")
	b.ReportMetric(warmRate/fileRate, "s3warm/fileserver")
	b.ReportMetric(coldRate/fileRate, "s3cold/fileserver")
	if nginx != "" {
		nginxRate := float64(total) / nginxTime.Seconds()
		b.ReportMetric(nginxRate, "nginx-req/s")
		b.ReportMetric(routeRate/nginxRate, "route/nginx")
	}
}

// startNginx serves dir with the nginx at NGINX_PATH on a loopback port,
// configured as a static file server is usually tuned (sendfile, an open
// file cache, long keep-alive, no access log), and returns its base URL;
// "" when NGINX_PATH is unset.
func startNginx(b *testing.B, dir string) string {
	bin := os.Getenv("NGINX_PATH")
	if bin == "" {
		b.Log("NGINX_PATH unset: no nginx reference (make bench sets it)")
		return ""
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	prefix := b.TempDir()
	user := ""
	if os.Geteuid() == 0 {
		// Workers would drop to nobody, who cannot read a 0700 temp dir.
		user = "user root;"
	}
	conf := fmt.Sprintf(`%[1]s
worker_processes %[2]d;
daemon off;
pid %[3]s/nginx.pid;
error_log %[3]s/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
	open_file_cache max=2000;
	client_body_temp_path %[3]s/body;
	proxy_temp_path %[3]s/proxy;
	fastcgi_temp_path %[3]s/fastcgi;
	uwsgi_temp_path %[3]s/uwsgi;
	scgi_temp_path %[3]s/scgi;
	default_type application/octet-stream;
	server {
		listen %[4]s;
		root %[5]s;
	}
}
`, user, runtime.NumCPU(), prefix, addr, dir)
	confPath := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", prefix, "-c", confPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("start nginx: %v", err)
	}
	b.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGQUIT); _ = cmd.Wait() })
	base := "http://" + addr
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resp, err := http.Get(base + "/"); err == nil {
			_ = resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			b.Fatalf("nginx did not start: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

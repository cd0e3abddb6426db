package cover

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
// It reports requests per second for each and their ratio:
//
//	go test -run '^$' -bench CoverRoute -benchtime 5x ./backend/internal/cover/
func BenchmarkCoverRoute(b *testing.B) {
	dir := b.TempDir()
	store := &Store{Dir: dir}
	type item struct {
		route, file string
		size        int64
	}
	items := make([]item, benchCovers)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range items {
		size := 20_000 + rng.IntN(40_001)
		addr, err := store.Put(context.Background(), jpegBytes(b, size), TypeJPEG)
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
	files := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer files.Close()

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

	// Each iteration interleaves the two servers in short alternating rounds,
	// so a burst of load from elsewhere on the machine lands on both alike.
	var routeTime, fileTime time.Duration
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
		}
		total += benchBatch
	}
	routeRate := float64(total) / routeTime.Seconds()
	fileRate := float64(total) / fileTime.Seconds()
	b.ReportMetric(routeRate, "route-req/s")
	b.ReportMetric(fileRate, "fileserver-req/s")
	b.ReportMetric(routeRate/fileRate, "route/fileserver")
}

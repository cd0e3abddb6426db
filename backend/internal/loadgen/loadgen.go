// Package loadgen drives HTTP load for `make bench`: a fixed number of
// keep-alive clients issuing requests for a while, with latencies recorded
// so results can be reported as throughput and percentiles, next to a
// reference measured in the same run.
package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Request builds one request; i counts requests of this client.
type Request func(client, i int) (*http.Request, error)

// Result is one scenario's measurement.
type Result struct {
	Name     string
	Requests int
	Errors   int
	Bytes    int64
	Elapsed  time.Duration
	P50, P99 time.Duration
	// Status counts responses by status code.
	Status map[int]int
}

// RPS is requests per second.
func (r Result) RPS() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

func (r Result) String() string {
	return fmt.Sprintf("%-34s %9.0f req/s  p50 %8s  p99 %8s  %6.1f KB/resp  errors %d",
		r.Name, r.RPS(), r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond),
		float64(r.Bytes)/float64(max(r.Requests, 1))/1024, r.Errors)
}

// Run issues requests from clients goroutines for d, each on its own
// keep-alive connection. want is the status a response must have to count as
// a success.
func Run(ctx context.Context, name string, clients int, d time.Duration, want int, req Request) Result {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	status := map[int]int{}
	var errs, n atomic.Int64
	var bytes atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			local := make([]time.Duration, 0, 4096)
			localStatus := map[int]int{}
			for i := 0; ctx.Err() == nil; i++ {
				r, err := req(c, i)
				if err != nil {
					errs.Add(1)
					continue
				}
				t0 := time.Now()
				resp, err := hc.Do(r.WithContext(context.WithoutCancel(ctx)))
				if err != nil {
					errs.Add(1)
					continue
				}
				nb, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				local = append(local, time.Since(t0))
				localStatus[resp.StatusCode]++
				bytes.Add(nb)
				n.Add(1)
				if resp.StatusCode != want {
					errs.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, local...)
			for k, v := range localStatus {
				status[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res := Result{Name: name, Requests: int(n.Load()), Errors: int(errs.Load()), Bytes: bytes.Load(), Elapsed: time.Since(start), Status: status}
	slices.Sort(lat)
	if len(lat) > 0 {
		res.P50 = lat[len(lat)/2]
		res.P99 = lat[len(lat)*99/100]
	}
	return res
}

// Ratio formats a/b throughput as "0.42x".
func Ratio(a, b Result) string {
	if b.RPS() == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a.RPS()/b.RPS())
}

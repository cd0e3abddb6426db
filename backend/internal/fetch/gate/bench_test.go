package gate_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
)

// BenchmarkEndlessBody measures the memory the gate uses while a hostile
// server streams an endless image body at it with the default 2 MiB cap, and,
// in the same run as the reference, while it fetches the largest image the
// cap admits (exactly 2 MiB). Run it alone so the process peak is its own:
//
//	go test -run '^$' -bench EndlessBody ./backend/internal/fetch/gate/
//
// Reported: the Go heap high-water mark above the pre-fetch baseline for each
// fetch and their ratio; the process peak RSS (VmHWM, reset before each fetch
// through /proc/self/clear_refs); and how much the endless server managed to
// send before the gate hung up.
func BenchmarkEndlessBody(b *testing.B) {
	f := newFixture(b, fixtureOpts{})
	c := f.client(gate.Options{Timeout: 60 * time.Second})
	ctx := context.Background()

	var endlessHeap, maxHeap, endlessRSS, maxRSS, sent float64
	n := 0
	for b.Loop() {
		before := f.endlessBytes.Load()
		h, rss := peakDuring(b, func() {
			_, err := c.FetchImage(ctx, "https://cdn.test/endless", "")
			if gate.Class(err) != gate.ClassTooLarge {
				b.Fatalf("endless body: %v", err)
			}
		})
		endlessHeap, endlessRSS = max(endlessHeap, h), max(endlessRSS, rss)
		// Let the server notice the hang-up before counting what it sent.
		time.Sleep(20 * time.Millisecond)
		sent += float64(f.endlessBytes.Load() - before)

		h, rss = peakDuring(b, func() {
			img, err := c.FetchImage(ctx, "https://cdn.test/size?n="+strconv.Itoa(gate.DefaultMaxBytes), "")
			if err != nil || len(img.Bytes) != gate.DefaultMaxBytes {
				b.Fatalf("largest admitted image: %v", err)
			}
		})
		maxHeap, maxRSS = max(maxHeap, h), max(maxRSS, rss)
		n++
	}
	const mib = 1 << 20
	b.ReportMetric(endlessHeap/mib, "endless-peak-heap-MiB")
	b.ReportMetric(maxHeap/mib, "2MiB-image-peak-heap-MiB")
	b.ReportMetric(endlessHeap/maxHeap, "endless/2MiB-heap")
	b.ReportMetric(endlessRSS/mib, "endless-peak-RSS-MiB")
	b.ReportMetric(maxRSS/mib, "2MiB-image-peak-RSS-MiB")
	b.ReportMetric(sent/float64(n)/mib, "endless-MiB-sent")
}

// peakDuring runs fn and returns the highest Go heap (live and not yet
// collected objects) seen above the starting level, sampled every 100µs, and
// the process's peak RSS during fn (0 where /proc is not available).
func peakDuring(b *testing.B, fn func()) (heap, rss float64) {
	b.Helper()
	runtime.GC()
	resetPeakRSS()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	if v := read(); v > peak.Load() {
		peak.Store(v)
	}
	return float64(peak.Load() - min(base, peak.Load())), float64(peakRSS())
}

func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:")); ok {
			kb, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

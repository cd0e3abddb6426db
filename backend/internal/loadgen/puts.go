package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// PutOutcome is one Progress write of a Puts load: the Bookmark it created
// and what came back.
type PutOutcome struct {
	Key        string
	Status     int // 0 when no answer came
	Body       string
	RetryAfter string
	Err        error
	Sent       time.Time // when the write was sent
	At         time.Time // when the answer (or the failure) came
}

// Acknowledged reports a write the server said it stored.
func (o PutOutcome) Acknowledged() bool { return o.Err == nil && o.Status >= 200 && o.Status < 300 }

// Puts is Readers' Progress writes against a live server while something
// fails under it (the crash drill and its test): each write creates a
// Bookmark of its own (asura:<prefix>-<client>-<i>), so every acknowledged
// one names exactly one row to find after recovery.
type Puts struct {
	base          func() string
	token, prefix string
	hc            *http.Client
	stop          chan struct{}
	wg            sync.WaitGroup
	mu            sync.Mutex
	out           []PutOutcome
}

// StartPuts starts clients writers against base with the Reader's token.
// A writer that gets no answer or a 5xx waits 20 ms before its next write,
// as a userscript retrying would, so an outage is not a busy loop.
func StartPuts(base, token, prefix string, clients int) *Puts {
	return StartPutsTo(func() string { return base }, token, prefix, clients)
}

// StartPutsTo is StartPuts against a server that may move: base is asked
// before every write (a drill that restarts the server on a new port).
func StartPutsTo(base func() string, token, prefix string, clients int) *Puts {
	p := &Puts{base: base, token: token, prefix: prefix, stop: make(chan struct{}),
		hc: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}}
	for c := range clients {
		p.wg.Go(func() { p.writer(c) })
	}
	return p
}

func (p *Puts) writer(c int) {
	for i := 0; ; i++ {
		select {
		case <-p.stop:
			return
		default:
		}
		slug := fmt.Sprintf("%s-%d-%d", p.prefix, c, i)
		o := p.put(slug, i)
		p.mu.Lock()
		p.out = append(p.out, o)
		p.mu.Unlock()
		if !o.Acknowledged() {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func (p *Puts) put(slug string, i int) PutOutcome {
	o := PutOutcome{Key: "asura:" + slug, Sent: time.Now()}
	body := fmt.Sprintf(`{"site":"asura","series_url":"https://asurascans.com/comics/%s","chapter":"Chapter %d"}`, slug, i+1)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, p.base()+"/api/bookmarks/"+o.Key, strings.NewReader(body))
	if err != nil {
		o.Err, o.At = err, time.Now()
		return o
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.hc.Do(req)
	o.At = time.Now()
	if err != nil {
		o.Err = err
		return o
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	o.Status, o.Body, o.RetryAfter = resp.StatusCode, string(b), resp.Header.Get("Retry-After")
	return o
}

// Outcomes is every write answered so far, in the order the answers came.
func (p *Puts) Outcomes() []PutOutcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]PutOutcome(nil), p.out...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// AcknowledgedSince counts the writes acknowledged after t.
func (p *Puts) AcknowledgedSince(t time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, o := range p.out {
		if o.Acknowledged() && o.At.After(t) {
			n++
		}
	}
	return n
}

// FirstAcknowledgedSentAfter is when the first write sent after t was
// acknowledged, or the zero time: a write in flight at t does not count.
func (p *Puts) FirstAcknowledgedSentAfter(t time.Time) time.Time {
	for _, o := range p.Outcomes() {
		if o.Acknowledged() && o.Sent.After(t) {
			return o.At
		}
	}
	return time.Time{}
}

// Stop ends the load and returns every outcome.
func (p *Puts) Stop() []PutOutcome {
	close(p.stop)
	p.wg.Wait()
	return p.Outcomes()
}

// PutTally sums a Puts load.
type PutTally struct {
	Sent, Acknowledged, NoAnswer int
	// ByStatus counts every answer of 500 and above by its status.
	ByStatus map[int]int
	// WithoutRetryAfter counts the 503s that lacked a Retry-After.
	WithoutRetryAfter int
	// Keys are the acknowledged writes' Bookmarks.
	Keys []string
}

// Tally sums outcomes.
func Tally(outcomes []PutOutcome) PutTally {
	t := PutTally{ByStatus: map[int]int{}}
	for _, o := range outcomes {
		t.Sent++
		switch {
		case o.Err != nil:
			t.NoAnswer++
		case o.Acknowledged():
			t.Acknowledged++
			t.Keys = append(t.Keys, o.Key)
		case o.Status >= 500:
			t.ByStatus[o.Status]++
			if o.Status == http.StatusServiceUnavailable && o.RetryAfter == "" {
				t.WithoutRetryAfter++
			}
		}
	}
	return t
}

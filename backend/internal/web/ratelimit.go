package web

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// Login attempt limits. A password check is an Argon2id hash, so these also
// bound the CPU an attacker can make the server burn.
//
// The state is in memory, per replica: a failed attempt costs no database
// write, and a restart or a second replica at most multiplies a budget that
// is already far too small for online guessing. The key is the client
// address (an IPv6 /64 counts as one client, since one host usually holds a
// whole /64) together with the name tried, plus a looser budget per address
// alone so one client cannot walk through many names.
const (
	loginWindow   = 15 * time.Minute
	loginPerName  = 5  // failures per address and name per window
	loginPerAddr  = 20 // failures per address per window
	limiterMaxKey = 100_000
)

type limiter struct {
	mu   sync.Mutex
	now  func() time.Time
	hits map[string]*window
}

type window struct {
	start    time.Time
	failures int
}

func newLimiter(now func() time.Time) *limiter {
	return &limiter{now: now, hits: map[string]*window{}}
}

func pairKey(addr, name string) string { return "n\x00" + addr + "\x00" + strings.ToLower(name) }
func addrKey(addr string) string       { return "a\x00" + addr }

// blocked reports whether addr may try name now, and if not, how long until
// it may.
func (l *limiter) blocked(addr, name string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var wait time.Duration
	for _, k := range []struct {
		key   string
		limit int
	}{{pairKey(addr, name), loginPerName}, {addrKey(addr), loginPerAddr}} {
		w, ok := l.hits[k.key]
		if !ok {
			continue
		}
		if now.Sub(w.start) >= loginWindow {
			delete(l.hits, k.key)
			continue
		}
		if w.failures >= k.limit {
			if d := w.start.Add(loginWindow).Sub(now); d > wait {
				wait = d
			}
		}
	}
	return wait, wait > 0
}

// fail records a failed attempt.
func (l *limiter) fail(addr, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.hits) >= limiterMaxKey {
		l.sweep(now)
	}
	for _, k := range []string{pairKey(addr, name), addrKey(addr)} {
		w, ok := l.hits[k]
		if !ok || now.Sub(w.start) >= loginWindow {
			w = &window{start: now}
			l.hits[k] = w
		}
		w.failures++
	}
}

// succeed forgets the failures of addr on name: the Reader got in.
func (l *limiter) succeed(addr, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.hits, pairKey(addr, name))
}

// sweep drops finished windows; if a flood of distinct addresses still fills
// the table, it drops arbitrary entries rather than grow without bound.
func (l *limiter) sweep(now time.Time) {
	for k, w := range l.hits {
		if now.Sub(w.start) >= loginWindow {
			delete(l.hits, k)
		}
	}
	for k := range l.hits {
		if len(l.hits) < limiterMaxKey/2 {
			break
		}
		delete(l.hits, k)
	}
}

// clientAddr is the limiter's key for the request's client: its address
// as u.proxies sees it (the peer unless the peer is a trusted proxy;
// package clientaddr), with an IPv6 address widened to its /64.
func (u *UI) clientAddr(r *http.Request) string {
	a := u.proxies.Of(r)
	if !a.IsValid() {
		return r.RemoteAddr
	}
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

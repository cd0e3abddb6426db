package browser

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// Most tests share one launched Chromium: reads are serialised anyway, and a
// launch per test would spend the time budget on startup. Each test uses Site
// hostnames of its own, so cookies (kept across reads by design) never leak
// between tests.
var (
	sharedOnce sync.Once
	shared     *env
)

func sharedEnv(t testing.TB) *env {
	t.Helper()
	sharedOnce.Do(func() {
		e := &env{net: newTestNet(), pace: &pacer{}, log: &syncBuffer{}}
		path := testenv.ChromiumPath(t)
		e.b = New(Options{
			Path:             path,
			Dial:             e.net.Dial,
			Pace:             e.pace.Pace,
			Logger:           slogTo(e.log),
			RereadInterval:   250 * time.Millisecond,
			IgnoreCertErrors: true,
		})
		shared = e
	})
	if shared == nil {
		t.Fatal("shared browser was not set up (see the first test's failure)")
	}
	return shared
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		_ = shared.b.Close()
	}
	os.Exit(code)
}

// deadline bounds a read; generous, only so a broken read cannot hang the run.
func deadline(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestReadClearsChallenge(t *testing.T) {
	e := sharedEnv(t)

	t.Run("document HTML (novelfull-style)", func(t *testing.T) {
		s := newSite(t, e.net, "html")
		payload, err := e.b.Read(deadline(t, 20*time.Second), s.url("/challenge"), []string{s.host}, htmlRead, realArrived)
		require.NoError(t, err)
		require.Contains(t, payload, realMarker)
		require.NotContains(t, payload, challengeMarker)
		// The interstitial was served first, then the real page after the
		// cookie written by its script: the tab was held open across re-reads.
		var pages int
		for _, r := range s.requests() {
			if r == "/challenge" {
				pages++
			}
		}
		require.GreaterOrEqual(t, pages, 2, "requests: %v", s.requests())
		// Navigation and every re-read passed the pacing gate for this host.
		require.GreaterOrEqual(t, e.pace.count(s.host), 2)
	})

	t.Run("in-page API fetch (kagane-style)", func(t *testing.T) {
		s := newSite(t, e.net, "api")
		arrived := func(p string) bool { return strings.Contains(p, `"series_books"`) }
		payload, err := e.b.Read(deadline(t, 20*time.Second), s.url("/challenge"), []string{s.host}, apiRead("/api/series"), arrived)
		require.NoError(t, err)
		require.JSONEq(t, `{"title":"Real Series","series_books":[{"chapter_no":"12"}]}`, payload)
	})

	t.Run("cleared stays cleared for the next read", func(t *testing.T) {
		s := newSite(t, e.net, "again")
		_, err := e.b.Read(deadline(t, 20*time.Second), s.url("/challenge"), []string{s.host}, htmlRead, realArrived)
		require.NoError(t, err)
		before := len(s.requests())
		payload, err := e.b.Read(deadline(t, 20*time.Second), s.url("/challenge"), []string{s.host}, htmlRead, realArrived)
		require.NoError(t, err)
		require.Contains(t, payload, realMarker)
		// One page request: the clearance cookie was still in the browser context.
		require.Equal(t, []string{"/challenge"}, s.requests()[before:])
	})
}

func TestReadChallengeNeverClears(t *testing.T) {
	e := sharedEnv(t)
	s := newSite(t, e.net, "stuck")
	// Long enough that a loaded machine reads the page before it ends.
	ctx := deadline(t, 8*time.Second)
	_, err := e.b.Read(ctx, s.url("/stuck"), []string{s.host}, htmlRead, realArrived)
	require.ErrorIs(t, err, ErrChallenge)
	require.NotErrorIs(t, err, ErrLostBrowser)
	require.Contains(t, err.Error(), "challenge did not clear")
	// It gave up because the deadline passed, having read the page.
	require.Error(t, ctx.Err())
	require.True(t, s.served("/stuck"))
	require.GreaterOrEqual(t, e.pace.count(s.host), 2, "re-reads are paced")
}

func TestReadLostBrowserRecovers(t *testing.T) {
	e := newEnv(t, Options{})
	s := newSite(t, e.net, "lost")

	_, err := e.b.Read(deadline(t, 20*time.Second), s.url("/plain"), []string{s.host}, htmlRead, realArrived)
	require.NoError(t, err)
	first := e.b.launchedPID()
	require.NotZero(t, first)

	errc := make(chan error, 1)
	go func() {
		_, err := e.b.Read(deadline(t, 30*time.Second), s.url("/stuck"), []string{s.host}, htmlRead, realArrived)
		errc <- err
	}()
	// Mid-read: the interstitial was served and re-read at least once.
	require.Eventually(t, func() bool { return s.served("/stuck") && e.pace.count(s.host) >= 3 },
		15*time.Second, 20*time.Millisecond)
	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))

	select {
	case err := <-errc:
		require.ErrorIs(t, err, ErrLostBrowser)
		require.NotErrorIs(t, err, ErrChallenge)
	case <-time.After(20 * time.Second):
		t.Fatal("the read did not notice the browser died")
	}

	payload, err := e.b.Read(deadline(t, 30*time.Second), s.url("/plain"), []string{s.host}, htmlRead, realArrived)
	require.NoError(t, err, "the next read relaunches the browser")
	require.Contains(t, payload, realMarker)
	second := e.b.launchedPID()
	require.NotZero(t, second)
	require.NotEqual(t, first, second)
}

// privateServer is the "other side": an address a page may name but the
// browser must never reach. It logs every request that arrives.
type privateServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

func newPrivateServer(t *testing.T) *privateServer {
	p := &privateServer{}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.got = append(p.got, r.URL.RequestURI())
		p.mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(testPNG(t, 2, 2))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *privateServer) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

func (p *privateServer) addr() string { return p.srv.Listener.Addr().String() }

// checkPrivateRefused reads a page embedding an image from the private server
// and proves that the browser asked for it, the proxy refused it, and the
// server never saw it.
func checkPrivateRefused(t *testing.T, e *env) {
	t.Helper()
	s := newSite(t, e.net, "embed")
	priv := newPrivateServer(t)
	img := "https://" + priv.addr() + "/pixel.png"
	settled := func(title string) bool { return title == "img-loaded" || title == "img-error" }
	title, err := e.b.Read(deadline(t, 20*time.Second), s.url("/embed?img="+url.QueryEscape(img)), []string{s.host}, titleRead, settled)
	require.NoError(t, err)
	require.Equal(t, "img-error", title, "the page must get nothing from a private address")
	require.Empty(t, priv.requests(), "the private server must never see the request")
	// The request was made, and stopped at the proxy's dial.
	require.Contains(t, e.net.refusedAddrs(), priv.addr())
	require.Contains(t, e.log.String(), "tunnel refused")
	require.Contains(t, e.log.String(), priv.addr())
}

func TestProxyRefusesPrivateSubresource(t *testing.T) {
	checkPrivateRefused(t, sharedEnv(t))
}

func TestReadHostPin(t *testing.T) {
	e := sharedEnv(t)

	t.Run("server redirect off the Site", func(t *testing.T) {
		s := newSite(t, e.net, "site")
		// evil is reachable through the gate: only the host pin stops the tab.
		evil := newSite(t, e.net, "evil")
		to := evil.url("/plain")
		_, err := e.b.Read(deadline(t, 10*time.Second), s.url("/redirect?to="+url.QueryEscape(to)), []string{s.host}, htmlRead, realArrived)
		require.ErrorIs(t, err, ErrHostPin)
		require.Contains(t, err.Error(), evil.host)
		require.True(t, s.served("/redirect"))
		require.Empty(t, evil.requests(), "the off-Site navigation is failed inside the browser: no request reaches the other host")
	})

	t.Run("script navigation off the Site", func(t *testing.T) {
		s := newSite(t, e.net, "site")
		evil := newSite(t, e.net, "evil")
		to := evil.url("/plain")
		_, err := e.b.Read(deadline(t, 10*time.Second), s.url("/jsnav?to="+url.QueryEscape(to)), []string{s.host}, htmlRead, realArrived)
		require.ErrorIs(t, err, ErrHostPin)
		require.True(t, s.served("/jsnav"))
		// Chrome may preconnect a tunnel to the target of a script navigation,
		// but the request itself is failed before it is sent.
		require.Empty(t, evil.requests())
	})

	t.Run("page URL off the Site is refused before the browser", func(t *testing.T) {
		s := newSite(t, e.net, "site")
		other := newSite(t, e.net, "other")
		_, err := e.b.Read(deadline(t, 10*time.Second), other.url("/plain"), []string{s.host}, htmlRead, realArrived)
		require.ErrorIs(t, err, ErrHostPin)
		require.Empty(t, other.requests())
	})

	t.Run("plain http is refused", func(t *testing.T) {
		s := newSite(t, e.net, "site")
		_, err := e.b.Read(deadline(t, 10*time.Second), strings.Replace(s.url("/plain"), "https:", "http:", 1), []string{s.host}, htmlRead, realArrived)
		require.ErrorIs(t, err, ErrHostPin)
		require.Empty(t, s.requests())
	})
}

func TestFetchImage(t *testing.T) {
	e := sharedEnv(t)

	t.Run("same-origin image behind the challenge", func(t *testing.T) {
		s := newSite(t, e.net, "cover")
		data, ctype, err := e.b.FetchImage(deadline(t, 20*time.Second), s.url("/challenge"), s.url("/cover.png"), []string{s.host}, 1<<20)
		require.NoError(t, err)
		require.Equal(t, s.png, data)
		require.Equal(t, "image/png", ctype)
		require.True(t, s.served("/cover.png"))
	})

	t.Run("cap", func(t *testing.T) {
		s := newSite(t, e.net, "capped")
		_, _, err := e.b.FetchImage(deadline(t, 20*time.Second), s.url("/challenge"), s.url("/cover.png"), []string{s.host}, int64(len(s.png)-1))
		require.ErrorIs(t, err, ErrTooLarge)
		// Exactly at the cap is fine (the clearance cookie is kept from above).
		data, _, err := e.b.FetchImage(deadline(t, 20*time.Second), s.url("/challenge"), s.url("/cover.png"), []string{s.host}, int64(len(s.png)))
		require.NoError(t, err)
		require.Len(t, data, len(s.png))
	})

	t.Run("missing image fails at once", func(t *testing.T) {
		s := newSite(t, e.net, "missing")
		ctx := deadline(t, 20*time.Second)
		_, _, err := e.b.FetchImage(ctx, s.url("/plain"), s.url("/missing.png"), []string{s.host}, 1<<20)
		require.Error(t, err)
		require.Contains(t, err.Error(), "status 404")
		require.NotErrorIs(t, err, ErrChallenge)
		require.NoError(t, ctx.Err(), "a 404 is not re-read until the deadline")
	})

	t.Run("image off the Site", func(t *testing.T) {
		s := newSite(t, e.net, "site")
		other := newSite(t, e.net, "other")
		_, _, err := e.b.FetchImage(deadline(t, 10*time.Second), s.url("/plain"), other.url("/cover.png"), []string{s.host}, 1<<20)
		require.ErrorIs(t, err, ErrHostPin)
		require.Empty(t, other.requests())
		require.Empty(t, s.requests(), "refused before the browser was used")
	})

	t.Run("bad cap", func(t *testing.T) {
		s := newSite(t, e.net, "site")
		_, _, err := e.b.FetchImage(deadline(t, 10*time.Second), s.url("/plain"), s.url("/cover.png"), []string{s.host}, 0)
		require.ErrorContains(t, err, "cap must be positive")
	})
}

func TestNoBrowserConfigured(t *testing.T) {
	t.Parallel()
	b := New(Options{})
	require.False(t, b.Enabled())
	_, err := b.Read(context.Background(), "https://novelfull.com/x.html", []string{"novelfull.com"}, htmlRead, realArrived)
	require.ErrorIs(t, err, ErrNoBrowser)
	_, _, err = b.FetchImage(context.Background(), "https://kagane.to/series/1", "https://kagane.to/image/1", []string{"kagane.to"}, 1<<20)
	require.ErrorIs(t, err, ErrNoBrowser)
	require.NoError(t, b.Close())
}

func TestReadNeedsReadAndArrived(t *testing.T) {
	t.Parallel()
	b := New(Options{Path: "/nonexistent/chromium"})
	_, err := b.Read(context.Background(), "https://novelfull.com/x.html", []string{"novelfull.com"}, nil, realArrived)
	require.Error(t, err)
	_, err = b.Read(context.Background(), "https://novelfull.com/x.html", []string{"novelfull.com"}, htmlRead, nil)
	require.Error(t, err)
}

func TestLaunchFailureIsReported(t *testing.T) {
	t.Parallel()
	b := New(Options{Path: "/nonexistent/chromium", Logger: slogTo(&syncBuffer{})})
	t.Cleanup(func() { _ = b.Close() })
	_, err := b.Read(deadline(t, 10*time.Second), "https://novelfull.com/x.html", []string{"novelfull.com"}, htmlRead, realArrived)
	require.ErrorIs(t, err, ErrLostBrowser)
	require.Contains(t, err.Error(), "/nonexistent/chromium")
}

// A DevTools URL (the Compose sidecar): a Chromium started without any proxy
// flag, as a sidecar is. Pages still reach the fake Site hostnames only through
// lectern's proxy (the browser context carries it), a private subresource
// still gets nothing, and a sidecar that dies mid-read is reported as lost and
// reconnected to on the next read once it is back.
func TestRemoteSidecar(t *testing.T) {
	path := testenv.ChromiumPath(t)
	port := freePort(t)
	stop := startSidecar(t, path, port)
	e := newEnv(t, Options{URL: "http://" + net.JoinHostPort("127.0.0.1", port)})

	s := newSite(t, e.net, "remote")
	payload, err := e.b.Read(deadline(t, 20*time.Second), s.url("/challenge"), []string{s.host}, htmlRead, realArrived)
	require.NoError(t, err)
	require.Contains(t, payload, realMarker)
	require.Zero(t, e.b.launchedPID(), "nothing was launched")

	checkPrivateRefused(t, e)

	errc := make(chan error, 1)
	go func() {
		_, err := e.b.Read(deadline(t, 30*time.Second), s.url("/stuck"), []string{s.host}, htmlRead, realArrived)
		errc <- err
	}()
	require.Eventually(t, func() bool { return s.served("/stuck") && e.pace.count(s.host) >= 4 },
		15*time.Second, 20*time.Millisecond)
	stop()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, ErrLostBrowser)
	case <-time.After(20 * time.Second):
		t.Fatal("the read did not notice the sidecar died")
	}

	startSidecar(t, path, port)
	payload, err = e.b.Read(deadline(t, 20*time.Second), s.url("/plain"), []string{s.host}, htmlRead, realArrived)
	require.NoError(t, err, "the next read reconnects to the sidecar")
	require.Contains(t, payload, realMarker)
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, ln.Close())
	return port
}

// startSidecar runs Chromium the way a Compose sidecar does (a DevTools port,
// no proxy flag) and waits until its DevTools endpoint answers. The returned
// func kills it (also done at cleanup).
func startSidecar(t *testing.T, path, port string) (stop func()) {
	t.Helper()
	dir := t.TempDir()
	cmd := execCommand(context.Background(), path,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--ignore-certificate-errors",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port="+port,
		"--user-data-dir="+dir, "about:blank")
	require.NoError(t, cmd.Start())
	var once sync.Once
	stop = func() {
		once.Do(func() {
			// The sidecar's children share its process group; end exactly that group.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + net.JoinHostPort("127.0.0.1", port) + "/json/version")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond, "the sidecar never opened its DevTools port")
	return stop
}

// Reads are serialised: two concurrent reads of self-clearing challenges (each
// re-read several times over 1.5 s) never interleave their paced re-reads.
func TestReadsAreSerialised(t *testing.T) {
	e := sharedEnv(t)
	a, b := newSite(t, e.net, "a"), newSite(t, e.net, "b")

	var wg sync.WaitGroup
	for _, s := range []*site{a, b} {
		wg.Go(func() {
			_, err := e.b.Read(deadline(t, 30*time.Second), s.url("/challenge"), []string{s.host}, htmlRead, realArrived)
			require.NoError(t, err)
		})
	}
	wg.Wait()

	order := e.pace.sequence(a.host, b.host)
	require.GreaterOrEqual(t, len(order), 4)
	switches := 0
	for i := 1; i < len(order); i++ {
		if order[i] != order[i-1] {
			switches++
		}
	}
	require.Equal(t, 1, switches, "one read ran to its end before the other began: %v", order)
}

func TestPinnedURL(t *testing.T) {
	t.Parallel()
	hosts := []string{"novelfull.com", "novelfull.net"}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"https://novelfull.com/a.html", true},
		{"https://NOVELFULL.net./a.html", true},
		{"https://novelfull.com:8443/a.html", true},
		{"http://novelfull.com/a.html", false},
		{"https://evil.com/novelfull.com", false},
		{"https://novelfull.com.evil.com/", false},
		{"https://user:pw@evil.com/", false},
		{"javascript:alert(1)", false},
		{"file:///etc/passwd", false},
		{"::", false},
		{"", false},
	} {
		_, err := pinned(tc.in, hosts)
		if tc.ok {
			require.NoError(t, err, tc.in)
		} else {
			require.ErrorIs(t, err, ErrHostPin, tc.in)
			require.NotContains(t, err.Error(), "pw@", "credentials are redacted")
		}
	}
	require.True(t, errors.Is(func() error { _, err := pinned("https://x.test/", nil); return err }(), ErrHostPin))
}

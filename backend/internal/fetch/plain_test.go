package fetch

import (
	"compress/gzip"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/testcert"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// siteServer is a loopback HTTPS server that answers for real Site
// hostnames: its certificate names them (signed by a throwaway CA), and the
// fetcher's dial seam sends every connection to it, recording where each
// was meant to go.
type siteServer struct {
	srv   *httptest.Server
	fetch *PlainFetcher

	mu     sync.Mutex
	dialed []string
	hits   []string
}

func newSiteServer(t *testing.T, h http.HandlerFunc, opts PlainOptions) *siteServer {
	t.Helper()
	s := &siteServer{}
	tlsCfg, pool := testcert.New(t, "asurascans.com", "www.asurascans.com", "asuracomic.net", "evil.example", "novelfull.com")
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, r.Host+r.URL.RequestURI())
		s.mu.Unlock()
		h(w, r)
	}))
	s.srv.TLS = tlsCfg
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	opts.RootCAs = pool
	opts.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		s.mu.Lock()
		s.dialed = append(s.dialed, addr)
		s.mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, s.srv.Listener.Addr().String())
	}
	s.fetch = NewPlainFetcher(opts)
	return s
}

func (s *siteServer) record() (dialed, hits []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.dialed...), append([]string(nil), s.hits...)
}

func asuraSite(t *testing.T) *latest.Site {
	s, ok := latest.Default().Lookup("asura")
	require.True(t, ok)
	return s
}

func TestPlainFetchReadsAPinnedPage(t *testing.T) {
	t.Parallel()
	body := readFixture(t, "asura", "series.html")
	var ua, accept atomic.Value
	s := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) {
		ua.Store(r.Header.Get("User-Agent"))
		accept.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(body)
		_ = zw.Close()
	}, PlainOptions{UserAgent: "LecternTest/1"})
	page, err := s.fetch.Fetch(context.Background(), asuraSite(t), orv, Conditional{})
	require.NoError(t, err)
	require.Equal(t, body, page.Body, "gzip is asked for and inflated")
	require.Equal(t, `"v1"`, page.ETag)
	require.Equal(t, orv, page.URL)
	require.Equal(t, "LecternTest/1", ua.Load())
	require.Contains(t, accept.Load(), "gzip")
	pu, err := url.Parse(page.URL)
	require.NoError(t, err)
	newest, err := asuraSite(t).Latest(page.Body, pu)
	require.NoError(t, err)
	require.NotEmpty(t, newest.Label)
}

func TestPlainFetchRefusesForeignHostsBeforeConnecting(t *testing.T) {
	t.Parallel()
	s := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("page")) }, PlainOptions{})
	for _, raw := range []string{
		"https://evil.example/comics/x-1a2b3c4d",
		"https://asurascans.com.evil.example/comics/x",
		"http://asurascans.com/comics/x",
		"https://asurascans.com:8443/comics/x",
		"https://user:pw@asurascans.com/comics/x",
		"ftp://asurascans.com/x",
	} {
		_, err := s.fetch.Fetch(context.Background(), asuraSite(t), raw, Conditional{})
		require.ErrorIs(t, err, ErrForeignHost, raw)
	}
	dialed, hits := s.record()
	require.Empty(t, dialed, "no connection for a refused URL")
	require.Empty(t, hits)
}

func TestPlainFetchRefusesARedirectOutOfTheSite(t *testing.T) {
	t.Parallel()
	s := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/comics/hop-1a2b3c4d":
			// Within the Site: another of its hosts.
			http.Redirect(w, r, "https://asuracomic.net/comics/away-1a2b3c4d", http.StatusFound)
		case "/comics/away-1a2b3c4d":
			http.Redirect(w, r, "https://evil.example/steal", http.StatusFound)
		case "/comics/plain-1a2b3c4d":
			http.Redirect(w, r, "http://asurascans.com/comics/x", http.StatusMovedPermanently)
		default:
			_, _ = w.Write([]byte("reached " + r.Host))
		}
	}, PlainOptions{})
	_, err := s.fetch.Fetch(context.Background(), asuraSite(t), "https://asurascans.com/comics/hop-1a2b3c4d", Conditional{})
	require.ErrorIs(t, err, ErrForeignHost)
	_, err = s.fetch.Fetch(context.Background(), asuraSite(t), "https://asurascans.com/comics/plain-1a2b3c4d", Conditional{})
	require.ErrorIs(t, err, ErrForeignHost)
	dialed, hits := s.record()
	for _, h := range hits {
		require.False(t, strings.HasPrefix(h, "evil.example"), "the foreign host got a request: %v", hits)
	}
	for _, d := range dialed {
		require.False(t, strings.HasPrefix(d, "evil.example"), "a connection was opened to the foreign host: %v", dialed)
	}
	require.Contains(t, hits, "asuracomic.net/comics/away-1a2b3c4d", "a redirect within the Site's hosts is followed")
}

func TestPlainFetchCapHoldsOnAnEndlessBody(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	chunk := []byte(strings.Repeat("<p>endless</p>", 1024))
	s := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}, PlainOptions{MaxBytes: 256 << 10})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.fetch.Fetch(ctx, asuraSite(t), orv, Conditional{})
	require.ErrorIs(t, err, ErrTooLarge)
	require.NoError(t, ctx.Err(), "the fetch ended at the cap, not at the deadline")

	// A declared length over the cap is refused without reading the body.
	big := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "999999999")
		_, _ = w.Write([]byte("x"))
	}, PlainOptions{MaxBytes: 1024})
	_, err = big.fetch.Fetch(context.Background(), asuraSite(t), orv, Conditional{})
	require.ErrorIs(t, err, ErrTooLarge)
}

func TestPlainFetchConditionalAndNotModified(t *testing.T) {
	t.Parallel()
	var inm, ims atomic.Value
	inm.Store("")
	ims.Store("")
	s := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) {
		inm.Store(r.Header.Get("If-None-Match"))
		ims.Store(r.Header.Get("If-Modified-Since"))
		if r.Header.Get("If-None-Match") == `"v7"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		// A server that answers 304 to nobody's question: not a 304 we asked for.
		if r.URL.Path == "/comics/odd-1a2b3c4d" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v7"`)
		w.Header().Set("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT")
		_, _ = w.Write([]byte("<html>fresh</html>"))
	}, PlainOptions{})
	site := asuraSite(t)
	page, err := s.fetch.Fetch(context.Background(), site, orv, Conditional{})
	require.NoError(t, err)
	require.False(t, page.NotModified)
	require.Equal(t, "", inm.Load(), "no validators on a first fetch")

	page, err = s.fetch.Fetch(context.Background(), site, orv, Conditional{ETag: page.ETag, LastModified: page.LastModified})
	require.NoError(t, err)
	require.True(t, page.NotModified)
	require.Empty(t, page.Body)
	require.Equal(t, `"v7"`, inm.Load())
	require.Equal(t, "Sat, 28 Nov 2026 10:00:00 GMT", ims.Load())

	_, err = s.fetch.Fetch(context.Background(), site, "https://asurascans.com/comics/odd-1a2b3c4d", Conditional{})
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusNotModified, se.Status)
}

func TestPlainFetchStatusesAndRetryAfter(t *testing.T) {
	t.Parallel()
	s := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/comics/busy-1a2b3c4d":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/comics/gone-1a2b3c4d":
			http.NotFound(w, r)
		default:
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write(readFixture(t, "asura", "challenge.html"))
		}
	}, PlainOptions{})
	site := asuraSite(t)
	var se *StatusError
	_, err := s.fetch.Fetch(context.Background(), site, "https://asurascans.com/comics/busy-1a2b3c4d", Conditional{})
	require.ErrorAs(t, err, &se)
	require.True(t, se.Refused())
	require.Equal(t, 2*time.Minute, se.RetryAfter)

	_, err = s.fetch.Fetch(context.Background(), site, "https://asurascans.com/comics/gone-1a2b3c4d", Conditional{})
	require.ErrorAs(t, err, &se)
	require.False(t, se.Refused())

	_, err = s.fetch.Fetch(context.Background(), site, orv, Conditional{})
	require.ErrorAs(t, err, &se)
	require.True(t, se.Refused())
	require.Equal(t, latest.ProblemChallenge, latest.Diagnose(se.Body, "", "").Code, "the refusal keeps enough of the body to name it")
}

func TestPlainFetchPacesEveryRequestRedirectsIncluded(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paced []string
	s := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "asurascans.com" {
			http.Redirect(w, r, "https://www.asurascans.com"+r.URL.Path, http.StatusFound)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}, PlainOptions{Pace: func(ctx context.Context, host string) error {
		mu.Lock()
		paced = append(paced, host)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		return nil
	}})
	page, err := s.fetch.Fetch(context.Background(), asuraSite(t), orv, Conditional{})
	require.NoError(t, err)
	require.Equal(t, []string{"asurascans.com", "www.asurascans.com"}, paced)
	require.GreaterOrEqual(t, page.Waited, 40*time.Millisecond, "both waits are counted as the gate's, not the Site's")

	// A gate that refuses stops the request before it leaves.
	refusing := newSiteServer(t, func(w http.ResponseWriter, r *http.Request) {}, PlainOptions{Pace: func(ctx context.Context, host string) error {
		return errors.New("gate closed")
	}})
	_, err = refusing.fetch.Fetch(context.Background(), asuraSite(t), orv, Conditional{})
	require.ErrorContains(t, err, "gate closed")
	dialed, _ := refusing.record()
	require.Empty(t, dialed)
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	require.Equal(t, 30*time.Second, retryAfter("30", now))
	require.Equal(t, time.Duration(0), retryAfter("-5", now))
	require.Equal(t, time.Duration(0), retryAfter("soon", now))
	require.Equal(t, 90*time.Second, retryAfter("Sun, 29 Nov 2026 12:01:30 GMT", now))
	require.Equal(t, time.Duration(0), retryAfter("Sun, 29 Nov 2026 11:00:00 GMT", now), "a date in the past asks for nothing")
	require.Equal(t, 7*24*time.Hour, retryAfter("99999999999", now), "absurd values are bounded")
}

func TestBackoffPause(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.Minute, BackoffPause(1, 0))
	require.Equal(t, 2*time.Minute, BackoffPause(2, 0))
	require.Equal(t, 32*time.Minute, BackoffPause(6, 0))
	require.Equal(t, 6*time.Hour, BackoffPause(30, 0))
	require.Equal(t, 6*time.Hour, BackoffPause(1000, 0))
	require.Equal(t, 10*time.Minute, BackoffPause(1, 10*time.Minute), "Retry-After longer than the pause wins")
	require.Equal(t, 4*time.Minute, BackoffPause(3, 30*time.Second))
	require.Equal(t, 24*time.Hour, BackoffPause(1, 72*time.Hour), "a Retry-After is honoured up to a day")
}

// orv is asura's series page the fixtures hold.
const orv = fixturesites.AsuraSeries

// readFixture reads testdata/sites/<site>/<file>.
func readFixture(t *testing.T, site, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "sites", site, file))
	require.NoError(t, err)
	return b
}

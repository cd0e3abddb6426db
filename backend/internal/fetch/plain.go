package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/fetch/browser"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// Defaults of the plain fetcher's zero PlainOptions.
const (
	DefaultFetchMaxBytes  = 5 << 20
	DefaultFetchTimeout   = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultHeaderTimeout  = 15 * time.Second
	maxRedirects          = 5
	// statusBodyScan is how much of a refusal's body is kept to name it
	// (a challenge interstitial or a block page is small).
	statusBodyScan = 64 << 10
)

// Errors of the fetchers, for errors.Is.
var (
	// ErrForeignHost: the URL, or a redirect, leaves the Site's hostnames,
	// or is not https on the default port.
	ErrForeignHost = errors.New("not https on one of the Site's hosts")
	// ErrTooLarge: the body is larger than the cap.
	ErrTooLarge = errors.New("page larger than the cap")
	// ErrNoBrowser: the Site needs a browser and none is configured; the
	// Poll records it and skips the Series without backing the Site off.
	// It is the browser fetcher's own error, so one errors.Is covers both.
	ErrNoBrowser = browser.ErrNoBrowser
)

// StatusError is a Site answering with a status other than 200 (or 304 to a
// conditional request).
type StatusError struct {
	Status int
	URL    string
	// RetryAfter is the Retry-After the Site sent, 0 when none.
	RetryAfter time.Duration
	// Body is the start of the answer, enough to tell a challenge from a
	// block page.
	Body []byte
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s answered %d %s", e.URL, e.Status, http.StatusText(e.Status))
}

// Refused reports a status by which a Site refuses this deployment (401,
// 403, 429): the Site backs off.
func (e *StatusError) Refused() bool {
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
		return true
	}
	return false
}

// Conditional carries the validators of the last response that answered,
// for a conditional request.
type Conditional struct {
	ETag, LastModified string
}

// Page is a fetched Site page.
type Page struct {
	// URL is where the body came from, after redirects.
	URL  string
	Body []byte
	// NotModified is a 304 to a conditional request: the page is unchanged
	// and Body is empty.
	NotModified        bool
	ETag, LastModified string
	// Via is "plain" or "browser".
	Via string
	// Waited is how long the fetch waited at the pacing gate, redirects
	// included: a poll's recorded duration (poll_ms, "in … ms" on the
	// Series page) is how long the Site took to answer, not how long the
	// queue in front of it was.
	Waited time.Duration
}

// DialFunc opens a connection for the plain fetcher.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// PlainOptions configure the plain fetcher. The zero value is usable.
type PlainOptions struct {
	// MaxBytes caps a body (FETCH_MAX_BYTES); 0 means DefaultFetchMaxBytes.
	MaxBytes int64
	// UserAgent is sent with every request.
	UserAgent string
	// Timeout bounds a whole fetch, body included; ConnectTimeout the TCP
	// and TLS set-up; HeaderTimeout the wait for the response's headers.
	Timeout, ConnectTimeout, HeaderTimeout time.Duration
	// Dial opens connections: in production the destination gate's guarded
	// dial (a Site's DNS cannot point us at the Owner's network either); in
	// tests a function reaching loopback fixture servers. Nil: a net.Dialer.
	Dial DialFunc
	// RootCAs replaces the system trust store (tests with testcert).
	RootCAs *x509.CertPool
	// Pace is the pacing gate, called with the host before every request,
	// redirects included. Nil: no pacing.
	Pace func(ctx context.Context, host string) error
}

// PlainFetcher fetches Site pages over plain TLS, pinned to the Site's
// hostnames. It is safe for concurrent use.
type PlainFetcher struct {
	opts      PlainOptions
	transport *http.Transport
}

// NewPlainFetcher builds a PlainFetcher.
func NewPlainFetcher(opts PlainOptions) *PlainFetcher {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultFetchMaxBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultFetchTimeout
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = DefaultHeaderTimeout
	}
	dial := opts.Dial
	if dial == nil {
		d := &net.Dialer{KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	connect := opts.ConnectTimeout
	transport := &http.Transport{
		// Never a proxy: the host pin and the dial guard judge the real peer.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, connect)
			defer cancel()
			return dial(ctx, network, addr)
		},
		TLSClientConfig:        &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    connect,
		ResponseHeaderTimeout:  opts.HeaderTimeout,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           32,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        90 * time.Second,
		// Compression stays on: the transport asks for gzip and inflates it,
		// and the cap applies to the inflated bytes.
	}
	return &PlainFetcher{opts: opts, transport: transport}
}

// MaxBytes is the body cap in force.
func (f *PlainFetcher) MaxBytes() int64 { return f.opts.MaxBytes }

// pace waits at the pacing gate for host and returns how long it waited.
func (f *PlainFetcher) pace(ctx context.Context, host string) (time.Duration, error) {
	if f.opts.Pace == nil {
		return 0, nil
	}
	start := time.Now()
	if err := f.opts.Pace(ctx, host); err != nil {
		return time.Since(start), fmt.Errorf("pace %s: %w", host, err)
	}
	return time.Since(start), nil
}

// client is the HTTP client of one fetch of a page of site: every redirect
// hop is pinned to the Site's hosts and paced like the first request, and
// the pacing waits add up in *waited.
func (f *PlainFetcher) client(site *latest.Site, waited *time.Duration) *http.Client {
	return &http.Client{
		Transport: f.transport,
		// The caller's deadline (set in Fetch) bounds the whole fetch.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if _, err := pinURL(site, req.URL.String()); err != nil {
				return fmt.Errorf("redirect from %s: %w", via[len(via)-1].URL.Redacted(), err)
			}
			w, err := f.pace(req.Context(), req.URL.Hostname())
			*waited += w
			return err
		},
	}
}

// waitMeter adds up the pacing waits of one browser read: the browser calls
// its Pace option (MeteredPace) with the read's context, which carries the
// meter Sites.read reads back into Page.Waited.
type waitMeter struct{}

func withWaitMeter(ctx context.Context) (context.Context, func() time.Duration) {
	w := new(atomic.Int64)
	return context.WithValue(ctx, waitMeter{}, w), func() time.Duration { return time.Duration(w.Load()) }
}

// MeteredPace wraps the pacing gate given to the browser fetcher so that
// the time a read waits at it is counted in the read's Page.Waited.
func MeteredPace(pace func(ctx context.Context, host string) error) func(ctx context.Context, host string) error {
	return func(ctx context.Context, host string) error {
		start := time.Now()
		err := pace(ctx, host)
		if w, ok := ctx.Value(waitMeter{}).(*atomic.Int64); ok {
			w.Add(int64(time.Since(start)))
		}
		return err
	}
}

// pinURL checks that raw is https, on the default port, on one of the Site's
// hosts, without credentials.
func pinURL(site *latest.Site, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Opaque != "" {
		return nil, fmt.Errorf("%w: %q", ErrForeignHost, redactURL(raw))
	}
	if p := u.Port(); p != "" && p != "443" {
		return nil, fmt.Errorf("%w: port %s in %s", ErrForeignHost, p, u.Redacted())
	}
	if !site.HasHost(strings.TrimSuffix(u.Hostname(), ".")) {
		return nil, fmt.Errorf("%w: %s is not one of %s's hosts (%s)", ErrForeignHost, u.Hostname(), site.Name, strings.Join(site.Hosts, ", "))
	}
	return u, nil
}

func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	if len(raw) > 200 {
		raw = raw[:200]
	}
	return raw
}

// Fetch fetches a page of site. cond makes the request conditional; a 304
// answers Page.NotModified. Any status other than 200 and 304 is a
// *StatusError; a body over the cap is ErrTooLarge; a URL or redirect off the
// Site's hosts is ErrForeignHost, refused before any connection.
func (f *PlainFetcher) Fetch(ctx context.Context, site *latest.Site, rawURL string, cond Conditional) (Page, error) {
	return f.do(ctx, site, http.MethodGet, rawURL, nil, cond)
}

// PostForm posts form to a page of site, pinned and paced as Fetch is: a
// theme's chapter list (madara's ajax endpoints) answers only a POST. A
// redirect is followed with GET, as browsers do.
func (f *PlainFetcher) PostForm(ctx context.Context, site *latest.Site, rawURL string, form url.Values) (Page, error) {
	if form == nil {
		form = url.Values{}
	}
	return f.do(ctx, site, http.MethodPost, rawURL, form, Conditional{})
}

func (f *PlainFetcher) do(ctx context.Context, site *latest.Site, method, rawURL string, form url.Values, cond Conditional) (Page, error) {
	u, err := pinURL(site, rawURL)
	if err != nil {
		return Page{}, fmt.Errorf("fetch %s page: %w", site.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	waited, err := f.pace(ctx, u.Hostname())
	if err != nil {
		return Page{}, err
	}
	var reqBody io.Reader
	if form != nil {
		reqBody = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reqBody)
	if err != nil {
		return Page{}, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	h := req.Header
	if form != nil {
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		// What the theme's own script sends; some installs answer the
		// ajax endpoints only to it.
		h.Set("X-Requested-With", "XMLHttpRequest")
	}
	h.Set("Accept", "text/html,application/xhtml+xml,application/json;q=0.9,*/*;q=0.8")
	h.Set("Accept-Language", "en")
	if f.opts.UserAgent != "" {
		h.Set("User-Agent", f.opts.UserAgent)
	}
	if cond.ETag != "" {
		h.Set("If-None-Match", cond.ETag)
	}
	if cond.LastModified != "" {
		h.Set("If-Modified-Since", cond.LastModified)
	}
	resp, err := f.client(site, &waited).Do(req)
	if err != nil {
		return Page{}, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	final := resp.Request.URL.String()
	page := Page{URL: final, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified"), Via: "plain", Waited: waited}
	switch {
	case resp.StatusCode == http.StatusNotModified && (cond.ETag != "" || cond.LastModified != ""):
		page.NotModified = true
		return page, nil
	case resp.StatusCode != http.StatusOK:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, statusBodyScan))
		return Page{}, &StatusError{Status: resp.StatusCode, URL: resp.Request.URL.Redacted(),
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()), Body: body}
	}
	if resp.ContentLength > f.opts.MaxBytes {
		return Page{}, fmt.Errorf("fetch %s: %w: declared %d bytes, cap %d", resp.Request.URL.Redacted(), ErrTooLarge, resp.ContentLength, f.opts.MaxBytes)
	}
	// Read one byte past the cap, never more: an endless body costs the
	// cap and no more.
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return Page{}, fmt.Errorf("fetch %s: read body: %w", resp.Request.URL.Redacted(), err)
	}
	if int64(len(body)) > f.opts.MaxBytes {
		return Page{}, fmt.Errorf("fetch %s: %w of %d bytes", resp.Request.URL.Redacted(), ErrTooLarge, f.opts.MaxBytes)
	}
	page.Body = body
	return page, nil
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(7*24*3600))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Package fakenet is the fake public network that tests and `make demo` run
// Lectern on: one loopback HTTPS server that stands in for every Site, image
// host and push target a test names. It gives
//
//   - a table of answers a test sets, per URL (Set, Handle) or per host
//     (HandleHost);
//   - a resolver (LookupNetIP) that gives every name with an answer a public
//     stand-in address (StandIn), so the destination gate judges it as it
//     would in production, and names a test chose (Resolve) the addresses it
//     chose (a private one, for a refusal);
//   - a dialer (DialContext) that connects the stand-in addresses to the
//     server and refuses every other address;
//   - a throwaway CA (RootCAs, CertPEM) whose leaves are issued for whatever
//     name a client asks for, all on one key (SPKIHash, for Chromium);
//   - a record of what reached it (Requests, Hits, Dials).
//
// Nothing unset gets through: a name without an answer does not resolve, an
// address other than the stand-in is not dialled, and a URL without an
// answer on a known host is a 404 saying so. Nothing here touches the live
// network, and `lectern serve` has no seam to reach it.
package fakenet

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/testcert"
)

// The stand-in addresses: public, so the destination gate judges them as it
// would a real Site's; DialContext connects them to the server. No
// connection ever goes to them.
var (
	StandIn  = netip.MustParseAddr("93.184.216.34")
	StandIn6 = netip.MustParseAddr("2606:2800:220:1:248:1893:25c8:1946")
)

// maxRecordedBody bounds the request body kept in the record; the handler
// still reads the whole body.
const maxRecordedBody = 1 << 20

// Options configure a Net. The zero value listens on a free loopback port
// and speaks HTTP/2 and HTTP/1.1.
type Options struct {
	// Addr is the listen address; default 127.0.0.1:0.
	Addr string
	// HTTP1Only serves HTTP/1.1 alone, for tests of a client's HTTP/1.1
	// path (hijacked connections, Connection: close).
	HTTP1Only bool
	// Logger receives the server's errors at debug level; default discards.
	Logger *slog.Logger
}

// Net is a running fake network.
type Net struct {
	ln     net.Listener
	srv    *http.Server
	certs  *testcert.OnDemand
	pool   *x509.CertPool
	caPEM  []byte
	closed sync.Once
	served sync.WaitGroup

	mu       sync.Mutex
	exact    map[string]http.Handler // key(host, path, query)
	hosts    map[string]http.Handler // host
	names    map[string][]netip.Addr // Resolve
	requests []*Request
	dials    []string
}

// Request is one request that reached the server.
type Request struct {
	Method   string
	Host     string // without port, lower case
	Path     string // decoded
	RawQuery string
	Header   http.Header
	// Body is the first MiB of the request body.
	Body []byte
	// Status is what the answer wrote; 0 until it writes.
	Status int
}

// URL is the request as an https URL.
func (r Request) URL() string {
	u := url.URL{Scheme: "https", Host: r.Host, Path: r.Path, RawQuery: r.RawQuery}
	return u.String()
}

// Start starts a fake network with an empty table.
func Start(o Options) (*Net, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ca, err := testcert.NewAuthority()
	if err != nil {
		return nil, err
	}
	certs, err := ca.OnDemand(StandIn.String(), StandIn6.String())
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("fakenet: listen on %s: %w", o.Addr, err)
	}
	n := &Net{
		ln: ln, certs: certs, pool: ca.Pool(), caPEM: ca.CertPEM(),
		exact: map[string]http.Handler{}, hosts: map[string]http.Handler{}, names: map[string][]netip.Addr{},
	}
	n.srv = &http.Server{
		Handler:           n,
		TLSConfig:         &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		// Aborted handshakes and cut streams are the point of some tests.
		ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	if o.HTTP1Only {
		n.srv.Protocols = new(http.Protocols)
		n.srv.Protocols.SetHTTP1(true)
	}
	n.served.Add(1)
	go func() {
		defer n.served.Done()
		_ = n.srv.ServeTLS(ln, "", "")
	}()
	return n, nil
}

// New starts a fake network for one test and closes it when the test ends.
func New(tb testing.TB, o ...Options) *Net {
	tb.Helper()
	var opts Options
	if len(o) > 0 {
		opts = o[0]
	}
	n, err := Start(opts)
	if err != nil {
		tb.Fatalf("fakenet: %v", err)
	}
	tb.Cleanup(func() { _ = n.Close() })
	return n
}

// Close stops the server; requests still being answered get five seconds.
func (n *Net) Close() error {
	var err error
	n.closed.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err = n.srv.Shutdown(ctx); err != nil {
			err = errors.Join(err, n.srv.Close())
		}
		n.served.Wait()
	})
	return err
}

// Set answers GET (and every other method) of rawURL with status, a
// Content-Type and body. A URL without a query answers whatever the query;
// one with a query answers that query only. Setting a URL again replaces
// its answer.
func (n *Net) Set(rawURL string, status int, contentType string, body []byte) {
	body = slices.Clone(body)
	n.Handle(rawURL, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
}

// Handle answers rawURL with h, as Set does.
func (n *Net) Handle(rawURL string, h http.Handler) {
	u := mustURL(rawURL)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.exact[key(u.Hostname(), u.Path, u.RawQuery)] = h
}

// HandleFunc is Handle with a function.
func (n *Net) HandleFunc(rawURL string, h func(http.ResponseWriter, *http.Request)) {
	n.Handle(rawURL, http.HandlerFunc(h))
}

// HandleHost answers every URL of host without an answer of its own with h.
func (n *Net) HandleHost(host string, h http.Handler) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hosts[normHost(host)] = h
}

// Resolve makes host resolve to addrs, whatever its answers: a private
// address to test a refusal, another address between two connections to
// test DNS rebinding. Without addrs the name no longer resolves to anything
// it was given here.
func (n *Net) Resolve(host string, addrs ...netip.Addr) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(addrs) == 0 {
		delete(n.names, normHost(host))
		return
	}
	n.names[normHost(host)] = slices.Clone(addrs)
}

// LookupNetIP resolves a name a test chose with Resolve to its addresses, a
// name with answers to StandIn, and every other name to "no such host": a
// gate.Resolver.
func (n *Net) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	h := normHost(host)
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.names[h]; ok {
		return slices.Clone(a), nil
	}
	if n.answersLocked(h) {
		return []netip.Addr{StandIn}, nil
	}
	return nil, notFound(host)
}

// DialContext records every address it is asked for, connects the
// stand-in addresses' port 443 to the server and refuses everything else:
// a gate.DialFunc.
func (n *Net) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	n.dials = append(n.dials, addr)
	n.mu.Unlock()
	return dialStandIn(ctx, addr, n.Addr())
}

// RootCAs trusts the server's certificates.
func (n *Net) RootCAs() *x509.CertPool { return n.pool }

// CertPEM is the throwaway CA's certificate, for clients configured by file.
func (n *Net) CertPEM() []byte { return slices.Clone(n.caPEM) }

// SPKIHash is the base64 SHA-256 of the key of every leaf, for Chromium's
// --ignore-certificate-errors-spki-list.
func (n *Net) SPKIHash() string { return n.certs.SPKIHash() }

// Addr is the loopback host:port the server listens on.
func (n *Net) Addr() string { return n.ln.Addr().String() }

// Names are the names that resolve to a stand-in address now, sorted.
func (n *Net) Names() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	seen := map[string]bool{}
	for k := range n.exact {
		seen[hostOfKey(k)] = true
	}
	for h := range n.hosts {
		seen[h] = true
	}
	for h, addrs := range n.names {
		seen[h] = slices.ContainsFunc(addrs, isStandIn)
	}
	var out []string
	for h, ok := range seen {
		if ok && net.ParseIP(h) == nil {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

// HostResolverRules maps every name of Names to the server and every other
// name to "not found", so a browser using them reaches the fake network and
// nothing else; loopback addresses (where Lectern runs) are left alone.
func (n *Net) HostResolverRules() string {
	names := n.Names()
	rules := make([]string, 0, len(names)+4)
	for _, h := range names {
		rules = append(rules, "MAP "+h+" "+n.Addr())
	}
	rules = append(rules, "MAP * ~NOTFOUND", "EXCLUDE localhost", "EXCLUDE 127.0.0.1", "EXCLUDE [::1]")
	return strings.Join(rules, ", ")
}

// ChromiumFlags are the two flags a Chromium needs to browse the fake
// network, by name without dashes: the resolver rules and the leaves' key
// hash. --ignore-certificate-errors-spki-list takes effect only with a
// --user-data-dir.
func (n *Net) ChromiumFlags() map[string]string {
	return map[string]string{
		"host-resolver-rules":                 n.HostResolverRules(),
		"ignore-certificate-errors-spki-list": n.SPKIHash(),
	}
}

// Requests are every request that reached the server, oldest first.
func (n *Net) Requests() []Request {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Request, len(n.requests))
	for i, r := range n.requests {
		out[i] = *r
	}
	return out
}

// Hits counts the requests for rawURL: its host and path, and its query
// when it has one.
func (n *Net) Hits(rawURL string) int {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0
	}
	host, path := normHost(u.Hostname()), u.Path
	if path == "" {
		path = "/"
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, r := range n.requests {
		if r.Host == host && r.Path == path && (u.RawQuery == "" || r.RawQuery == u.RawQuery) {
			c++
		}
	}
	return c
}

// Dials are every address DialContext was asked for, oldest first.
func (n *Net) Dials() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.dials)
}

// ServeHTTP records the request and answers it from the table.
func (n *Net) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := normHost((&url.URL{Host: r.Host}).Hostname())
	path := r.URL.Path
	if path == "" {
		path = "/"
	}
	rec := &Request{Method: r.Method, Host: host, Path: path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone()}
	if r.Body != nil {
		head, err := io.ReadAll(io.LimitReader(r.Body, maxRecordedBody))
		if err == nil {
			rec.Body = head
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	}
	n.mu.Lock()
	n.requests = append(n.requests, rec)
	h := n.exact[key(host, path, r.URL.RawQuery)]
	if h == nil {
		h = n.exact[key(host, path, "")]
	}
	if h == nil {
		h = n.hosts[host]
	}
	n.mu.Unlock()
	sw := &statusWriter{ResponseWriter: w, wrote: func(code int) {
		n.mu.Lock()
		defer n.mu.Unlock()
		if rec.Status == 0 {
			rec.Status = code
		}
	}}
	// An answer that writes nothing is a 200.
	defer sw.wrote(http.StatusOK)
	if h == nil {
		http.Error(sw, "fakenet: no answer set for "+rec.URL(), http.StatusNotFound)
		return
	}
	h.ServeHTTP(sw, r)
}

func (n *Net) answersLocked(host string) bool {
	if _, ok := n.hosts[host]; ok {
		return true
	}
	for k := range n.exact {
		if hostOfKey(k) == host {
			return true
		}
	}
	return false
}

// statusWriter records the status an answer writes as it writes it, so the
// record has it before the client sees the answer. Flush is its own method
// because answers assert http.Flusher; Unwrap gives http.ResponseController
// the rest (Hijack, deadlines).
type statusWriter struct {
	http.ResponseWriter
	wrote func(code int)
}

func (w *statusWriter) WriteHeader(code int) {
	w.wrote(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type readCloser struct {
	io.Reader
	io.Closer
}

// Client reaches a fake network from another process (a replica the test
// kills): the resolver, dialer and trust pool of the Net that made its
// environment, with the names it had then.
type Client struct {
	addr  string
	names map[string]bool
	pool  *x509.CertPool
}

// The environment variables Env sets and FromEnv reads.
const (
	envAddr  = "LECTERN_FAKENET_ADDR"
	envNames = "LECTERN_FAKENET_NAMES"
	envCA    = "LECTERN_FAKENET_CA"
)

// Env is what a child process needs, as environment variables, for
// FromEnv to reach this network: its address, the names of Names and the
// CA certificate.
func (n *Net) Env() []string {
	return []string{
		envAddr + "=" + n.Addr(),
		envNames + "=" + strings.Join(n.Names(), ","),
		envCA + "=" + base64.StdEncoding.EncodeToString(n.caPEM),
	}
}

// FromEnv is the Client for the environment Env made; getenv is
// os.Getenv in the child.
func FromEnv(getenv func(string) string) (*Client, error) {
	addr := getenv(envAddr)
	if addr == "" {
		return nil, fmt.Errorf("fakenet: %s is not set", envAddr)
	}
	pem, err := base64.StdEncoding.DecodeString(getenv(envCA))
	if err != nil {
		return nil, fmt.Errorf("fakenet: %s: %w", envCA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("fakenet: no CA certificate in %s", envCA)
	}
	c := &Client{addr: addr, names: map[string]bool{}, pool: pool}
	for _, h := range strings.Split(getenv(envNames), ",") {
		if h != "" {
			c.names[normHost(h)] = true
		}
	}
	return c, nil
}

// LookupNetIP resolves the network's names to StandIn and every other name
// to "no such host".
func (c *Client) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if !c.names[normHost(host)] {
		return nil, notFound(host)
	}
	return []netip.Addr{StandIn}, nil
}

// DialContext connects the stand-in addresses' port 443 to the network and
// refuses everything else.
func (c *Client) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	return dialStandIn(ctx, addr, c.addr)
}

// RootCAs trusts the network's certificates.
func (c *Client) RootCAs() *x509.CertPool { return c.pool }

func dialStandIn(ctx context.Context, addr, server string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !isStandIn(ap.Addr()) || ap.Port() != 443 {
		return nil, fmt.Errorf("fakenet: no route to %s: only the fake network's stand-in addresses are reachable", addr)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	return d.DialContext(ctx, "tcp", server)
}

func isStandIn(a netip.Addr) bool {
	a = a.Unmap()
	return a == StandIn || a == StandIn6
}

func notFound(host string) error {
	return &net.DNSError{Err: "no such host (no answer set on the fake network)", Name: host, IsNotFound: true}
}

// key names an answer: host, decoded path, and the raw query when there is
// one.
func key(host, path, query string) string {
	if path == "" {
		path = "/"
	}
	k := normHost(host) + path
	if query != "" {
		k += "?" + query
	}
	return k
}

func hostOfKey(k string) string {
	h, _, _ := strings.Cut(k, "/")
	return h
}

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func mustURL(rawURL string) *url.URL {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		panic(fmt.Sprintf("fakenet: %q is not an https URL", rawURL))
	}
	return u
}

// Package gate is the destination gate for every fetch of an address found in a
// third-party page: Cover images, archived page images, and later
// notification webhooks. Such an address is attacker-controlled, so the gate
// makes sure the server can only be pointed at the public internet:
//
//   - https only, no userinfo, at most five redirects, each hop re-checked;
//   - the IP actually dialled must be public. The verdict is the ssrf
//     Guardian's (built from the IANA special-purpose registries) and is
//     applied at dial time to every connection, after resolution and before
//     any connect, so DNS rebinding cannot slip between check and connect; a
//     name with any non-public address is refused outright;
//   - bodies are capped while streaming and the whole fetch has a deadline;
//   - FetchImage accepts only JPEG, PNG, WebP, GIF and AVIF, as declared by
//     the response and confirmed by the first bytes.
//
// Series page fetches are not made here: those are pinned to each Site's own
// hostnames instead (see the Site registry).
package gate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// Defaults for the zero Options.
const (
	DefaultMaxBytes = 2 << 20
	DefaultTimeout  = 30 * time.Second
	MaxRedirects    = 5
)

// Per-phase limits; each is also bounded by the whole-fetch Timeout.
const (
	connectTimeout        = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 15 * time.Second
	maxHeaderBytes        = 64 << 10
)

// Resolver turns a host name into addresses. *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc opens a connection. The gate calls it only with an IP:port it has
// already checked, never with a name.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Options configure a Client. The zero value is the production gate.
type Options struct {
	// MaxBytes caps every response body; 0 means DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds a whole fetch, body included; 0 means DefaultTimeout.
	Timeout time.Duration
	// UserAgent is sent on every request that does not set its own.
	UserAgent string
	// Resolver defaults to net.DefaultResolver.
	Resolver Resolver
	// Dial defaults to a net.Dialer whose Control hook is the ssrf Guardian,
	// a second check on the socket's own peer address.
	Dial DialFunc
	// RootCAs, when set, replaces the system trust store (tests with a
	// throwaway CA).
	RootCAs *x509.CertPool
	// AllowAddrs are exact addresses the gate may reach although they are not
	// public, for a demo deployment or a test fixture. Production leaves it
	// empty.
	AllowAddrs []netip.AddrPort
}

// Client is a destination-gated HTTP client, safe for concurrent use.
type Client struct {
	maxBytes  int64
	timeout   time.Duration
	userAgent string
	resolver  Resolver
	dial      DialFunc
	guard     *ssrf.Guardian
	allow     map[netip.AddrPort]bool
	http      *http.Client
}

// New builds a Client from opts.
func New(opts Options) *Client {
	c := &Client{
		maxBytes:  opts.MaxBytes,
		timeout:   opts.Timeout,
		userAgent: opts.UserAgent,
		resolver:  opts.Resolver,
		dial:      opts.Dial,
		// https only, so 443 only: a hostile page must not make this server
		// knock on other services of public hosts either.
		guard: ssrf.New(ssrf.WithPorts(443)),
		allow: make(map[netip.AddrPort]bool, len(opts.AllowAddrs)),
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxBytes
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.resolver == nil {
		c.resolver = net.DefaultResolver
	}
	for _, ap := range opts.AllowAddrs {
		c.allow[unmap(ap)] = true
	}
	if c.dial == nil {
		d := &net.Dialer{
			Timeout:   connectTimeout,
			KeepAlive: 30 * time.Second,
			Control:   c.control,
		}
		c.dial = d.DialContext
	}
	transport := &http.Transport{
		// No proxy, ever: through a proxy the guard would see the proxy's
		// address instead of the real peer.
		Proxy:                  nil,
		DialContext:            c.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    min(tlsHandshakeTimeout, c.timeout),
		ResponseHeaderTimeout:  min(responseHeaderTimeout, c.timeout),
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxHeaderBytes,
		IdleConnTimeout:        30 * time.Second,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    2,
		ForceAttemptHTTP2:      true,
	}
	c.http = &http.Client{
		Transport:     transport,
		Timeout:       c.timeout,
		CheckRedirect: c.checkRedirect,
	}
	return c
}

// MaxBytes is the body cap in force.
func (c *Client) MaxBytes() int64 { return c.maxBytes }

// DialContext is the guarded dial: it resolves addr's host (or reads its IP
// literal), refuses outright when any address is not public, and only then
// dials the checked IP:port. It is exposed for callers that make their own
// connections through the gate, such as the headless browser's forward proxy.
func (c *Client) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, refuse(ClassMalformed, addr, fmt.Errorf("network %q", network))
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, refuse(ClassMalformed, addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, refuse(ClassMalformed, addr, fmt.Errorf("port %q", portStr))
	}
	ctx, cancel := context.WithTimeout(ctx, min(connectTimeout, c.timeout))
	defer cancel()
	addrs, err := c.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	targets := make([]netip.AddrPort, 0, len(addrs))
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, uint16(port))
		// Every address is checked before any is dialled: a name that
		// resolves to one public and one private address is refused whole,
		// without a connection to either.
		if err := c.check(ap); err != nil {
			return nil, fmt.Errorf("dial %s: %w", host, err)
		}
		targets = append(targets, ap)
	}
	var errs []error
	for _, ap := range targets {
		fam := "tcp4"
		if ap.Addr().Is6() {
			fam = "tcp6"
		}
		conn, err := c.dial(ctx, fam, ap.String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("dial %s: %w", host, errors.Join(errs...))
}

// resolve returns the addresses of host, an IP literal in any form a browser
// would accept or a name to look up. Literal forms other than canonical
// dotted-decimal IPv4 and IPv6 are refused: a special address is refused
// with its own class, a public one as malformed (no CDN writes 0x5db8d822).
func (c *Client) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if host == "" {
		return nil, refuse(ClassMalformed, host, errors.New("empty host"))
	}
	a, numeric, canonical, ok := parseHostIP(host)
	if !ok {
		return nil, refuse(ClassMalformed, host, errors.New("invalid numeric host"))
	}
	if numeric {
		a = a.Unmap()
		if !canonical {
			if err := c.guard.SafeAddr(a); err != nil {
				return nil, refuse(labelOf(a), host, err)
			}
			return nil, refuse(ClassMalformed, host, fmt.Errorf("non-canonical form of %s", a))
		}
		return []netip.Addr{a}, nil
	}
	addrs, err := c.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve %s: no addresses", host)
	}
	for i, a := range addrs {
		// The standard resolver never answers the zero Addr or an
		// unspecified address, but a Resolver is injectable and the gate
		// judges only what it can read: such an answer names no
		// destination, so it is malformed, refused before any dial.
		if !a.IsValid() || a.Unmap().IsUnspecified() {
			return nil, refuse(ClassMalformed, host, fmt.Errorf("resolver answered %q, which names no destination", a))
		}
		addrs[i] = a.Unmap()
	}
	return addrs, nil
}

// check is the verdict on one IP:port: AllowAddrs first, then the ssrf
// Guardian on the address (an IPv4-mapped IPv6 address is judged as the IPv4
// address it carries, which is where the kernel would send it), then the port.
func (c *Client) check(ap netip.AddrPort) error {
	ap = unmap(ap)
	if c.allow[ap] {
		return nil
	}
	if err := c.guard.SafeAddr(ap.Addr()); err != nil {
		return refuse(labelOf(ap.Addr()), ap.String(), err)
	}
	if err := c.guard.SafeAddrPort(ap); err != nil {
		return refuse(ClassPort, ap.String(), err)
	}
	return nil
}

// control is the default dialer's socket hook: the same Guardian judging the
// peer address of the socket about to connect, a second line behind check.
func (c *Client) control(network, address string, rc syscall.RawConn) error {
	ap, perr := netip.ParseAddrPort(address)
	if perr == nil && c.allow[unmap(ap)] {
		return nil
	}
	err := c.guard.Safe(network, address, rc)
	switch {
	case err == nil:
		return nil
	case perr == nil && c.guard.SafeAddr(ap.Addr()) != nil:
		// Name the address's range even when the Guardian stopped at the port.
		return refuse(labelOf(ap.Addr()), address, err)
	case errors.Is(err, ssrf.ErrProhibitedPort):
		return refuse(ClassPort, address, err)
	}
	return refuse(ClassMalformed, address, err)
}

// preflight refuses a URL that can be judged without the network: its
// scheme, userinfo, and a literal host.
func (c *Client) preflight(u *url.URL) error {
	target := u.Redacted()
	if u.Scheme != "https" {
		return refuse(ClassScheme, target, fmt.Errorf("scheme %q", u.Scheme))
	}
	if u.User != nil {
		return refuse(ClassUserinfo, target, nil)
	}
	if u.Opaque != "" || u.Host == "" {
		return refuse(ClassMalformed, target, errors.New("no host"))
	}
	host := u.Hostname()
	if _, numeric, _, _ := parseHostIP(host); numeric || host == "" {
		port := uint16(443)
		if p := u.Port(); p != "" {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return refuse(ClassMalformed, target, fmt.Errorf("port %q", p))
			}
			port = uint16(n)
		}
		addrs, err := c.resolve(context.Background(), host)
		if err != nil {
			return err
		}
		return c.check(netip.AddrPortFrom(addrs[0], port))
	}
	return nil
}

func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return refuse(ClassRedirects, req.URL.Redacted(), fmt.Errorf("more than %d redirects", MaxRedirects))
	}
	return c.preflight(req.URL)
}

func labelOf(a netip.Addr) string {
	if l := classOf(a); l != "" {
		return l
	}
	return ClassReserved
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

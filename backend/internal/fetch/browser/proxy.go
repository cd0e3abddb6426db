package browser

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"
)

// proxy is the only way the browser reaches the network. A page can make
// Chrome load any subresource (an <img src="http://10.0.0.1/">, a fetch, a
// WebSocket), so every connection Chrome opens is a CONNECT tunnel or a plain
// HTTP request to this proxy, which dials with the guarded dialer: a page that
// names a private address gets a refused tunnel and nothing else.
//
// It is not an open proxy. It binds to loopback unless told otherwise (a remote
// sidecar needs an address it can reach), and every request must carry
// per-process Basic credentials that lectern answers from inside its own tabs
// (Fetch.authRequired). Credentials were chosen over "accept only the launched
// process" because they work the same for a local Chromium and for a sidecar
// across a Compose network, where peer process identity cannot be checked; a
// request from anything else gets 407 and no dial.
type proxy struct {
	ln       net.Listener
	srv      *http.Server
	user     string
	pass     string
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	log      *slog.Logger
	forward  *httputil.ReverseProxy
	dialWait time.Duration

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

const proxyRealm = "lectern-browser"

// startProxy listens on listen (host:port) and serves until close.
func startProxy(listen string, dial func(ctx context.Context, network, addr string) (net.Conn, error), dialWait time.Duration, log *slog.Logger) (*proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("browser proxy listen %s: %w", listen, err)
	}
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		ln.Close()
		return nil, fmt.Errorf("browser proxy secret: %w", err)
	}
	p := &proxy{
		ln:       ln,
		user:     "lectern",
		pass:     hex.EncodeToString(secret),
		dial:     dial,
		log:      log,
		dialWait: dialWait,
		tunnels:  map[net.Conn]struct{}{},
	}
	p.forward = &httputil.ReverseProxy{
		// The request is already in absolute form (GET http://host/path); the
		// outgoing copy keeps that URL. ReverseProxy drops hop-by-hop headers,
		// Proxy-Authorization among them, so the secret never leaves lectern.
		Rewrite: func(*httputil.ProxyRequest) {},
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           p.guardedDial,
			ResponseHeaderTimeout: 30 * time.Second,
			MaxIdleConns:          8,
			IdleConnTimeout:       30 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.log.Info("browser proxy: request refused", "dest", r.URL.Host, "err", err)
			http.Error(w, "destination refused", http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error("browser proxy stopped", "err", err)
		}
	}()
	return p, nil
}

// addr is the listener's address, host:port.
func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) guardedDial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.dialWait)
	defer cancel()
	return p.dial(ctx, network, addr)
}

func (p *proxy) authorized(r *http.Request) bool {
	h := r.Header.Get("Proxy-Authorization")
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return false
	}
	want := p.user + ":" + p.pass
	return subtle.ConstantTimeCompare(raw, []byte(want)) == 1
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(r) {
		w.Header().Set("Proxy-Authenticate", `Basic realm="`+proxyRealm+`"`)
		http.Error(w, "proxy authentication required", http.StatusProxyAuthRequired)
		return
	}
	switch {
	case r.Method == http.MethodConnect:
		p.tunnel(w, r)
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		p.forward.ServeHTTP(w, r)
	default:
		http.Error(w, "not a proxy request", http.StatusBadRequest)
	}
}

// tunnel answers CONNECT host:port: dial through the guard, then splice.
func (p *proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	dest := r.Host
	if _, port, err := net.SplitHostPort(dest); err != nil || port == "" {
		http.Error(w, "CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	up, err := p.guardedDial(r.Context(), "tcp", dest)
	if err != nil {
		p.log.Info("browser proxy: tunnel refused", "dest", dest, "err", err)
		http.Error(w, "destination refused", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "cannot tunnel over this connection", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(down, up) {
		down.Close()
		up.Close()
		return
	}
	p.log.Debug("browser proxy: tunnel", "dest", dest)
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		p.untrack(down, up)
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		splice(down, buf.Reader, up)
		p.untrack(down, up)
	}()
}

// splice copies both ways until either side ends, then closes both.
func splice(down net.Conn, downBuf *bufio.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		// Bytes the client sent right after CONNECT may sit in the server's buffer.
		_, _ = io.Copy(up, downBuf)
		closeWrite(up)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(down, up)
		closeWrite(down)
		done <- struct{}{}
	}()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.tunnels, c)
	}
}

// close stops the listener and every open tunnel.
func (p *proxy) close() error {
	err := p.srv.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if t, ok := p.forward.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	return err
}

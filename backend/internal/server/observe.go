package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/metrics"
	"github.com/lectern-reader/lectern/backend/internal/observe"
)

// observe sets up what an Owner watches a replica by: the logger every line
// of the replica goes through (context attributes, secrets masked) and the
// Prometheus collectors. New calls it before building anything that logs.
func (s *Server) observe(d *Deps) {
	d.Logger = slog.New(observe.LogHandler(d.Logger.Handler()))
	s.log = d.Logger
	if d.Metrics == nil {
		d.Metrics = metrics.New(metrics.Options{
			DB:        d.Store.Pool,
			Sites:     d.Registry.Names(),
			HostLabel: siteHostLabel(d.Registry),
			// Passed in, not imported by metrics: the fetch tree stays
			// below everything that reports to the metrics.
			RefusalClass: gate.Class,
			Version:      d.Version,
			Logger:       d.Logger.With("component", "metrics"),
		})
	}
	s.metrics = d.Metrics
}

// Metrics are the replica's collectors, for the job wiring (River
// middleware, pacing, the browser's dialer) and for tests.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// siteHostLabel names a Site's own hosts in the pacing series; every other
// host (Cover and page CDNs, named by third-party pages) is "other".
func siteHostLabel(reg *latest.Registry) func(host string) string {
	return func(host string) string {
		for _, site := range reg.Sites() {
			if site.HasHost(host) {
				return strings.TrimPrefix(strings.ToLower(host), "www.")
			}
		}
		return ""
	}
}

// observeHTTP is the outermost middleware after chi's RequestID: it puts the
// request ID on the response and into the context every handler logs with,
// counts and times the request by route pattern, and writes one line per
// request. The line names the path without its query and nothing of the
// headers or body: tokens and passwords travel there.
func (s *Server) observeHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := requestID(r.Context())
		ctx := context.WithValue(r.Context(), middleware.RequestIDKey, id)
		ctx = observe.WithLogAttrs(ctx, slog.String("request_id", id))
		w.Header().Set(middleware.RequestIDHeader, id)
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)

		defer func() {
			// A handler's panic is answered by Recoverer below; if it still
			// reaches here, the line and the count must say 500.
			p := recover()
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			if p != nil && p != http.ErrAbortHandler {
				status = http.StatusInternalServerError
			}
			route := routePattern(r)
			d := time.Since(start)
			s.metrics.ObserveRequest(route, r.Method, status, d)
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelError
			case status < 400 && quietRoutes[route]:
				level = slog.LevelDebug
			case status == http.StatusNotModified:
				// A panel refresh that changed nothing: the most frequent
				// request, and the least eventful.
				level = slog.LevelDebug
			}
			if !s.log.Enabled(ctx, level) {
				// Not written: not built either (a 304 costs little
				// else).
				if p != nil {
					panic(p)
				}
				return
			}
			attrs := []slog.Attr{
				slog.String("method", r.Method),
				slog.String("route", route),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Int("bytes", ww.BytesWritten()),
				slog.Int64("duration_ms", d.Milliseconds()),
				slog.String("remote", r.RemoteAddr),
			}
			if c := s.proxies.Of(r); c.IsValid() && len(s.proxies) > 0 {
				attrs = append(attrs, slog.String("client", c.String()))
			}
			s.log.LogAttrs(ctx, level, "request", append(attrs, s.seriesAttrs(r)...)...)
			if p != nil {
				panic(p)
			}
		}()
		next.ServeHTTP(ww, r.WithContext(ctx))
	})
}

// quietRoutes answer often and uneventfully: probes every few seconds, a
// Cover per Bookmark each time a panel opens, the UI's static files. Their
// successes are logged at debug so they do not drown the rest.
var quietRoutes = map[string]bool{
	"/healthz": true, "/readyz": true, "/covers/{address}": true, "/static/{name}": true,
}

// seriesAttrs names the Series (and its Site) or the Site a request was
// about, from the route's {key} or {site}, so that a request line can be
// found with the Series' other lines.
func (s *Server) seriesAttrs(r *http.Request) []slog.Attr {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return nil
	}
	if raw := rc.URLParam("key"); raw != "" {
		key, err := url.PathUnescape(raw)
		if site, _, ok := latest.SplitKey(key); err == nil && ok && len(key) <= 300 {
			return []slog.Attr{slog.String("series", key), slog.String("site", site)}
		}
		return nil
	}
	if site := rc.URLParam("site"); site != "" {
		if _, ok := s.registry.Lookup(site); ok {
			return []slog.Attr{slog.String("site", site)}
		}
	}
	return nil
}

// routePattern is chi's pattern for the route that served r
// ("/api/bookmarks/{key}"), read after routing: a label of bounded
// cardinality, unlike the path.
func routePattern(r *http.Request) string {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return metrics.LabelUnmatched
	}
	// Nothing matched below a mount gives the mount ("/api/*"): 404 floods
	// stay visible per surface without minting series.
	return rc.RoutePattern()
}

// requestID is the ID chi's RequestID gave the request, unless a client
// sent one that is too long or carries characters that do not belong in a
// log line, in which case a fresh one replaces it.
func requestID(ctx context.Context) string {
	id := middleware.GetReqID(ctx)
	if validRequestID(id) {
		return id
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_.:/+=", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// serveMetrics serves /metrics on METRICS_ADDR, a listener of its own so it
// is never exposed with the public routes. The returned stop ends it, after
// everything else has stopped so that the drain itself can be watched. With
// METRICS_ADDR empty it does nothing.
func (s *Server) serveMetrics(ctx context.Context) (stop func(), err error) {
	if s.cfg.MetricsAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", s.cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", s.cfg.MetricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler())
	// Profiles on the same private listener: an Owner chasing CPU or memory
	// needs them on the running process, and METRICS_ADDR is never public.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      2 * time.Minute, // a CPU profile takes its seconds
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics server failed", "err", err)
		}
	}()
	s.log.InfoContext(ctx, "serving metrics", "addr", ln.Addr().String())
	return func() {
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutCtx)
	}, nil
}

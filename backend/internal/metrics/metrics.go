package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Querier runs the scrape-time queries; *pgxpool.Pool satisfies it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Options configure Metrics.
type Options struct {
	// DB is read at scrape time for the queue, Site back-off, pacing and
	// Latest Chapter series. Nil leaves them out.
	DB Querier
	// Sites are the registry's Site names: the only values the site label
	// takes, so a hostile job argument cannot mint series.
	Sites []string
	// HostLabel maps a host to the value of the host label: the host itself
	// for a Site's own hosts, "other" for the rest (Cover CDNs are named by
	// third-party pages and unbounded). Nil labels every host "other".
	HostLabel func(host string) string
	// Version is exported as lectern_build_info{version}.
	Version string
	// RefusalClass labels a refusal of the destination gate
	// (gate.Class): "" for any other error. The server passes it, so
	// that the packages the gate itself depends on (cover) may report to
	// these metrics without an import cycle. Nil counts no refusals.
	RefusalClass func(error) string
	// Logger receives scrape failures (default slog.Default()).
	Logger *slog.Logger
	// ScrapeTimeout bounds the Postgres queries of one scrape (default 5s).
	ScrapeTimeout time.Duration
}

// Metrics holds Lectern's collectors on a registry of its own, so that tests
// and several servers in one process never share counts.
type Metrics struct {
	opts     Options
	log      *slog.Logger
	registry *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	jobDuration  *prometheus.HistogramVec
	refusals     *prometheus.CounterVec
	pacingWait   *prometheus.HistogramVec

	db *dbCollector
}

// Label values used when nothing more precise is known.
const (
	// LabelNone is the site of a job that is about no Series.
	LabelNone = "none"
	// LabelOther is a host or Site outside the registry.
	LabelOther = "other"
	// LabelUnmatched is the route of a request no route matched.
	LabelUnmatched = "unmatched"
)

// Via labels for refusals that do not come from a job.
const ViaBrowser = "browser_proxy"

// New builds the collectors and registers them, with the Go runtime and
// process collectors, on a fresh registry.
func New(o Options) *Metrics {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ScrapeTimeout <= 0 {
		o.ScrapeTimeout = 5 * time.Second
	}
	o.Sites = slices.Clone(o.Sites)
	m := &Metrics{opts: o, log: o.Logger, registry: prometheus.NewRegistry()}

	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lectern_http_requests_total",
		Help: "HTTP requests served, by route pattern, method and status code.",
	}, []string{"route", "method", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lectern_http_request_duration_seconds",
		Help:    "Time to serve an HTTP request, by route pattern and method.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route", "method"})
	m.jobDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "lectern_job_duration_seconds",
		Help: "Background jobs worked, by kind (poll_series, fetch_cover, archive_chapter, ...), the Site of their Series and outcome; " +
			"_count is the number of jobs.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"kind", "site", "outcome"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lectern_destination_refusals_total",
		Help: "Fetches the destination gate refused, by class (private, loopback, not_image, too_large, ...) and by what asked (a job kind or browser_proxy).",
	}, []string{"class", "via"})
	m.pacingWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lectern_pacing_wait_seconds",
		Help:    "Time a request waited at the per-host pacing gate, by host (a Site's host, or other).",
		Buckets: []float64{0, .1, .5, 1, 2, 5, 10, 30, 60, 300},
	}, []string{"host"})
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lectern_build_info",
		Help: "Always 1; the version label is the running binary's.",
	}, []string{"version"})
	buildInfo.WithLabelValues(o.Version).Set(1)

	m.registry.MustRegister(m.httpRequests, m.httpDuration, m.jobDuration, m.refusals, m.pacingWait, buildInfo,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.DB != nil {
		m.db = newDBCollector(m)
		m.registry.MustRegister(m.db)
	}
	return m
}

// Registry is where every collector is registered, for callers adding their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the exposition format. A failing Postgres query leaves its
// series out (and lectern_database_up at 0) rather than failing the scrape.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		Timeout:       m.opts.ScrapeTimeout + 5*time.Second,
	})
}

// ObserveRequest records one HTTP request. route is the router's pattern
// ("/api/bookmarks/{key}"), never the raw path; "" counts as unmatched.
func (m *Metrics) ObserveRequest(route, method string, code int, d time.Duration) {
	if route == "" {
		route = LabelUnmatched
	}
	method = methodLabel(method)
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

// methodLabel keeps the method label to the methods HTTP defines: a client
// may send any token as a method.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return LabelOther
}

// Refused counts err when it is a refusal of the destination gate and
// reports whether it was. via says what asked: a job kind or ViaBrowser.
func (m *Metrics) Refused(via string, err error) bool {
	class := m.refusalClass(err)
	if class == "" {
		return false
	}
	m.refusals.WithLabelValues(class, via).Inc()
	return true
}

// PacingWait records how long a request to host waited at the pacing gate;
// the count is the number of paced requests. TimePacing calls it.
func (m *Metrics) PacingWait(host string, waited time.Duration) {
	m.pacingWait.WithLabelValues(m.hostLabel(host)).Observe(max(waited, 0).Seconds())
}

// Pacer is the pacing gate's shape; *pacing.Gate satisfies it.
type Pacer interface {
	Wait(ctx context.Context, host string, every time.Duration) error
}

// TimePacing returns p with every wait that lets a request go recorded by
// host (PacingWait). Hand it to the Poll, Cover and archive workers in place
// of the gate itself.
func (m *Metrics) TimePacing(p Pacer) Pacer { return timedPacer{m: m, p: p} }

type timedPacer struct {
	m *Metrics
	p Pacer
}

func (t timedPacer) Wait(ctx context.Context, host string, every time.Duration) error {
	start := time.Now()
	err := t.p.Wait(ctx, host, every)
	if err == nil {
		t.m.PacingWait(host, time.Since(start))
	}
	return err
}

// DialFunc is a dialer such as gate.Client.DialContext.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// CountRefusals wraps a gated dialer so that its refusals are counted with
// via as the label: the browser's forward proxy dials through the gate, and
// a refusal there never reaches a job's error.
func (m *Metrics) CountRefusals(via string, dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil && !errors.Is(err, context.Canceled) {
			m.Refused(via, err)
		}
		return c, err
	}
}

func (m *Metrics) refusalClass(err error) string {
	if err == nil || m.opts.RefusalClass == nil {
		return ""
	}
	return m.opts.RefusalClass(err)
}

func (m *Metrics) hostLabel(host string) string {
	if m.opts.HostLabel == nil {
		return LabelOther
	}
	if l := m.opts.HostLabel(host); l != "" {
		return l
	}
	return LabelOther
}

// siteLabel is the Site of a Series key when the registry knows it.
func (m *Metrics) siteLabel(site string) string {
	if slices.Contains(m.opts.Sites, site) {
		return site
	}
	return LabelOther
}

// ListCache reports a replica's cache of encoded Bookmark lists, read at
// scrape time from stats: its bytes and the cap, its entries, its hits and
// misses. A Metrics shared by two servers (tests) reports the first.
func (m *Metrics) ListCache(stats func() (bytes, maxBytes int64, entries int, hits, misses uint64)) {
	read := func(pick func(b, mb int64, e int, h, mi uint64) float64) func() float64 {
		return func() float64 { return pick(stats()) }
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lectern_list_cache_bytes",
			Help: "Bytes of encoded Bookmark lists this replica keeps (LIST_CACHE_BYTES caps them)."},
			read(func(b, _ int64, _ int, _, _ uint64) float64 { return float64(b) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lectern_list_cache_max_bytes",
			Help: "LIST_CACHE_BYTES: the cap of lectern_list_cache_bytes."},
			read(func(_, mb int64, _ int, _, _ uint64) float64 { return float64(mb) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lectern_list_cache_entries",
			Help: "Encoded Bookmark lists kept, one per Reader, Library, list version and coding."},
			read(func(_, _ int64, e int, _, _ uint64) float64 { return float64(e) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lectern_list_cache_hits_total",
			Help: "Full Bookmark list bodies served from the cache."},
			read(func(_, _ int64, _ int, h, _ uint64) float64 { return float64(h) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lectern_list_cache_misses_total",
			Help: "Full Bookmark list bodies read from Postgres and encoded."},
			read(func(_, _ int64, _ int, _, mi uint64) float64 { return float64(mi) })),
	} {
		_ = m.registry.Register(c) // AlreadyRegistered: a second server on one Metrics
	}
}

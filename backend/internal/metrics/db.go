package metrics

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river/rivertype"
)

// dbCollector reads Postgres at scrape time: what every replica shares, so
// no feature has to report it and a restarted replica reports it at once.
type dbCollector struct {
	m *Metrics

	up, queue, paused, pausedFor, refusals, backlog, changes *prometheus.Desc

	mu sync.Mutex // one scrape at a time: changes is incremental
	ch changeCounter
}

func newDBCollector(m *Metrics) *dbCollector {
	return &dbCollector{
		m:  m,
		up: prometheus.NewDesc("lectern_database_up", "1 when the last scrape's queries succeeded, 0 when Postgres could not be read.", nil, nil),
		queue: prometheus.NewDesc("lectern_queue_jobs",
			"Background jobs in the queue (River's river_job), by kind and state; available+scheduled+retryable is the backlog.", []string{"kind", "state"}, nil),
		paused: prometheus.NewDesc("lectern_site_backoff",
			"1 while a Site is backed off (paused after 401/403/429, a challenge that did not clear or an access-denied page), else 0.", []string{"site"}, nil),
		pausedFor: prometheus.NewDesc("lectern_site_backoff_remaining_seconds",
			"Seconds until a backed-off Site is tried again (0 when it is not backed off).", []string{"site"}, nil),
		refusals: prometheus.NewDesc("lectern_site_refusals",
			"Consecutive refusals of a Site; each doubles its pause.", []string{"site"}, nil),
		backlog: prometheus.NewDesc("lectern_pacing_backlog_seconds",
			"How far ahead the pacing gate has handed out a host's request slots: the wait a new request to it would have.", []string{"host"}, nil),
		changes: prometheus.NewDesc("lectern_latest_chapter_changes_total",
			"Latest Chapter changes the Poll recorded since this process first scraped, by Site.", []string{"site"}, nil),
		ch: changeCounter{totals: map[string]float64{}, gaps: map[int64]time.Time{}},
	}
}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.queue, c.paused, c.pausedFor, c.refusals, c.backlog, c.changes} {
		ch <- d
	}
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.m.opts.ScrapeTimeout)
	defer cancel()
	err := c.collect(ctx, ch)
	up := 1.0
	if err != nil {
		up = 0
		c.m.log.WarnContext(ctx, "metrics: read Postgres", "err", err)
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}

func (c *dbCollector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	db := c.m.opts.DB
	// The Poll's tables arrive with its migration; until then their series
	// are left out instead of failing every scrape.
	var hasSiteState, hasPacing, hasHistory bool
	if err := scanOne(ctx, db, `SELECT to_regclass('site_state') IS NOT NULL, to_regclass('pacing_hosts') IS NOT NULL,
		to_regclass('latest_chapter_history') IS NOT NULL`, &hasSiteState, &hasPacing, &hasHistory); err != nil {
		return fmt.Errorf("look up tables: %w", err)
	}
	if err := c.collectQueue(ctx, ch); err != nil {
		return err
	}
	if hasSiteState {
		if err := c.collectBackoff(ctx, ch); err != nil {
			return err
		}
	}
	if hasPacing {
		if err := c.collectPacing(ctx, ch); err != nil {
			return err
		}
	}
	if hasHistory {
		if err := c.ch.update(ctx, db, c.m.siteLabel); err != nil {
			return err
		}
		for _, site := range append(c.m.opts.Sites, LabelOther) {
			ch <- prometheus.MustNewConstMetric(c.changes, prometheus.CounterValue, c.ch.totals[site], site)
		}
	}
	return nil
}

func (c *dbCollector) collectQueue(ctx context.Context, ch chan<- prometheus.Metric) error {
	rows, err := c.m.opts.DB.Query(ctx, `SELECT kind, state::text, count(*) FROM river_job GROUP BY 1, 2`)
	if err != nil {
		return fmt.Errorf("count jobs: %w", err)
	}
	counts := map[string]map[string]int64{}
	for rows.Next() {
		var kind, state string
		var n int64
		if err := rows.Scan(&kind, &state, &n); err != nil {
			rows.Close()
			return fmt.Errorf("count jobs: %w", err)
		}
		if counts[kind] == nil {
			counts[kind] = map[string]int64{}
		}
		counts[kind][state] = n
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("count jobs: %w", err)
	}
	// Every state of a kind present, zeros included, so a drained queue
	// reads 0 rather than vanishing.
	for kind, byState := range counts {
		for _, st := range rivertype.JobStates() {
			ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(byState[string(st)]), kind, string(st))
		}
	}
	return nil
}

func (c *dbCollector) collectBackoff(ctx context.Context, ch chan<- prometheus.Metric) error {
	rows, err := c.m.opts.DB.Query(ctx, `SELECT site, greatest(0, extract(epoch FROM paused_until - now()))::float8, refusals FROM site_state`)
	if err != nil {
		return fmt.Errorf("read site back-off: %w", err)
	}
	type state struct {
		remaining float64
		refusals  int64
	}
	bySite := map[string]state{}
	for rows.Next() {
		var site string
		var remaining *float64
		var s state
		if err := rows.Scan(&site, &remaining, &s.refusals); err != nil {
			rows.Close()
			return fmt.Errorf("read site back-off: %w", err)
		}
		if remaining != nil {
			s.remaining = *remaining
		}
		label := c.m.siteLabel(site)
		if old, ok := bySite[label]; ok && old.remaining > s.remaining {
			continue
		}
		bySite[label] = s
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read site back-off: %w", err)
	}
	for _, site := range c.m.opts.Sites {
		s := bySite[site]
		paused := 0.0
		if s.remaining > 0 {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, paused, site)
		ch <- prometheus.MustNewConstMetric(c.pausedFor, prometheus.GaugeValue, s.remaining, site)
		ch <- prometheus.MustNewConstMetric(c.refusals, prometheus.GaugeValue, float64(s.refusals), site)
	}
	return nil
}

func (c *dbCollector) collectPacing(ctx context.Context, ch chan<- prometheus.Metric) error {
	rows, err := c.m.opts.DB.Query(ctx, `SELECT host, greatest(0, extract(epoch FROM next_at - now()))::float8 FROM pacing_hosts`)
	if err != nil {
		return fmt.Errorf("read pacing gate: %w", err)
	}
	byHost := map[string]float64{}
	for rows.Next() {
		var host string
		var ahead float64
		if err := rows.Scan(&host, &ahead); err != nil {
			rows.Close()
			return fmt.Errorf("read pacing gate: %w", err)
		}
		label := c.m.hostLabel(host)
		byHost[label] = max(byHost[label], ahead)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read pacing gate: %w", err)
	}
	for host, ahead := range byHost {
		ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, ahead, host)
	}
	return nil
}

// changeCounter counts rows of latest_chapter_history as they appear, by
// Site: a counter kept in this process, read incrementally by id so a scrape
// never counts the whole history.
//
// Ids are handed out when a row is inserted, not when its transaction
// commits, so a scrape may see id 12 before 11 commits. Skipped ids are kept
// as gaps and looked for again on later scrapes until they expire (a rolled
// back insert leaves a gap that never fills).
type changeCounter struct {
	started bool
	last    int64
	gaps    map[int64]time.Time
	totals  map[string]float64
}

const (
	gapTTL     = 10 * time.Minute
	maxGapFill = 1000 // a larger jump is a sequence moved by hand, not open transactions
)

func (c *changeCounter) update(ctx context.Context, db Querier, siteLabel func(string) string) error {
	if !c.started {
		if err := scanOne(ctx, db, `SELECT coalesce(max(id), 0) FROM latest_chapter_history`, &c.last); err != nil {
			return fmt.Errorf("read Latest Chapter changes: %w", err)
		}
		c.started = true
		return nil
	}
	gaps := make([]int64, 0, len(c.gaps))
	for id := range c.gaps {
		gaps = append(gaps, id)
	}
	rows, err := db.Query(ctx, `SELECT id, series_key FROM latest_chapter_history WHERE id > $1 OR id = ANY($2) ORDER BY id`, c.last, gaps)
	if err != nil {
		return fmt.Errorf("read Latest Chapter changes: %w", err)
	}
	now := time.Now()
	next := c.last + 1
	type row struct {
		id  int64
		key string
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.key); err != nil {
			rows.Close()
			return fmt.Errorf("read Latest Chapter changes: %w", err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read Latest Chapter changes: %w", err)
	}
	for _, r := range got {
		if r.id <= c.last {
			delete(c.gaps, r.id)
		} else {
			if r.id-next <= maxGapFill {
				for g := next; g < r.id; g++ {
					c.gaps[g] = now
				}
			}
			next = r.id + 1
			c.last = r.id
		}
		site, _, _ := strings.Cut(r.key, ":")
		c.totals[siteLabel(site)]++
	}
	for id, at := range c.gaps {
		if now.Sub(at) > gapTTL {
			delete(c.gaps, id)
		}
	}
	return nil
}

func scanOne(ctx context.Context, db Querier, sql string, dest ...any) error {
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return fmt.Errorf("no row")
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

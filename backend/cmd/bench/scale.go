package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/loadgen"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/schedule"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The scale fixture of `bench scale`: a deployment far larger than one
// household's, in a throwaway database, seeded by set-based SQL.
const (
	scaleReaders   = 10_000
	scaleSeries    = 100_000
	scaleHeavy     = 1_000 // the first Reader's Bookmarks
	scaleMaxOthers = 199   // every other Reader holds 1..199, 100 on average
)

// The scale fixture's options (flags of bench).
var (
	// scaleOneSite puts every Series on asura instead of spreading them
	// over the Sites, so that one planner tick plans 100,000 Series.
	scaleOneSite bool
	// scalePlannerOnly seeds and measures the planner ticks alone.
	scalePlannerOnly bool
)

// benchScale measures the panel refresh, PUT Progress, the library page, a
// planner tick, start-up and the database's size at the scale fixture,
// next to the panel refresh of one Reader with 1,000 Bookmarks alone in a
// database, measured in the same run.
func benchScale(ctx context.Context, e *env, clients int, d time.Duration) error {
	// The reference runs all along, so its loads interleave with the
	// fixture's and share whatever else the machine is doing.
	alone, err := scaleReference(ctx, e)
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	defer alone.stop()

	db, err := e.database(ctx)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Printf("seeding %d Readers, %d Series over the Sites, ~1,000,000 Bookmarks (Zipf popularity)...\n", scaleReaders, scaleSeries)
	t0 := time.Now()
	if err := seedScale(ctx, st); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	seeded := time.Since(t0)
	facts, err := scaleFacts(ctx, st)
	if err != nil {
		return err
	}
	fmt.Printf("seeded in %s: %s\n\n", seeded.Round(time.Second), facts)
	if scalePlannerOnly {
		ticks, err := plannerTicks(ctx, st)
		if err != nil {
			return fmt.Errorf("planner tick: %w", err)
		}
		for _, t := range ticks {
			fmt.Println(t)
		}
		return nil
	}

	heavy, median, putter, err := scaleReaders3(ctx, st)
	if err != nil {
		return err
	}
	dataDir, err := os.MkdirTemp("", "lectern-bench-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dataDir)
	base, _, stop, err := startLectern(ctx, db, dataDir)
	if err != nil {
		return err
	}
	defer stop()

	var results []loadgen.Result
	var p99s [2][2]time.Duration // [heavy, median][304, full]
	var aloneRes [2]loadgen.Result
	type target struct {
		name, base, token string
	}
	targets := []target{{"alone with 1000", alone.base, alone.token},
		{fmt.Sprintf("Reader with %d", heavy.bookmarks), base, heavy.token},
		{fmt.Sprintf("median Reader, %d", median.bookmarks), base, median.token}}
	for kind, want := range []int{304, 200} {
		for i, tg := range targets {
			etag, size, err := firstList(tg.base, tg.token)
			if err != nil {
				return err
			}
			hdr := []string{"Authorization", "Bearer " + tg.token, "Accept-Encoding", acceptEncoding}
			name := "304, " + tg.name
			if want == 304 {
				hdr = append(hdr, "If-None-Match", etag)
			} else {
				name = fmt.Sprintf("full (%d B), %s", size, tg.name)
			}
			r := loadgen.Run(ctx, name, clients, d, want, get(tg.base+"/api/bookmarks", hdr...))
			if i == 0 {
				aloneRes[kind] = r
			} else {
				p99s[i-1][kind] = r.P99
			}
			results = append(results, r)
		}
	}
	alone304, aloneFull := aloneRes[0], aloneRes[1]
	put := loadgen.Run(ctx, fmt.Sprintf("PUT Progress, Reader with %d", putter.bookmarks), clients, d, 200, func(_, i int) (*http.Request, error) {
		key := putter.asura[i%len(putter.asura)]
		slug := strings.TrimPrefix(key, "asura:")
		n := i%400 + 1
		body := fmt.Sprintf(`{"site":"asura","series_url":"https://asurascans.com/comics/%s-1a2b3c4d","chapter":"Chapter %d","chapter_url":"https://asurascans.com/comics/%s-1a2b3c4d/chapter/%d"}`, slug, n, slug, n)
		req, err := http.NewRequest("PUT", base+"/api/bookmarks/"+key, strings.NewReader(body))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+putter.token)
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	})
	library := loadgen.Run(ctx, fmt.Sprintf("library page, Reader with %d", heavy.bookmarks), clients, d, 200, func(int, int) (*http.Request, error) {
		req, err := http.NewRequest("GET", base+"/library/manga", nil)
		if err == nil {
			req.AddCookie(&http.Cookie{Name: "lectern_session", Value: heavy.cookie})
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		return req, err
	})
	results = append(results, put, library)

	ticks, err := plannerTicks(ctx, st)
	if err != nil {
		return fmt.Errorf("planner tick: %w", err)
	}
	startup, err := serveStartup(ctx, db, dataDir)
	if err != nil {
		return fmt.Errorf("lectern serve start-up: %w", err)
	}
	var dbSize int64
	if err := st.Pool.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&dbSize); err != nil {
		return err
	}

	fmt.Printf("at the scale fixture, Accept-Encoding: %s, %d keep-alive clients, %s each\n\n", acceptEncoding, clients, d)
	for _, r := range results {
		fmt.Println(r)
	}
	fmt.Println()
	for _, t := range ticks {
		fmt.Println(t)
	}
	fmt.Printf("lectern serve start-up (exec to /readyz 200, WORKERS=0): %s\n", startup.Round(time.Millisecond))
	fmt.Printf("database size: %.0f MiB\n", float64(dbSize)/(1<<20))
	fmt.Printf("seeding: %s\n\n", seeded.Round(time.Second))
	ratio := func(a, b time.Duration) string { return fmt.Sprintf("%.2fx", float64(a)/float64(max(b, 1))) }
	fmt.Printf("p99 304:  scale / alone = %s (Reader with %d), %s (median Reader, %d)\n",
		ratio(p99s[0][0], alone304.P99), heavy.bookmarks, ratio(p99s[1][0], alone304.P99), median.bookmarks)
	fmt.Printf("p99 full: scale / alone = %s (Reader with %d), %s (median Reader, %d)\n",
		ratio(p99s[0][1], aloneFull.P99), heavy.bookmarks, ratio(p99s[1][1], aloneFull.P99), median.bookmarks)
	return nil
}

func get(u string, hdr ...string) loadgen.Request {
	return func(int, int) (*http.Request, error) {
		r, err := http.NewRequest("GET", u, nil)
		for i := 0; err == nil && i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		return r, err
	}
}

// aloneServer is the reference: one Reader with 1,000 Bookmarks alone in a
// fresh database, `bench bookmarks`' Lectern half.
type aloneServer struct {
	base, token string
	stop        func()
}

func scaleReference(ctx context.Context, e *env) (aloneServer, error) {
	db, err := e.database(ctx)
	if err != nil {
		return aloneServer{}, err
	}
	dataDir, err := os.MkdirTemp("", "lectern-bench-data-")
	if err != nil {
		return aloneServer{}, err
	}
	base, st, stop, err := startLectern(ctx, db, dataDir)
	if err != nil {
		return aloneServer{}, err
	}
	token, err := seedReader(ctx, st, "reader", scaleHeavy)
	if err != nil {
		stop()
		return aloneServer{}, err
	}
	return aloneServer{base: base, token: token, stop: func() { stop(); _ = os.RemoveAll(dataDir) }}, nil
}

// firstList asks once for a Reader's list and returns its ETag and size.
func firstList(base, token string) (string, int, error) {
	req, _ := http.NewRequest("GET", base+"/api/bookmarks", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept-Encoding", acceptEncoding)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("ETag") == "" {
		return "", 0, fmt.Errorf("first list: %d, %d bytes", resp.StatusCode, len(b))
	}
	return resp.Header.Get("ETag"), len(b), nil
}

// seedScale fills a migrated database with the fixture in a few set-based
// statements. The triggers are off while it does (session_replication_role
// replica, which needs a superuser, as the throwaway server's is): Reader
// counts and list versions are set once at the end instead of a million
// times.
func seedScale(ctx context.Context, st *store.Store) error {
	conn, err := st.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	reg := latest.Default()
	names := reg.Names()
	// asura first: the biggest Site, whose Series URLs are real asura URLs,
	// so PUT Progress passes the registry.
	for i, n := range names {
		if n == "asura" {
			names[0], names[i] = names[i], names[0]
		}
	}
	if scaleOneSite {
		names = names[:1]
	}
	kinds := make([]string, len(names))
	for i, n := range names {
		s, _ := reg.Lookup(n)
		kinds[i] = string(s.Kind)
	}
	hash, err := credential.HashPassword("bench password")
	if err != nil {
		return err
	}
	steps := []struct {
		what string
		sql  string
		args []any
	}{
		{"triggers off", `SET session_replication_role = replica`, nil},
		{"seed", `SELECT setseed(0.18)`, nil},
		{"readers", `INSERT INTO readers (name, password_hash, is_owner)
			SELECT 'reader' || i, $1, i = 1 FROM generate_series(1, $2) i`, []any{hash, scaleReaders}},
		{"list versions", `INSERT INTO reader_lists (reader_id) SELECT id FROM readers`, nil},
		{"tokens", `INSERT INTO api_tokens (reader_id, name, token_hash)
			SELECT id, 'seed', sha256(('seed token ' || id)::bytea) FROM readers`, nil},
		// Site i of n gets a share falling with i (random()^3): the first,
		// asura, about 45%.
		{"ranks", `CREATE TEMP TABLE scale_series AS
			SELECT i, ($1::text[])[idx] AS site, ($2::text[])[idx] AS kind FROM (
				SELECT i, 1 + floor(array_length($1::text[], 1) * power(random(), 3))::int AS idx
				FROM generate_series(1, $3) i) q`, []any{names, kinds, scaleSeries}},
		{"series", `INSERT INTO series (key, site, kind, series_url, title, cover_address, cover_type, cover_size,
				latest_label, latest_number, latest_url, latest_at, last_poll_at, last_success_at, poll_status, created_at, updated_at)
			SELECT site || ':scale-' || i, site, kind, u, 'The Scale Chronicles, Volume ' || i,
			       encode(sha256(('cover ' || i)::bytea), 'hex'), 'image/webp', 40000,
			       'Chapter ' || (i % 300 + 10), i % 300 + 10, u || '/chapter/' || (i % 300 + 10),
			       now() - ((i % 10000) || ' minutes')::interval, now() - ((i % 600) || ' minutes')::interval,
			       now() - ((i % 600) || ' minutes')::interval, 'ok', now() - interval '120 days', now() - interval '1 day'
			FROM (SELECT i, site, kind, CASE WHEN site = 'asura' THEN 'https://asurascans.com/comics/scale-' || i || '-1a2b3c4d'
			                                 ELSE 'https://' || site || '.example/series/scale-' || i END AS u
			      FROM scale_series) q`, nil},
		// Three weekly releases per Series, for the planner's rhythms.
		{"history", `INSERT INTO latest_chapter_history (series_key, label, number, url, locked, first_seen_at, prev_poll_at)
			SELECT s.key, 'Chapter ' || (s.latest_number - w), s.latest_number - w, s.latest_url, false,
			       now() - ((w * 7 + (length(s.key) % 7)) || ' days')::interval,
			       now() - ((w * 7 + (length(s.key) % 7)) || ' days')::interval - interval '2 hours'
			FROM series s CROSS JOIN generate_series(0, 2) w`, nil},
		// Zipf popularity: a Series' rank r is drawn with density 1/r
		// (floor(N^u)); each Reader draws three times what they hold and
		// keeps that many distinct Series.
		{"bookmarks", `INSERT INTO bookmarks (reader_id, series_key, chapter, chapter_number, chapter_url, progress_at, created_at, updated_at)
			SELECT n.reader_id, se.key, 'Chapter ' || (n.s % 300 + 5), n.s % 300 + 5, se.series_url || '/chapter/' || (n.s % 300 + 5),
			       now() - (n.rn || ' hours')::interval, now() - ((n.rn + 1) || ' hours')::interval, now() - (n.rn || ' hours')::interval
			FROM (
				SELECT reader_id, want, s, row_number() OVER (PARTITION BY reader_id ORDER BY random()) AS rn FROM (
					SELECT DISTINCT reader_id, want, s FROM (
						SELECT w.id AS reader_id, w.want, least($2::int, floor(exp(random() * ln($2::int::float8)))::int) AS s
						FROM (SELECT id, CASE WHEN id = (SELECT min(id) FROM readers) THEN $1::int
						                      ELSE 1 + ((id * 7919 + 13) % $3::int) END AS want FROM readers) w
						CROSS JOIN LATERAL generate_series(1, w.want * 3) g
					) c
				) dd
			) n
			JOIN scale_series ss ON ss.i = n.s
			JOIN series se ON se.key = ss.site || ':scale-' || ss.i
			WHERE n.rn <= n.want`, []any{scaleHeavy, scaleSeries, scaleMaxOthers}},
		{"reader counts", `UPDATE series s SET readers = c.n
			FROM (SELECT series_key, count(*) AS n FROM bookmarks GROUP BY series_key) c WHERE s.key = c.series_key`, nil},
		// What the trigger on latest_chapter_history keeps (ADR 0033).
		{"last changes", `UPDATE series s SET last_change_at = h.first_seen_at, last_change_prev_poll_at = h.prev_poll_at
			FROM (SELECT DISTINCT ON (series_key) series_key, first_seen_at, prev_poll_at
			      FROM latest_chapter_history ORDER BY series_key, first_seen_at DESC, id DESC) h
			WHERE s.key = h.series_key`, nil},
		// What the trigger on series.cover_address keeps (ADR 0032).
		{"cover addresses", `INSERT INTO cover_addresses (address)
			SELECT DISTINCT cover_address FROM series WHERE cover_address <> '' ON CONFLICT DO NOTHING`, nil},
		{"triggers on", `SET session_replication_role = origin`, nil},
		{"vacuum", `VACUUM (ANALYZE) readers, reader_lists, api_tokens, series, latest_chapter_history, bookmarks`, nil},
		{"checkpoint", `CHECKPOINT`, nil},
	}
	for _, s := range steps {
		t0 := time.Now()
		if _, err := conn.Exec(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
		if d := time.Since(t0); d > time.Second {
			fmt.Printf("  %-14s %s\n", s.what, d.Round(100*time.Millisecond))
		}
	}
	return nil
}

type scaleFactsT struct {
	readers, series, bookmarks, topReaders int
	sites                                  string
}

func (f scaleFactsT) String() string {
	return fmt.Sprintf("%d Readers, %d Series, %d Bookmarks; the most held Series has %d Readers; Series per Site: %s",
		f.readers, f.series, f.bookmarks, f.topReaders, f.sites)
}

func scaleFacts(ctx context.Context, st *store.Store) (scaleFactsT, error) {
	var f scaleFactsT
	err := st.Pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM readers), (SELECT count(*) FROM series), (SELECT count(*) FROM bookmarks),
		       (SELECT max(readers) FROM series),
		       (SELECT string_agg(site || ' ' || n, ', ' ORDER BY n DESC) FROM (SELECT site, count(*) AS n FROM series GROUP BY site) q)`).
		Scan(&f.readers, &f.series, &f.bookmarks, &f.topReaders, &f.sites)
	return f, err
}

type scaleReader struct {
	id            int64
	bookmarks     int
	token, cookie string
	asura         []string // keys of their Bookmarks on asura, for PUT Progress
}

// scaleReaders3 gives tokens and sessions to the Reader with 1,000
// Bookmarks, a median Reader, and the Reader nearest the median with
// asura Bookmarks to PUT Progress on.
func scaleReaders3(ctx context.Context, st *store.Store) (heavy, median, putter scaleReader, err error) {
	pick := func(sql string) (scaleReader, error) {
		var r scaleReader
		if err := st.Pool.QueryRow(ctx, sql).Scan(&r.id, &r.bookmarks); err != nil {
			return r, err
		}
		token, th, err := credential.NewToken()
		if err != nil {
			return r, err
		}
		if _, err := st.CreateToken(ctx, r.id, "bench", th); err != nil {
			return r, err
		}
		sid, err := credential.NewSecret()
		if err != nil {
			return r, err
		}
		if err := st.CreateSession(ctx, credential.HashSecret(sid), r.id, "csrf", time.Now().Add(time.Hour)); err != nil {
			return r, err
		}
		r.token, r.cookie = token, sid
		rows, err := st.Pool.Query(ctx, `SELECT series_key FROM bookmarks WHERE reader_id = $1 AND series_key LIKE 'asura:%' ORDER BY 1`, r.id)
		if err != nil {
			return r, err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return r, err
			}
			r.asura = append(r.asura, k)
		}
		return r, rows.Err()
	}
	if heavy, err = pick(`SELECT reader_id, count(*) FROM bookmarks GROUP BY 1 ORDER BY 2 DESC LIMIT 1`); err != nil {
		return
	}
	if median, err = pick(fmt.Sprintf(`SELECT reader_id, count(*) FROM bookmarks GROUP BY 1 ORDER BY 2, 1 OFFSET %d LIMIT 1`, scaleReaders/2)); err != nil {
		return
	}
	putter = median
	if len(putter.asura) == 0 {
		putter = heavy
	}
	return heavy, median, putter, nil
}

// plannerTicks runs the adaptive plan of every Site twice, as the
// plan_polls job does, queuing polls through an insert-only River client:
// the first tick after seeding estimates every Series' rhythm, the next
// (one horizon later) reads them cached. Each Site's time is read off the
// plan's own "planned polls" log line, which ends its Site.
func plannerTicks(ctx context.Context, st *store.Store) ([]string, error) {
	client, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	budgets, err := poll.NewBudgets(latest.Default(), nil, fetch.Paces{})
	if err != nil {
		return nil, err
	}
	var out []string
	start := time.Now()
	at := start
	lines := &planLines{}
	// One plan across the ticks, as the leader's plan_polls job keeps one:
	// what it remembers from a tick (decoded rhythms) serves the next.
	plan := &poll.Adaptive{Store: st, Registry: latest.Default(), Planner: schedule.Planner{Interval: time.Hour}, Budgets: budgets,
		Logger: slog.New(lines), Now: func() time.Time { return at }}
	for i, name := range []string{"first tick (every rhythm estimated)", "next tick (rhythms cached)", "third tick"} {
		at = start.Add(time.Duration(i) * schedule.DefaultHorizon)
		lines.reset()
		t0 := time.Now()
		n, err := plan.Run(ctx, client)
		if err != nil {
			return nil, err
		}
		total := time.Since(t0)
		var per []string
		prev := t0
		for _, l := range lines.get() {
			per = append(per, fmt.Sprintf("%s %d Series %s (%s)", l.site, l.held, l.at.Sub(prev).Round(time.Millisecond), strings.Join(l.parts, " ")))
			prev = l.at
		}
		out = append(out, fmt.Sprintf("adaptive planner, %s: %s for every Site, %d polls queued; by Site: %s",
			name, total.Round(time.Millisecond), n, strings.Join(per, ", ")))
	}
	return out, nil
}

// planLines is a slog handler keeping when each Site's plan ended.
type planLines struct {
	mu    *sync.Mutex
	lines *[]planLine
	site  string
}

type planLine struct {
	site  string
	held  int64
	at    time.Time
	parts []string // where the time went, from the line's *_ms and written
}

func (h *planLines) init() {
	if h.mu == nil {
		h.mu, h.lines = &sync.Mutex{}, &[]planLine{}
	}
}

func (h *planLines) reset() {
	h.init()
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.lines = (*h.lines)[:0]
}

func (h *planLines) get() []planLine {
	h.init()
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*h.lines)
}

func (h *planLines) Enabled(context.Context, slog.Level) bool { return true }

func (h *planLines) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "planned polls" {
		return nil
	}
	h.init()
	l := planLine{site: h.site, at: time.Now()}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "held" {
			l.held = a.Value.Int64()
		}
		if strings.HasSuffix(a.Key, "_ms") || a.Key == "written" || a.Key == "queued" || a.Key == "due" || a.Key == "waiting" || a.Key == "planned" {
			l.parts = append(l.parts, a.Key+"="+a.Value.String())
		}
		return true
	})
	h.mu.Lock()
	*h.lines = append(*h.lines, l)
	h.mu.Unlock()
	return nil
}

func (h *planLines) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.init()
	c := *h
	for _, a := range attrs {
		if a.Key == "site" {
			c.site = a.Value.String()
		}
	}
	return &c
}

func (h *planLines) WithGroup(string) slog.Handler { return h }

// serveStartup times `lectern serve` from exec to its first ready answer.
func serveStartup(ctx context.Context, db, dataDir string) (time.Duration, error) {
	bin, err := buildLectern(dataDir)
	if err != nil {
		return 0, err
	}
	addr, err := freeAddr()
	if err != nil {
		return 0, err
	}
	base := "http://" + addr
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+db, "PUBLIC_BASE_URL="+base, "DATA_DIR="+dataDir,
		"LISTEN_ADDR="+addr, "WORKERS=0", "LOG_LEVEL=warn", "LOG_FORMAT=text")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	if err := waitReadyFast(base); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// waitReadyFast is waitReady polling every 5 ms, so the start-up time is
// not rounded up to the poll.
func waitReadyFast(base string) error {
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("lectern at %s never became ready", base)
}

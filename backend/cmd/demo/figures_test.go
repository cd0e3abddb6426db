package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
)

// BenchmarkPanelOpen measures the panel in headless Chromium with 500
// Bookmarks, against the same panel with 1 Bookmark measured in the same
// run:
//   - open: from a click on the toggle to data-state=ready with every
//     Bookmark listed ("cold": the first open on a page, no cached list, a
//     200 with the whole list; "warm": the list cached with its ETag by an
//     earlier page, a 304), and to the next painted frame;
//   - bytes on the wire (request and response, headers included, one
//     connection per request) of a panel refresh with a matching ETag (304)
//     and without one (200).
//
// Each iteration loads the page afresh and injects the built userscript as
// the end-to-end test does; GM_xmlhttpRequest goes through the test's
// bridge, out of the browser, as a userscript manager's does. Run:
//
//	go test -run '^$' -bench PanelOpen -benchtime 7x ./backend/cmd/demo/
//
// Medians are reported; there are no timing assertions.
func BenchmarkPanelOpen(b *testing.B) {
	e := newEnv(b, fixturesites.Options{}, 0)
	ctx := context.Background()
	seedBookmarks(b, e, e.readerID, 500)
	_, refToken, err := newReader(ctx, e.lectern.Store, "ref", "correct horse battery", false)
	require.NoError(b, err)
	refID := readerID(b, e, "ref")
	seedBookmarks(b, e, refID, 1)

	browser := launch(b, e.sites)
	code := e.userscript("lectern-manga")
	br := newBridge(b, e.lectern.BaseURL, nil)
	tb := newTab(b, browser, br, "lectern-manga", code)

	type sample struct{ ready, painted float64 }
	var cold500, warm500, cold1 []sample
	var bytes200, bytes304 []gmCall

	open := func(values map[string]any, n int) (sample, []gmCall) {
		br.reset(values)
		tb.open(fixturesites.AsuraChapter)
		before := br.callCount()
		var s struct{ Ready, Painted float64 }
		tb.panel(fmt.Sprintf(openAndTime, n), &s)
		return sample{s.Ready, s.Painted}, br.callsSince(before)
	}
	for b.Loop() {
		s, calls := open(map[string]any{"lectern.token": e.token}, 500)
		cold500 = append(cold500, s)
		list := listCall(b, calls)
		require.Equal(b, 200, list.Status)
		bytes200 = append(bytes200, list)

		// The next page load starts with the list and ETag the last one kept.
		cache := br.value("lectern.cache.manga")
		require.NotEmpty(b, cache)
		s, calls = open(map[string]any{"lectern.token": e.token, "lectern.cache.manga": cache}, 500)
		warm500 = append(warm500, s)
		list = listCall(b, calls)
		require.Equal(b, 304, list.Status)
		require.NotEmpty(b, list.IfNoneMatch)

		// A click on Refresh with the ETag matching: one conditional GET.
		before := br.callCount()
		tb.click("lectern-refresh")
		tb.wait(`q('lectern-panel').getAttribute('data-state') === 'ready' && q('lectern-status').textContent.includes('unchanged')`)
		refresh := br.callsSince(before)
		require.Len(b, refresh, 1, "a refresh is one request: the page's Series was resolved on open")
		require.Equal(b, 304, refresh[0].Status)
		bytes304 = append(bytes304, refresh[0])

		s, calls = open(map[string]any{"lectern.token": refToken}, 1)
		cold1 = append(cold1, s)
		require.Equal(b, 200, listCall(b, calls).Status)
	}

	med := func(xs []sample, f func(sample) float64) float64 {
		v := make([]float64, len(xs))
		for i, x := range xs {
			v[i] = f(x)
		}
		return median(v)
	}
	ready := func(s sample) float64 { return s.ready }
	painted := func(s sample) float64 { return s.painted }
	c500, w500, c1 := med(cold500, ready), med(warm500, ready), med(cold1, ready)
	b.ReportMetric(c500, "open-500-cold-ms")
	b.ReportMetric(w500, "open-500-warm-ms")
	b.ReportMetric(c1, "open-1-cold-ms")
	b.ReportMetric(c500/c1, "open-500/1")
	b.ReportMetric(med(cold500, painted), "painted-500-cold-ms")
	b.ReportMetric(float64(bytes200[0].Received), "refresh-200-resp-bytes")
	b.ReportMetric(float64(bytes304[0].Received), "refresh-304-resp-bytes")
	b.ReportMetric(float64(bytes200[0].Received)/float64(bytes304[0].Received), "200/304-bytes")
	b.Logf("runs: %d; open (click → ready with every Bookmark), median ms: 500 cold %.1f, 500 warm (304) %.1f, 1 cold %.1f; painted 500 cold %.1f, warm %.1f",
		len(cold500), c500, w500, c1, med(cold500, painted), med(warm500, painted))
	b.Logf("refresh bytes on the wire, 500 Bookmarks: without a matching ETag: sent %d, received %d; with one (304): sent %d, received %d",
		bytes200[0].Sent, bytes200[0].Received, bytes304[0].Sent, bytes304[0].Received)
}

// openAndTime clicks the toggle and resolves with the milliseconds until
// data-state=ready with %d items listed, and until the frame after it.
const openAndTime = `(async () => {
	const n = %d;
	const panel = q('lectern-panel');
	const done = () => panel.getAttribute('data-state') === 'ready' && R.querySelectorAll('[data-testid="lectern-item"]').length === n;
	const t0 = performance.now();
	const ready = new Promise((resolve, reject) => {
		const mo = new MutationObserver(() => { if (done()) { mo.disconnect(); resolve(performance.now()); } });
		mo.observe(panel, { attributes: true, attributeFilter: ['data-state'] });
		setTimeout(() => reject(new Error('not ready: ' + panel.getAttribute('data-state'))), 30000);
	});
	q('lectern-toggle').click();
	const t1 = await ready;
	await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
	return { Ready: t1 - t0, Painted: performance.now() - t0 };
})()`

// listCall is the one GET /api/bookmarks among calls.
func listCall(tb testing.TB, calls []gmCall) gmCall {
	tb.Helper()
	var found []gmCall
	for _, c := range calls {
		if strings.Contains(c.URL, "/api/bookmarks?") {
			found = append(found, c)
		}
	}
	require.Len(tb, found, 1, "%v", calls)
	return found[0]
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func readerID(tb testing.TB, e *env, name string) int64 {
	tb.Helper()
	r, err := e.lectern.Store.ReaderByName(context.Background(), name)
	require.NoError(tb, err)
	return r.ID
}

// seedBookmarks gives a Reader n manga Bookmarks of distinct Series, each
// with a stored Cover of its own, Progress and a Latest Chapter.
func seedBookmarks(tb testing.TB, e *env, reader int64, n int) {
	tb.Helper()
	ctx := context.Background()
	covers := &blob.FS{Dir: e.lectern.Config.CoverDir}
	var keys, urls, titles, addrs []string
	for i := range n {
		var buf bytes.Buffer
		img := image.NewRGBA(image.Rect(0, 0, 40, 56))
		for p := 0; p < len(img.Pix); p += 4 {
			img.Pix[p], img.Pix[p+1], img.Pix[p+2], img.Pix[p+3] = uint8(i), uint8(i>>8), uint8(reader), 255
		}
		require.NoError(tb, png.Encode(&buf, img))
		addr, err := covers.Put(ctx, buf.Bytes(), "image/png")
		require.NoError(tb, err)
		slug := fmt.Sprintf("bench-%d-%d", reader, i)
		keys = append(keys, "asura:"+slug)
		urls = append(urls, "https://asurascans.com/comics/"+slug)
		titles = append(titles, fmt.Sprintf("Benchmark Series %d: A Long Title That Needs Truncating", i))
		addrs = append(addrs, addr)
	}
	_, err := e.lectern.Store.Pool.Exec(ctx, `
		INSERT INTO series (key, site, kind, series_url, title, cover_address, cover_type, latest_label, latest_number, latest_url, latest_at)
		SELECT k, 'asura', 'manga', u, t, a, 'image/png', 'Chapter 12', 12, u || '/chapter/12', now()
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(k, u, t, a)`, keys, urls, titles, addrs)
	require.NoError(tb, err)
	_, err = e.lectern.Store.Pool.Exec(ctx, `
		INSERT INTO bookmarks (reader_id, series_key, chapter, chapter_number, chapter_url, progress_at)
		SELECT $1, k, 'Chapter 10', 10, u || '/chapter/10', now() FROM unnest($2::text[], $3::text[]) AS x(k, u)`, reader, keys, urls)
	require.NoError(tb, err)
}

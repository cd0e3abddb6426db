package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// TestDemoListingFindsARelease runs the demo with -sites: a new chapter
// saved into Royal Road's series page (and its feed) is shown by the
// listing the fixture server generates, the listing read marks the held
// Series and queues its confirming poll at once, and that poll (reason
// "listing") writes the new Latest Chapter. The reads are queued by the
// test every few seconds rather than waited for from the plan, whose
// floor is minutes.
func TestDemoListingFindsARelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "royalroad"), 0o755))
	copyFile := func(name string, edit func(string) string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, "testdata", "sites", "royalroad", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "royalroad", name), []byte(edit(string(b))), 0o644))
	}
	same := func(s string) string { return s }
	copyFile("series.html", same)
	copyFile("feed.xml", same)

	d, err := startDemo(ctx, demoOptions{DatabaseURL: pgtest.NewURL(t), DataDir: t.TempDir(),
		Listen: "127.0.0.1:0", SitesListen: "127.0.0.1:0", SitesDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })

	ref, err := latest.Default().Resolve(fixturesites.RoyalroadSeries)
	require.NoError(t, err)
	n := 27.0
	_, _, err = d.lectern.Server.Library().Put(ctx, d.readerID, ref.Key, bookmark.PutRequest{
		Site: ref.Site, SeriesURL: ref.SeriesURL, Chapter: "Chapter 27: Ember", ChapterNumber: &n})
	require.NoError(t, err)
	latestLabel := func() string {
		var label string
		require.NoError(t, d.lectern.Store.Pool.QueryRow(ctx, `SELECT latest_label FROM series WHERE key = $1`, ref.Key).Scan(&label))
		return label
	}
	require.Eventually(t, func() bool { return strings.HasPrefix(latestLabel(), "Chapter 28") }, step, 50*time.Millisecond, "the Acquisition")

	rc, err := river.NewClient(riverpgxv5.New(d.lectern.Store.Pool), &river.Config{})
	require.NoError(t, err)
	read := func() {
		t.Helper()
		_, err := rc.Insert(ctx, poll.ListingArgs{Site: "royalroad", Confirms: 5}, nil)
		require.NoError(t, err)
	}
	// A first read sees the Series at its stored chapter: nothing to poll.
	read()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, d.lectern.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM site_listings WHERE site = 'royalroad' AND read_at IS NOT NULL`).Scan(&n))
		return n == 1
	}, step, 50*time.Millisecond)

	release := func(s string) string {
		return strings.ReplaceAll(s, "Chapter 28: The Long Street", "Chapter 29: The Long Street")
	}
	copyFile("series.html", release)
	copyFile("feed.xml", release)
	deadline := time.Now().Add(step)
	for !strings.HasPrefix(latestLabel(), "Chapter 29") {
		require.True(t, time.Now().Before(deadline), "the release is found through the listing")
		read()
		time.Sleep(2 * time.Second)
	}
	// River marks a job completed a moment after its work commits (its
	// completer batches), so the poll that wrote Chapter 29 may still read
	// as running here: wait for its state, then ask which poll it was.
	lastReason := func() string {
		var reason string
		err := d.lectern.Store.Pool.QueryRow(ctx, `
			SELECT args->>'reason' FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1 AND state = 'completed'
			ORDER BY finalized_at DESC LIMIT 1`, ref.Key).Scan(&reason)
		require.NoError(t, err)
		return reason
	}
	require.Eventually(t, func() bool {
		var running int
		require.NoError(t, d.lectern.Store.Pool.QueryRow(ctx, `
			SELECT count(*) FROM river_job WHERE kind = 'poll_series' AND args->>'key' = $1 AND state = 'running'`, ref.Key).Scan(&running))
		return running == 0
	}, step, 50*time.Millisecond, "the poll that wrote Chapter 29 is marked completed")
	require.Equal(t, "listing", lastReason(), "the poll that found it was the listing's confirming poll")
}

// BenchmarkDemoListingRequests measures the real requests per hour Royal
// Road (a Site with a listing) gets in the demo, with POLL_LISTINGS on and
// off, two demos side by side, one Bookmark on it each: the fixture
// server's requests for its listing, series page and feed, counted over
// LECTERN_FIGURE_MINUTES (default 8) after the Acquisition and scaled to an
// hour. Run:
//
//	go test -run '^$' -bench DemoListingRequests -benchtime 1x ./backend/cmd/demo/
func BenchmarkDemoListingRequests(b *testing.B) {
	minutes := 8
	if v := os.Getenv("LECTERN_FIGURE_MINUTES"); v != "" {
		_, _ = fmt.Sscanf(v, "%d", &minutes)
	}
	ctx := context.Background()
	type run struct {
		name string
		d    *demo
	}
	var runs []run
	for _, on := range []string{"true", "false"} {
		d, err := startDemo(ctx, demoOptions{DatabaseURL: pgtest.NewURL(b), DataDir: b.TempDir(),
			Listen: "127.0.0.1:0", SitesListen: "127.0.0.1:0", Env: map[string]string{"POLL_LISTINGS": on}})
		require.NoError(b, err)
		b.Cleanup(func() { _ = d.Close() })
		ref, err := latest.Default().Resolve(fixturesites.RoyalroadSeries)
		require.NoError(b, err)
		n := 27.0
		_, _, err = d.lectern.Server.Library().Put(ctx, d.readerID, ref.Key, bookmark.PutRequest{
			Site: ref.Site, SeriesURL: ref.SeriesURL, Chapter: "Chapter 27: Ember", ChapterNumber: &n})
		require.NoError(b, err)
		runs = append(runs, run{"listings " + on, d})
	}
	site, _ := latest.Default().Lookup("royalroad")
	listingURL, _ := site.ListingURL()
	feed, _ := site.PollURL(fixturesites.RoyalroadSeries)
	count := func(d *demo) (listing, series int) {
		return d.sites.Hits(listingURL), d.sites.Hits(fixturesites.RoyalroadSeries) + d.sites.Hits(feed)
	}
	time.Sleep(10 * time.Second) // the Acquisition
	var l0, s0 [2]int
	for i, r := range runs {
		l0[i], s0[i] = count(r.d)
	}
	b.ResetTimer()
	time.Sleep(time.Duration(minutes) * time.Minute)
	b.StopTimer()
	for i, r := range runs {
		l, s := count(r.d)
		scale := 60 / float64(minutes)
		b.Logf("%s: listing %.1f/h, series page and feed %.1f/h, Royal Road %.1f requests/h", r.name,
			float64(l-l0[i])*scale, float64(s-s0[i])*scale, float64(l-l0[i]+s-s0[i])*scale)
	}
}

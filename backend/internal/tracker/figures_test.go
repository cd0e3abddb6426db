package tracker_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/tracker"
)

// A realistic evening: 20 chapters across 3 Series, recorded 100 times in
// all (the panel's auto-record on each chapter page, reloads, a second
// device, the "Bookmark this chapter" button: five records a chapter within
// half a minute), chapters about eight minutes apart, and one Series skimmed
// six chapters in under a minute. The sync jobs run when due on a simulated
// clock: a job is due 5 s (SyncDelay) after the record that queued it, and
// the records in between join it or not as the real system decides. The
// requests counted are what reached the fake AniList; MyAnimeList and
// MangaUpdates make the same number each.
func TestBurstFigures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	series := []struct{ key, url string }{
		{soloKey, soloURL},
		{orvKey, orvURL},
		{"asura:nano-machine", "https://asurascans.com/comics/nano-machine-0a1b2c3d"},
	}
	for i, s := range series {
		b.put(s.key, s.url, "Chapter 1")
		if i == 0 {
			b.linkAniList()
		}
		b.mapEntry(s.key, tracker.AniList, 1000+i)
	}
	b.runSyncs()
	b.ani.Reset()

	type record struct {
		at      time.Duration
		series  int
		chapter int
	}
	var timeline []record
	at := time.Duration(0)
	next := map[int]int{0: 2, 1: 2, 2: 2}
	add := func(s int, gaps []time.Duration) {
		for _, g := range gaps {
			at += g
			timeline = append(timeline, record{at, s, next[s]})
		}
		next[s]++
	}
	five := []time.Duration{8 * time.Minute, 2 * time.Second, 3 * time.Second, 6 * time.Second, 15 * time.Second}
	for c := range 14 { // 14 chapters read at leisure, turn about
		add(c%3, five)
	}
	for range 6 { // 6 chapters of one Series skimmed: five records each, chapters ten seconds apart
		add(2, []time.Duration{10 * time.Second, time.Second, time.Second, 2 * time.Second, time.Second})
	}
	require.Len(t, timeline, 100)

	due := map[int64]time.Duration{} // a job's due time on the simulated clock
	runDue := func(now time.Duration) {
		ids := []int64{}
		for id, d := range due {
			if d <= now {
				ids = append(ids, id)
			}
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			for _, j := range b.syncJobs() {
				if j.ID == id {
					require.NoError(t, b.svc.Sync(context.Background(), j.Args))
					_, err := b.app.Store.Pool.Exec(context.Background(), `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`, id)
					require.NoError(t, err)
				}
			}
			delete(due, id)
		}
	}
	jobs := 0
	for _, r := range timeline {
		runDue(r.at)
		s := series[r.series]
		b.put(s.key, s.url, fmt.Sprintf("Chapter %d", r.chapter))
		for _, j := range b.syncJobs() {
			if _, seen := due[j.ID]; !seen {
				due[j.ID] = r.at + tracker.SyncDelay
				jobs++
			}
		}
	}
	runDue(at + time.Hour)

	requests := b.ani.Count("")
	writes := b.ani.Count("SaveMediaListEntry")
	t.Logf("100 Progress records, 20 chapters, 3 Series: %d sync jobs, %d requests to the tracker (%d reads, %d writes)",
		jobs, requests, b.ani.Count("MediaList"), writes)
	for i := range series {
		e, _ := b.ani.Get(int64(1000 + i))
		require.Equal(t, next[i]-1, e.Progress, "each Series ends at its last chapter")
	}
	require.Equal(t, 20, writes, "one write per chapter: repeated records of a chapter join its job or cost nothing")
	require.Equal(t, 2*writes, requests, "a read before each write")
}

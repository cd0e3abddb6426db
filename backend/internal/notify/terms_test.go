package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// A digest leaves at the first digest hour in the Reader's zone after its
// oldest chapter entered the queue, once per slot; a weekly one on Mondays.
func TestDigestSlots(t *testing.T) {
	t.Parallel()
	daily := store.TargetTerms{Mode: notify.ModeDigest, Digest: notify.DigestDaily, DigestHour: 8, TimeZone: "Europe/Berlin"}
	// 2026-12-01 is a Tuesday; Berlin is UTC+1 in December.
	require.Equal(t, at("2026-12-01T07:00:00Z"), notify.LastDigestSlot(daily, at("2026-12-01T07:00:00Z")).UTC())
	require.Equal(t, at("2026-11-30T07:00:00Z"), notify.LastDigestSlot(daily, at("2026-12-01T06:59:59Z")).UTC())
	weekly := daily
	weekly.Digest = notify.DigestWeekly
	require.Equal(t, at("2026-11-30T07:00:00Z"), notify.LastDigestSlot(weekly, at("2026-12-06T23:00:00Z")).UTC(), "the Monday before")
	require.Equal(t, at("2026-12-07T07:00:00Z"), notify.LastDigestSlot(weekly, at("2026-12-07T07:00:00Z")).UTC())
	// Summer time: 8:00 in Berlin is 06:00 UTC.
	require.Equal(t, at("2026-07-01T06:00:00Z"), notify.LastDigestSlot(daily, at("2026-07-01T12:00:00Z")).UTC())

	found := at("2026-12-01T10:00:00Z") // after today's slot
	require.False(t, notify.Due(daily, 3, found, at("2026-12-01T20:00:00Z")), "waits for tomorrow's hour, though none left today")
	require.True(t, notify.Due(daily, 3, found, at("2026-12-02T07:00:00Z")))
	sent := at("2026-12-02T07:00:30Z")
	daily.LastDigestAt = &sent
	require.False(t, notify.Due(daily, 1, found, at("2026-12-02T07:05:00Z")), "once per slot")
	require.False(t, notify.Due(daily, 0, time.Time{}, at("2026-12-03T07:00:00Z")), "nothing waiting, nothing sent")

	th := store.TargetTerms{Mode: notify.ModeThreshold, Threshold: 3}
	require.False(t, notify.Due(th, 2, found, found))
	require.True(t, notify.Due(th, 3, found, found))
	require.True(t, notify.Due(store.TargetTerms{Mode: notify.ModeEach}, 1, found, found))
}

// Through the real queue: a threshold target hears nothing until enough
// unread chapters wait and then hears of all of them in one message; a
// digest target on a fake clock sends at its hour; a muted Series reaches
// no target, and chapters the Reader has read meanwhile are dropped.
func TestTermsThroughTheQueue(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := newStub(t)
	ctx := context.Background()
	clock := time.Now()
	n := &notify.Notifier{Store: w.st, Sender: &notify.Sender{HTTP: s.gate(), BaseURL: base, Box: testBox},
		Now: func() time.Time { return clock }}
	svc := newService(w.st, nil)

	mo := w.reader("mo")
	solo := w.hold(mo, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "")
	peak := w.hold(mo, "https://demonicscans.org/manga/Martial-Peak", "")
	novel := w.hold(mo, "https://novelfull.com/reverend-insanity.html", "")
	th, err := svc.AddTarget(ctx, mo.ID, notify.TargetSpec{URL: "jsons://hooks.test/threshold", Mode: notify.ModeThreshold, Threshold: 3})
	require.NoError(t, err)
	hour := (clock.UTC().Hour() + 2) % 24
	dg, err := svc.AddTarget(ctx, mo.ID, notify.TargetSpec{URL: "jsons://hooks.test/digest", Mode: notify.ModeDigest, DigestHour: &hour, TimeZone: "UTC"})
	require.NoError(t, err)

	scanAndDeliver := func() {
		t.Helper()
		_, _, err := w.st.QueueDeliveries(ctx, notify.ScanWindow)
		require.NoError(t, err)
		for _, id := range []int64{th.ID, dg.ID} {
			require.NoError(t, n.Deliver(ctx, id, false))
		}
	}
	for _, k := range []string{solo, peak, novel} {
		w.poll(k, "", "Chapter 1", 1, false) // Acquisitions
	}
	require.NoError(t, w.st.SetMute(ctx, mo.ID, novel, true))
	w.poll(solo, "Solo Leveling", "Chapter 2", 2, false)
	w.poll(novel, "Reverend Insanity", "Chapter 2", 2, false)
	scanAndDeliver()
	require.Empty(t, s.requests(""), "one unread chapter is below the threshold, the digest hour is away, the novel is muted")

	w.poll(peak, "Martial Peak", "Chapter 2", 2, false)
	w.poll(solo, "Solo Leveling", "Chapter 3", 3, false)
	scanAndDeliver()
	got := s.requests("/threshold")
	require.Len(t, got, 1, "three unread chapters: one message")
	require.Len(t, decode[notify.WebhookBody](t, got[0].Body).Chapters, 3)
	require.Empty(t, s.requests("/digest"))

	// Read elsewhere before the digest: dropped from it.
	_, err = w.st.PutBookmark(ctx, mo.ID, store.NewSeries{Key: peak, Site: "demonic", Kind: "manga", SeriesURL: "https://demonicscans.org/manga/Martial-Peak"},
		"", store.Progress{Chapter: "Chapter 2", ChapterNumber: ptr(2.0)})
	require.NoError(t, err)

	clock = clock.Add(2*time.Hour + time.Hour) // past the digest hour
	scanAndDeliver()
	got = s.requests("/digest")
	require.Len(t, got, 1, "the digest left at its hour")
	chapters := decode[notify.WebhookBody](t, got[0].Body).Chapters
	require.Len(t, chapters, 2, "Solo Leveling 2 and 3; Martial Peak was read, the novel is muted")
	scanAndDeliver()
	require.Len(t, s.requests("/digest"), 1, "once per slot")
	require.Zero(t, w.count(`SELECT count(*) FROM notify_deliveries WHERE history_id IN
		(SELECT id FROM latest_chapter_history WHERE series_key = $1)`, novel), "a muted Series is never queued")
}

func ptr[T any](v T) *T { return &v }

package notify_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/notify"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// A Work's new chapter is news once (issue 21): from the first of its Sites
// that has it, naming that Site and linking its chapter; and not at all
// when the Reader already read it on another member.
func TestAWorksChapterIsSentOnceFromTheFirstSite(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := newStub(t)
	rc, n := queue(t, w, s)
	ctx := context.Background()

	alice := w.reader("alice")
	asura := w.hold(alice, "https://asurascans.com/comics/omniscient-readers-viewpoint-5e6f7a8b", "Chapter 120")
	demonic := w.hold(alice, "https://demonicscans.org/manga/Omniscient-Readers-Viewpoint", "")
	_, err := w.st.CreateWork(ctx, alice.ID, []string{asura, demonic})
	require.NoError(t, err)
	hook := w.target(alice, notify.KindWebhook, "https://hooks.test/alice")

	scan := func() int {
		t.Helper()
		q, err := n.Scan(ctx, rc)
		require.NoError(t, err)
		settle(t, w)
		return q
	}
	w.poll(asura, "Omniscient Reader's Viewpoint", "Chapter 120", 120, false)
	w.poll(demonic, "Omniscient Reader’s Viewpoint", "Chapter 120", 120, false)
	require.Zero(t, scan(), "Acquisitions are not news")

	// demonic has 121 first, asura a moment later: one message, demonic's.
	w.poll(demonic, "Omniscient Reader’s Viewpoint", "Chapter 121", 121, false)
	w.poll(asura, "Omniscient Reader's Viewpoint", "Chapter 121", 121, false)
	require.Equal(t, 1, scan())
	require.Zero(t, scan(), "a second scan adds nothing")
	got := s.requests("/alice")
	require.Len(t, got, 1)
	body := decode[notify.WebhookBody](t, got[0].Body)
	require.Len(t, body.Chapters, 1)
	require.Equal(t, demonic, body.Chapters[0].Key, "the Site that had it first")
	require.Equal(t, "https://demonicscans.org/title/Omniscient-Readers-Viewpoint/chapter/121/1", body.Chapters[0].ChapterURL)
	require.Equal(t, map[string]int{"sent": 1}, w.deliveries(hook.ID))

	// asura finds 122 while the scan lags; alice reads 122 on demonic
	// first: read on one member is read on the Work.
	w.poll(asura, "Omniscient Reader's Viewpoint", "Chapter 122", 122, false)
	n122 := 122.0
	_, err = w.st.PutBookmark(ctx, alice.ID, store.NewSeries{Key: demonic, Site: "demonic", Kind: "manga",
		SeriesURL: "https://demonicscans.org/manga/Omniscient-Readers-Viewpoint"}, "", store.Progress{Chapter: "Chapter 122", ChapterNumber: &n122})
	require.NoError(t, err)
	require.Zero(t, scan(), "read on demonic: asura's 122 is no news")
	require.Len(t, s.requests("/alice"), 1)

	// The feed names each Work chapter once too: demonic's 121, asura's 122.
	svc := notify.NewService(w.st, base, nil)
	secret, err := svc.NewFeedSecret(ctx, alice.ID)
	require.NoError(t, err)
	_, f := feedOf(t, svc, secret)
	require.Len(t, f.Entries, 2)
	require.Contains(t, f.Entries[0].Title, "Chapter 122")
	require.Contains(t, f.Entries[1].Title, "Chapter 121")
	require.Contains(t, f.Entries[1].link("alternate"), "demonicscans.org")

	// Unlinked, the two Sites are two Bookmarks again: what the Work held
	// back (asura's 121 and 122) stays held back; each Site's 123, found
	// after, is news on its own.
	works, err := w.st.ListWorks(ctx, alice.ID)
	require.NoError(t, err)
	_, err = w.st.RemoveFromWork(ctx, alice.ID, works[0].ID, asura)
	require.NoError(t, err)
	require.Zero(t, scan())
	w.poll(asura, "Omniscient Reader's Viewpoint", "Chapter 123", 123, false)
	w.poll(demonic, "Omniscient Reader’s Viewpoint", "Chapter 123", 123, false)
	require.Equal(t, 2, scan())
}

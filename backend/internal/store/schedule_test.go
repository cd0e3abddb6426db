package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// The plan's candidates carry the newest Latest Chapter change from the
// Series row, which a trigger keeps whoever writes the history: the newest
// first_seen_at wins, the last inserted among equals, and an older change
// recorded late does not move it back.
func TestScheduleCandidatesCarryTheNewestChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := st.Pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	exec(`INSERT INTO series (key, site, kind, series_url, readers) VALUES
		('asura:a', 'asura', 'manga', 'https://asuracomic.net/series/a', 1),
		('asura:b', 'asura', 'manga', 'https://asuracomic.net/series/b', 2),
		('asura:c', 'asura', 'manga', 'https://asuracomic.net/series/c', 0),
		('demonic:d', 'demonic', 'manga', 'https://demonicscans.org/manga/d', 1)`)
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	hist := func(key string, seen time.Time, prev *time.Time) {
		exec(`INSERT INTO latest_chapter_history (series_key, label, first_seen_at, prev_poll_at) VALUES ($1, 'x', $2, $3)`, key, seen, prev)
	}
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	hist("asura:a", t0, nil)                                // the first Latest Chapter: no release
	hist("asura:a", t0.Add(48*time.Hour), at(47*time.Hour)) // newest
	hist("asura:a", t0.Add(24*time.Hour), at(23*time.Hour)) // older, recorded late
	hist("asura:b", t0, nil)
	hist("asura:b", t0, at(-time.Hour)) // equal time: the last inserted wins

	cands, err := st.ScheduleCandidates(ctx, "asura")
	require.NoError(t, err)
	require.Len(t, cands, 2, "held Series of the Site only")
	require.Equal(t, "asura:a", cands[0].Key, "by key")
	require.True(t, cands[0].LastChangeAt.Equal(t0.Add(48*time.Hour)))
	require.NotNil(t, cands[0].LastRelease)
	require.True(t, cands[0].LastRelease.After.Equal(t0.Add(47*time.Hour)))
	require.Equal(t, "asura:b", cands[1].Key)
	require.True(t, cands[1].LastChangeAt.Equal(t0))
	require.True(t, cands[1].LastRelease.After.Equal(t0.Add(-time.Hour)))

	sites, err := st.HeldSites(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"asura", "demonic"}, sites)
	exec(`UPDATE series SET readers = 0 WHERE key = 'demonic:d'`)
	sites, err = st.HeldSites(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"asura"}, sites, "a Site nobody holds a Series of is not planned")
}

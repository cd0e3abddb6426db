package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// A listing's state round-trips, and the share of the budget it was given
// is the largest of the last hour, so an hour never holds a larger plan's
// reads beside a smaller plan's Series polls.
func TestSiteListingState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

	l, err := st.SiteListingOf(ctx, "royalroad")
	require.NoError(t, err)
	require.Equal(t, store.ListingNew, l.State, "never read: new")

	l.State, l.GoodReads, l.ReadAt, l.Entries, l.Rate = store.ListingHealthy, 3, &now, 20, 4.5
	l.Seen = []string{"royalroad:1|Chapter 2"}
	l.Reads = []store.ListingRead{{At: now, Fresh: 2}}
	require.NoError(t, st.SaveSiteListing(ctx, l))
	got, err := st.SiteListingOf(ctx, "royalroad")
	require.NoError(t, err)
	require.Equal(t, store.ListingHealthy, got.State)
	require.Equal(t, []string{"royalroad:1|Chapter 2"}, got.Seen)
	require.Equal(t, 2, got.Reads[0].Fresh)
	require.InDelta(t, 4.5, got.Rate, 1e-9)

	require.NoError(t, st.SetListingReserve(ctx, "royalroad", 40, now))
	require.NoError(t, st.SetListingReserve(ctx, "royalroad", 25, now.Add(10*time.Minute)))
	n, err := st.ListingReserve(ctx, "royalroad", now.Add(20*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 40, n, "the larger plan of the hour holds")
	require.NoError(t, st.SetListingReserve(ctx, "royalroad", 25, now.Add(61*time.Minute)))
	n, err = st.ListingReserve(ctx, "royalroad", now.Add(62*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 25, n, "an hour later the smaller plan's share is the one")
	got, err = st.SiteListingOf(ctx, "royalroad")
	require.NoError(t, err)
	require.Equal(t, store.ListingHealthy, got.State, "the reserve leaves the state alone")
}

package poll

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fetch"
)

// A series page that answers 404/410, the Site's not-found page or a
// redirect off the Site marks its Series gone, with the reason, only once
// it has had no successful poll for more than store.GoneAfter; its
// Bookmarks stay, and a gone Series is not polled again.
func TestASeriesPageGoneForThreeDaysMarksItsSeriesGone(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	ctx := context.Background()
	for _, tc := range []struct {
		slug, why string
		body      []byte
		err       func(url string) error
	}{
		{slug: "deleted", why: "the series page answers 404 Not Found",
			err: func(u string) error { return &fetch.StatusError{Status: http.StatusNotFound, URL: u} }},
		{slug: "taken-down", why: "the series page answers 410 Gone",
			err: func(u string) error { return &fetch.StatusError{Status: http.StatusGone, URL: u} }},
		{slug: "moved-away", why: "the series page redirects off the Site",
			err: func(u string) error { return fmt.Errorf("redirect to elsewhere.example: %w", fetch.ErrForeignHost) }},
		{slug: "soft-404", why: "the series page is the Site's not-found page",
			body: []byte(`<html><head><title>404 Not Found</title></head><body>Page not found</body></html>`)},
	} {
		ser := e.hold(site, tc.slug, 1)
		var ferr error
		if tc.err != nil {
			ferr = tc.err(ser.SeriesURL)
		}
		e.fetch.set(ser.SeriesURL, tc.body, ferr)

		// A day of failures is a Site's bad day, not a death.
		e.exec(`UPDATE series SET last_success_at = now() - interval '1 day' WHERE key = $1`, ser.Key)
		require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}), tc.slug)
		reason, err := e.st.SeriesGone(ctx, ser.Key)
		require.NoError(t, err)
		require.Equal(t, "", reason, tc.slug)

		e.exec(`UPDATE series SET last_success_at = now() - interval '3 days 1 hour' WHERE key = $1`, ser.Key)
		require.NoError(t, e.poller.Poll(ctx, ser.Key, time.Time{}), tc.slug)
		reason, err = e.st.SeriesGone(ctx, ser.Key)
		require.NoError(t, err)
		require.Equal(t, tc.why, reason, tc.slug)
		var held int
		require.NoError(t, e.st.Pool.QueryRow(ctx, `SELECT count(*) FROM bookmarks WHERE series_key = $1`, ser.Key).Scan(&held))
		require.Equal(t, 1, held, "the Bookmark stays")
	}

	// A 500 is not gone however long it lasts: the Site may come back.
	ser := e.hold(site, "flaky", 1)
	e.fetch.set(ser.SeriesURL, nil, &fetch.StatusError{Status: http.StatusInternalServerError, URL: ser.SeriesURL})
	e.exec(`UPDATE series SET last_success_at = now() - interval '30 days' WHERE key = $1`, ser.Key)
	_ = e.poller.Poll(ctx, ser.Key, time.Time{})
	reason, err := e.st.SeriesGone(ctx, ser.Key)
	require.NoError(t, err)
	require.Equal(t, "", reason)

	candidates, err := e.st.PollCandidates(ctx, time.Now().Add(24*time.Hour))
	require.NoError(t, err)
	for _, c := range candidates {
		require.Contains(t, []string{ser.Key}, c.Key, "gone Series are not polled")
	}
}

// A Site that lists alternative titles has them recorded with the poll,
// for the Works suggestions.
func TestPollRecordsAlternativeTitles(t *testing.T) {
	t.Parallel()
	e := newPollEnv(t, time.Hour)
	site := e.newSite()
	site.AltTitles = func([]byte, *url.URL) []string { return []string{"Tourou no Deshi", "灯籠の弟子"} }
	ser := e.hold(site, "alt", 1)
	e.fetch.set(ser.SeriesURL, seriesBody("The Lantern Keeper's Apprentice", "", 3), nil)
	require.NoError(t, e.poller.Poll(context.Background(), ser.Key, time.Time{}))
	var got []string
	require.NoError(t, e.st.Pool.QueryRow(context.Background(), `SELECT alt_titles FROM series WHERE key = $1`, ser.Key).Scan(&got))
	require.Equal(t, []string{"Tourou no Deshi", "灯籠の弟子"}, got)
}

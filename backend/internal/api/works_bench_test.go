package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
)

// BenchmarkListWithWorks: GET /api/bookmarks for a Reader with 1,000
// Bookmarks, all in 300 Works (200 of three members, 100 of four), against the
// same Reader's list without Works; the list cache is off so every request
// reads, renders and encodes. The figure for the closing note is the
// ratio of the two ns/op.
func BenchmarkListWithWorks(b *testing.B) {
	app := apptest.New(b, apptest.Options{PublicBaseURL: testBase, Config: func(c *config.Config) { c.ListCacheBytes = 0 }})
	ctx := context.Background()
	linked := app.Reader("linked", false)
	plain := app.Reader("plain", false)
	tokLinked, tokPlain := app.NewToken(linked), app.NewToken(plain)
	_, err := app.Store.Pool.Exec(ctx, `
		INSERT INTO series (key, site, kind, series_url, title, latest_label, latest_number, latest_url, latest_at)
		SELECT 'asura:bench-' || i, 'asura', 'manga', 'https://asurascans.com/comics/bench-' || i || '-1a2b3c4d',
		       'A Series Long Enough To Be Realistic, Number ' || i, 'Chapter ' || (100 + i % 7), 100 + i % 7,
		       'https://asurascans.com/comics/bench-' || i || '-1a2b3c4d/chapter/' || (100 + i % 7), now() - i * interval '1 minute'
		FROM generate_series(1, 1000) i`)
	require.NoError(b, err)
	for _, r := range []int64{linked.ID, plain.ID} {
		_, err = app.Store.Pool.Exec(ctx, `
			INSERT INTO bookmarks (reader_id, series_key, chapter, chapter_number, chapter_url, progress_at)
			SELECT $1, 'asura:bench-' || i, 'Chapter ' || (98 + i % 5), 98 + i % 5,
			       'https://asurascans.com/comics/bench-' || i || '-1a2b3c4d/chapter/' || (98 + i % 5), now()
			FROM generate_series(1, 1000) i`, r)
		require.NoError(b, err)
	}
	i := 1
	for w := 0; w < 300; w++ {
		size := 3
		if w >= 200 {
			size = 4
		}
		keys := make([]string, size)
		for k := range keys {
			keys[k] = fmt.Sprintf("asura:bench-%d", i)
			i++
		}
		_, err := app.Store.CreateWork(ctx, linked.ID, keys)
		require.NoError(b, err)
	}
	require.Equal(b, 300, app.Count(`SELECT count(*) FROM works`))
	require.Equal(b, 1000, app.Count(`SELECT count(*) FROM bookmarks WHERE work_id IS NOT NULL`))

	for _, tc := range []struct{ name, tok string }{{"without_works", tokPlain}, {"with_works", tokLinked}} {
		b.Run(tc.name, func(b *testing.B) {
			var size int
			for b.Loop() {
				r := app.Do(http.MethodGet, "/api/bookmarks", tc.tok, nil)
				if r.Code != http.StatusOK {
					b.Fatalf("%d %s", r.Code, r.Body)
				}
				size = len(r.Body)
			}
			b.ReportMetric(float64(size)/1024, "KB/body")
		})
	}
}

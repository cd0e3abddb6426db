package portability_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/portability"
)

// BenchmarkImport5000 imports a 5,000-line URL list (5,000 new Series, each
// with its Acquisition queued) in one transaction; the reference records the
// same 5,000 Bookmarks one PUT at a time through Library.Put, as the
// userscript would. Every iteration uses Series nobody holds yet.
func BenchmarkImport5000(b *testing.B) {
	bb := setup(b)
	ctx := context.Background()
	const n = 5000
	round := 0
	list := func() []byte {
		round++
		var buf bytes.Buffer
		for i := range n {
			fmt.Fprintf(&buf, "https://asurascans.com/comics/r%d-series-%d-a1b2c3d4\tChapter %d\n", round, i, i%300+1)
		}
		return buf.Bytes()
	}
	b.Run("import", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			body := list()
			reader := bb.reader(fmt.Sprintf("import-%d", round))
			b.StartTimer()
			rep, err := bb.im.Import(ctx, reader, portability.URLs, body, portability.Options{})
			require.NoError(b, err)
			require.Equal(b, n, rep.SeriesCreated)
		}
	})
	b.Run("put-each-reference", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			body := list()
			reader := bb.reader(fmt.Sprintf("put-%d", round))
			lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
			b.StartTimer()
			for _, line := range lines {
				u, ch, _ := bytes.Cut(line, []byte("\t"))
				ref, err := latest.Default().Resolve(string(u))
				require.NoError(b, err)
				_, _, err = bb.lib.Put(ctx, reader, ref.Key, bookmark.PutRequest{Site: ref.Site, SeriesURL: string(u), Chapter: string(ch)})
				require.NoError(b, err)
			}
		}
	})
}

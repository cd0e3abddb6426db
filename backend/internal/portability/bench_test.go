package portability_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/portability"
	"github.com/lectern-reader/lectern/backend/internal/portability/mihonpb"
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

// BenchmarkImportMAL2000 imports a 2,000-entry MyAnimeList XML export
// (Lectern's own, so every entry places: 2,000 new Series with their
// Acquisitions and MyAnimeList mappings), gzip-compressed as .xml.gz.
func BenchmarkImportMAL2000(b *testing.B) {
	bb := setup(b)
	ctx := context.Background()
	const n = 2000
	round := 0
	file := func() []byte {
		round++
		var buf bytes.Buffer
		buf.WriteString(`<?xml version="1.0" encoding="UTF-8" ?>` + "\n<myanimelist>\n\t<myinfo><user_export_type>2</user_export_type></myinfo>\n")
		for i := range n {
			fmt.Fprintf(&buf, "\t<manga>\n\t\t<manga_mangadb_id>%d</manga_mangadb_id>\n\t\t<manga_title><![CDATA[Series %d of round %d]]></manga_title>\n"+
				"\t\t<my_read_chapters>%d</my_read_chapters>\n\t\t<my_status>Reading</my_status>\n"+
				"\t\t<lectern_series_url>https://asurascans.com/comics/m%d-series-%d-a1b2c3d4</lectern_series_url>\n\t</manga>\n",
				round*100000+i+1, i, round, i%300+1, round, i)
		}
		buf.WriteString("</myanimelist>\n")
		return gzBytes(b, buf.Bytes())
	}
	for b.Loop() {
		b.StopTimer()
		body := file()
		reader := bb.reader(fmt.Sprintf("mal-%d", round))
		b.StartTimer()
		rep, err := bb.im.Import(ctx, reader, portability.MAL, body, portability.Options{})
		require.NoError(b, err)
		require.Equal(b, n, rep.SeriesCreated)
		require.Equal(b, n, rep.TrackersMapped)
	}
}

// BenchmarkImportMihon2000 imports a 2,000-manga Mihon backup (each with 60
// chapters, 40 of them read, and two trackers), gzip'd protobuf as a
// .tachibk is.
func BenchmarkImportMihon2000(b *testing.B) {
	bb := setup(b)
	ctx := context.Background()
	const n = 2000
	round := 0
	file := func() []byte {
		round++
		backup := &mihonpb.Backup{BackupSources: []*mihonpb.BackupSource{{Name: "Asura Scans", SourceId: 1}}}
		for i := range n {
			path := fmt.Sprintf("/comics/k%d-series-%d-a1b2c3d4", round, i)
			m := &mihonpb.BackupManga{Source: 1, Url: path, Title: fmt.Sprintf("Series %d", i), Favorite: true, DateAdded: 1690000000000,
				Tracking: []*mihonpb.BackupTracking{{SyncId: 2, MediaId: int64(round*100000 + i + 1)}, {SyncId: 1, MediaId: int64(round*100000 + i + 1)}}}
			for c := 1; c <= 60; c++ {
				m.Chapters = append(m.Chapters, &mihonpb.BackupChapter{Url: fmt.Sprintf("%s/chapter/%d", path, c), Name: fmt.Sprintf("Chapter %d", c),
					Read: c <= 40, ChapterNumber: float32(c)})
			}
			backup.BackupManga = append(backup.BackupManga, m)
		}
		raw, err := proto.Marshal(backup)
		require.NoError(b, err)
		return gzBytes(b, raw)
	}
	for b.Loop() {
		b.StopTimer()
		body := file()
		reader := bb.reader(fmt.Sprintf("mihon-%d", round))
		b.StartTimer()
		rep, err := bb.im.Import(ctx, reader, portability.Mihon, body, portability.Options{})
		require.NoError(b, err)
		require.Equal(b, n, rep.SeriesCreated)
		require.Equal(b, 2*n, rep.TrackersMapped)
	}
}

func gzBytes(tb testing.TB, raw []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(raw)
	require.NoError(tb, err)
	require.NoError(tb, zw.Close())
	return buf.Bytes()
}

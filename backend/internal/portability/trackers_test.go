package portability_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/lectern-reader/lectern/backend/internal/portability"
	"github.com/lectern-reader/lectern/backend/internal/portability/mihonpb"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

const (
	soloURL = "https://asurascans.com/comics/solo-leveling-1a2b3c4d"
	orvURL  = "https://asurascans.com/comics/omniscient-reader-9f8e7d6c"
)

func (b *bundle) mapMAL(readerID int64, key, id string) {
	b.t.Helper()
	_, _, err := b.st.PutTrackerEntry(context.Background(), readerID, key, "myanimelist", id, "", store.EntryByReader)
	require.NoError(b.t, err)
}

func (b *bundle) exportMAL(readerID int64) string {
	b.t.Helper()
	exp, err := portability.Build(context.Background(), b.st, readerID, base, time.Now())
	require.NoError(b.t, err)
	f, err := exp.Render("mal", time.Now())
	require.NoError(b.t, err)
	require.Equal(b.t, "application/xml; charset=utf-8", f.ContentType)
	require.True(b.t, strings.HasSuffix(f.Name, ".xml"))
	return string(f.Body)
}

var xmlComment = regexp.MustCompile(`<!--.*-->\n`)

// Lectern's MAL export imports into another Reader exactly: every entry
// placed (by the Series URL Lectern adds), the Progress with its
// fraction, the MyAnimeList mapping; exporting again gives the same
// document. MyAnimeList's own fields are what its importer reads.
func TestMALXMLRoundTrips(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.reader("ann")
	b.put(ann, soloURL, "Solo Leveling", "Chapter 12.5", soloURL+"/chapter/12.5")
	b.put(ann, orvURL, "Omniscient Reader", "Chapter 3", "")
	b.put(ann, "https://demonicscans.org/manga/Martial-Peak", "Martial Peak", "Chapter 1", "")
	b.mapMAL(ann, "asura:solo-leveling", "151807")
	b.mapMAL(ann, "asura:omniscient-reader", "132214")

	doc := b.exportMAL(ann)
	require.True(t, strings.HasPrefix(doc, `<?xml version="1.0" encoding="UTF-8"?>`))
	require.Contains(t, doc, "1 Bookmark(s) without a MyAnimeList entry are left out")
	require.Contains(t, doc, "<manga_mangadb_id>151807</manga_mangadb_id>")
	require.Contains(t, doc, "<manga_title><![CDATA[Solo Leveling]]></manga_title>")
	require.Contains(t, doc, "<my_read_chapters>12</my_read_chapters>", "the whole part")
	require.Contains(t, doc, "<my_status>Reading</my_status>")
	require.Contains(t, doc, "<user_total_manga>2</user_total_manga>")

	bob := b.reader("bob")
	for _, body := range [][]byte{[]byte(doc), gz(t, []byte(doc))} {
		rep, err := b.im.Import(context.Background(), bob, portability.MAL, body, portability.Options{DryRun: true})
		require.NoError(t, err)
		require.Equal(t, 2, rep.Created, "%+v", rep)
		require.Empty(t, rep.Unplaced)
	}
	rep, err := b.im.Import(context.Background(), bob, portability.MAL, gz(t, []byte(doc)), portability.Options{})
	require.NoError(t, err)
	require.True(t, rep.Applied)
	require.Equal(t, 2, rep.Created)
	require.Equal(t, 2, rep.TrackersMapped)
	again := b.exportMAL(bob)
	require.Equal(t, xmlComment.ReplaceAllString(doc, ""), xmlComment.ReplaceAllString(again, ""))
	got, err := b.st.GetBookmark(context.Background(), bob, "asura:solo-leveling")
	require.NoError(t, err)
	require.Equal(t, "Chapter 12.5", got.Chapter)
	require.Equal(t, 12.5, *got.ChapterNumber)
	require.Equal(t, soloURL+"/chapter/12.5", got.ChapterURL)
}

// A file from MyAnimeList itself names entries by id only: the Reader's
// own mappings and the ids Sites published place them, the rest are listed
// as not placeable and do not stop the import.
func TestMALExportFromMyAnimeList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.reader("ann")
	b.put(ann, soloURL, "Solo Leveling", "Chapter 10", "")
	b.mapMAL(ann, "asura:solo-leveling", "151807")
	b.put(b.reader("carol"), orvURL, "Omniscient Reader", "", "")
	require.NoError(t, b.st.SetSeriesTrackerIDs(context.Background(), "asura:omniscient-reader", map[string]string{"myanimelist": "132214"}))
	file := `<?xml version="1.0" encoding="UTF-8" ?>
<myanimelist>
	<myinfo><user_id>1</user_id><user_name>ann</user_name><user_export_type>2</user_export_type></myinfo>
	<manga>
		<manga_mangadb_id>151807</manga_mangadb_id>
		<manga_title><![CDATA[Solo Leveling]]></manga_title>
		<my_read_chapters>179</my_read_chapters>
		<my_status>Reading</my_status>
	</manga>
	<manga>
		<manga_mangadb_id>132214</manga_mangadb_id>
		<manga_title><![CDATA[Omniscient Reader]]></manga_title>
		<my_read_chapters>0</my_read_chapters>
		<my_status>Plan to Read</my_status>
	</manga>
	<manga>
		<manga_mangadb_id>2</manga_mangadb_id>
		<manga_title><![CDATA[Berserk]]></manga_title>
		<my_read_chapters>364</my_read_chapters>
		<my_status>Reading</my_status>
	</manga>
</myanimelist>
`
	rep, err := b.im.Import(context.Background(), ann, portability.MAL, []byte(file), portability.Options{})
	require.NoError(t, err)
	require.True(t, rep.Applied, "%+v", rep)
	require.Equal(t, 1, rep.Updated, "10 → 179")
	require.Equal(t, 1, rep.Created, "placed by the id its Site published")
	require.Equal(t, 1, rep.TrackersMapped)
	require.Len(t, rep.Unplaced, 1)
	require.Equal(t, "Berserk", rep.Unplaced[0].Title)
	require.Equal(t, map[string]string{"myanimelist": "2"}, rep.Unplaced[0].Trackers)
	require.Equal(t, 16, rep.Unplaced[0].Line, "the line of its <manga>")
	got, err := b.st.GetBookmark(context.Background(), ann, "asura:solo-leveling")
	require.NoError(t, err)
	require.Equal(t, "Chapter 179", got.Chapter)

	for _, bad := range []string{`{"format":"lectern-export"}`, `<myanimelist><anime><series_animedb_id>1</series_animedb_id></anime></myanimelist>`,
		`<myanimelist><manga><manga_mangadb_id>x</manga_mangadb_id>`, "\x1f\x8bnot gzip"} {
		rep, err := b.im.Import(context.Background(), ann, portability.MAL, []byte(bad), portability.Options{DryRun: true})
		if err == nil {
			require.True(t, rep.Refused, "%q", bad)
			continue
		}
		require.ErrorIs(t, err, portability.ErrUnreadable, "%q", bad)
	}
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// mihonBackup builds a .tachibk from the message definitions: a library
// with an Asura Scans manga (read up to 8.5, tracked on AniList and
// MyAnimeList), a manga of a source Lectern has no Site for, one placed by
// a tracker id a Site published, and a history-only manga.
func mihonBackup(t *testing.T) []byte {
	t.Helper()
	const asura, mangadex = int64(6247824327199706550), int64(2499283573021220255)
	ch := func(n float32, name string, read bool) *mihonpb.BackupChapter {
		return &mihonpb.BackupChapter{Url: "/comics/solo-leveling-1a2b3c4d/chapter/" + strings.TrimPrefix(name, "Chapter "), Name: name,
			Read: read, ChapterNumber: n, DateUpload: 1700000000000}
	}
	b := &mihonpb.Backup{
		BackupSources: []*mihonpb.BackupSource{{Name: "Asura Scans", SourceId: asura}, {Name: "MangaDex", SourceId: mangadex}},
		BackupManga: []*mihonpb.BackupManga{
			{
				Source: asura, Url: "/comics/solo-leveling-1a2b3c4d", Title: "Solo Leveling", Favorite: true, DateAdded: 1690000000000,
				Chapters: []*mihonpb.BackupChapter{ch(7, "Chapter 7", true), ch(8, "Chapter 8", true), ch(8.5, "Chapter 8.5", true),
					ch(9, "Chapter 9", false), ch(10, "Chapter 10", false)},
				History: []*mihonpb.BackupHistory{{Url: "/comics/solo-leveling-1a2b3c4d/chapter/8.5", LastRead: 1700000500000}},
				Tracking: []*mihonpb.BackupTracking{
					{SyncId: 2, MediaId: 105398, Title: "Solo Leveling", LastChapterRead: 8},
					{SyncId: 1, MediaId: 121496, LastChapterRead: 8},
					{SyncId: 3, MediaId: 41150}, // Kitsu: not a tracker Lectern knows
				},
				Categories: []int64{1, 2},
			},
			{Source: mangadex, Url: "/title/9bb0f0a6-not-here", Title: "Frieren", Favorite: true,
				Tracking: []*mihonpb.BackupTracking{{SyncId: 2, MediaId: 118586, LastChapterRead: 120}}},
			{Source: mangadex, Url: "/title/0ba0-orv", Title: "Omniscient Reader", Favorite: true,
				Tracking: []*mihonpb.BackupTracking{{SyncId: 7, MediaId: 33337, LastChapterRead: 55.5}}},
			{Source: asura, Url: "/comics/omniscient-reader-9f8e7d6c", Title: "Read once", Favorite: false},
		},
	}
	raw, err := proto.Marshal(b)
	require.NoError(t, err)
	return gz(t, raw)
}

func TestMihonBackupImports(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.reader("ann")
	b.put(b.reader("carol"), orvURL, "Omniscient Reader", "", "")
	require.NoError(t, b.st.SetSeriesTrackerIDs(context.Background(), "asura:omniscient-reader", map[string]string{"mangaupdates": "33337"}))

	file := mihonBackup(t)
	rep, err := b.im.Import(context.Background(), ann, portability.Mihon, file, portability.Options{DryRun: true})
	require.NoError(t, err)
	require.False(t, rep.Applied)
	require.Equal(t, 2, rep.Created, "%+v", rep)
	require.Len(t, rep.Unplaced, 2)

	rep, err = b.im.Import(context.Background(), ann, portability.Mihon, file, portability.Options{})
	require.NoError(t, err)
	require.True(t, rep.Applied, "%+v", rep)
	require.Equal(t, 2, rep.Created)
	require.Equal(t, 3, rep.TrackersMapped, "AniList and MyAnimeList of one, MangaUpdates of the other")
	reasons := map[string]string{}
	for _, u := range rep.Unplaced {
		reasons[u.Title] = u.Reason
	}
	require.Contains(t, reasons["Frieren"], "MangaDex is not a Site Lectern knows")
	require.Contains(t, reasons["Read once"], "not in the Mihon library")

	got, err := b.st.GetBookmark(context.Background(), ann, "asura:solo-leveling")
	require.NoError(t, err)
	require.Equal(t, "Chapter 8.5", got.Chapter, "the furthest read chapter")
	require.Equal(t, 8.5, *got.ChapterNumber)
	require.Equal(t, soloURL+"/chapter/8.5", got.ChapterURL)
	require.Equal(t, time.UnixMilli(1700000500000).UTC(), got.ProgressAt.UTC(), "when Mihon says it was read")
	require.Equal(t, time.UnixMilli(1690000000000).UTC(), got.CreatedAt.UTC())
	entries, err := b.st.TrackerEntries(context.Background(), ann, "asura:solo-leveling", "")
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.Equal(t, "anilist", entries[0].Tracker)
	require.Equal(t, "105398", entries[0].EntryID)
	require.Equal(t, store.EntryByImport, entries[0].Source)

	got, err = b.st.GetBookmark(context.Background(), ann, "asura:omniscient-reader")
	require.NoError(t, err)
	require.Equal(t, "Chapter 55", got.Chapter, "no chapter read in the backup: the tracker's count")

	_, err = b.im.Import(context.Background(), ann, portability.Mihon, []byte("\x1f\x8b\x08\x00garbage"), portability.Options{})
	require.ErrorIs(t, err, portability.ErrUnreadable)
	_, err = b.im.Import(context.Background(), ann, portability.Mihon, gz(t, []byte("not protobuf at all, \xff\xff\xff")), portability.Options{})
	require.ErrorIs(t, err, portability.ErrUnreadable)
}

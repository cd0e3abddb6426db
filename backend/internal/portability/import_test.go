package portability_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/bookmark"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/portability"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const base = "https://lectern.example.net"

type bundle struct {
	t   testing.TB
	st  *store.Store
	lib *bookmark.Service
	im  *portability.Importer
}

// setup gives a fresh database with the Library wired as in production:
// the Acquirer inserts real River jobs (an insert-only client).
func setup(t testing.TB) *bundle {
	t.Helper()
	st := store.New(pgtest.New(t))
	rc, err := river.NewClient(riverpgxv5.New(st.Pool), &river.Config{})
	require.NoError(t, err)
	lib := &bookmark.Service{Store: st, Registry: latest.Default(), Acquire: poll.Acquirer{Client: rc}, BaseURL: base}
	return &bundle{t: t, st: st, lib: lib, im: &portability.Importer{Bookmarks: lib}}
}

func (b *bundle) reader(name string) int64 {
	b.t.Helper()
	r, err := b.st.CreateReader(context.Background(), name, "not-a-real-hash", false)
	require.NoError(b.t, err)
	return r.ID
}

func (b *bundle) put(readerID int64, seriesURL, title, chapter, chapterURL string) {
	b.t.Helper()
	ref, err := latest.Default().Resolve(seriesURL)
	require.NoError(b.t, err)
	_, _, err = b.lib.Put(context.Background(), readerID, ref.Key, bookmark.PutRequest{
		Site: ref.Site, SeriesURL: seriesURL, Title: title, Chapter: chapter, ChapterURL: chapterURL})
	require.NoError(b.t, err)
}

func (b *bundle) exportJSON(readerID int64) []byte {
	b.t.Helper()
	exp, err := portability.Build(context.Background(), b.st, readerID, base, time.Now())
	require.NoError(b.t, err)
	var buf bytes.Buffer
	require.NoError(b.t, exp.WriteJSON(&buf))
	return buf.Bytes()
}

func (b *bundle) exportCSV(readerID int64) []byte {
	b.t.Helper()
	exp, err := portability.Build(context.Background(), b.st, readerID, base, time.Now())
	require.NoError(b.t, err)
	var buf bytes.Buffer
	require.NoError(b.t, exp.WriteCSV(&buf))
	return buf.Bytes()
}

func (b *bundle) count(sql string, args ...any) int {
	b.t.Helper()
	var n int
	require.NoError(b.t, b.st.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func (b *bundle) progress(readerID int64, key string) (string, *float64) {
	b.t.Helper()
	bm, err := b.st.GetBookmark(context.Background(), readerID, key)
	require.NoError(b.t, err)
	return bm.Chapter, bm.ChapterNumber
}

// withoutVolatile drops exported_at, the one field of an export that
// differs between two exports of the same Bookmarks.
func withoutVolatile(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(doc, &m))
	require.NotEmpty(t, m["exported_at"])
	delete(m, "exported_at")
	return m
}

// A Library with every kind of Progress: decimals, none, a label without a
// number, a chapter URL, a title a spreadsheet would run as a formula and
// one with markup, a Series with facts the Poll found.
func (b *bundle) richLibrary(readerID int64) {
	b.put(readerID, "https://asurascans.com/comics/solo-max-level-newbie-1a2b3c4d", `=HYPERLINK("http://evil.example","x") <b>&amp;`, "Chapter 12.5",
		"https://asurascans.com/comics/solo-max-level-newbie-1a2b3c4d/chapter/12.5")
	b.put(readerID, "https://demonicscans.org/manga/Martial-Peak", "martial peak (my hint)", "Prologue", "")
	b.put(readerID, "https://novelfull.com/reverend-insanity.html", "Reverend Insanity", "", "")
	b.put(readerID, "https://www.lightnovelworld.com/novel/shadow-slave-05122222", "-Shadow Slave-", "Chapter 2,101", "")
	ctx := context.Background()
	_, err := b.st.Pool.Exec(ctx, `
		UPDATE series SET title = 'Martial Peak', latest_label = 'Chapter 3800', latest_number = 3800,
		       latest_url = 'https://demonicscans.org/title/Martial-Peak/chapter/3800/1', latest_at = '2025-05-01T10:00:00.123456Z'
		WHERE key = 'demonic:Martial-Peak'`)
	require.NoError(b.t, err)
}

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	alice := b.reader("alice")
	b.richLibrary(alice)
	// Bookmarks made on different days keep their order and times.
	_, err := b.st.Pool.Exec(ctx, `UPDATE bookmarks SET created_at = created_at - interval '3 days' * (ascii(series_key) % 5),
		progress_at = progress_at - interval '1 hour' WHERE reader_id = $1`, alice)
	require.NoError(t, err)

	first := b.exportJSON(alice)
	var doc portability.Export
	require.NoError(t, json.Unmarshal(first, &doc))
	require.Equal(t, "lectern-export", doc.Format)
	require.Equal(t, 1, doc.Version)
	require.Len(t, doc.Bookmarks, 4)

	t.Run("JSON", func(t *testing.T) {
		bob := b.reader("bob")
		rep, err := b.im.Import(ctx, bob, portability.Lectern, first, portability.Options{})
		require.NoError(t, err)
		require.True(t, rep.Applied)
		require.Empty(t, rep.Errors)
		require.Equal(t, 4, rep.Created)
		require.Zero(t, rep.SeriesCreated, "the Series exist already on this deployment")
		require.Equal(t, withoutVolatile(t, first), withoutVolatile(t, b.exportJSON(bob)))
	})
	t.Run("CSV", func(t *testing.T) {
		carol := b.reader("carol")
		csvFile := b.exportCSV(alice)
		require.Contains(t, string(csvFile), `"'=HYPERLINK(""http://evil.example"",""x"") <b>&amp;"`,
			"a formula-like title is defused in the CSV")
		rep, err := b.im.Import(ctx, carol, portability.Lectern, csvFile, portability.Options{})
		require.NoError(t, err)
		require.Empty(t, rep.Errors)
		require.Equal(t, withoutVolatile(t, first), withoutVolatile(t, b.exportJSON(carol)))
		require.Equal(t, b.exportCSV(alice), b.exportCSV(carol))
	})
	t.Run("again into the same Reader changes nothing", func(t *testing.T) {
		rep, err := b.im.Import(ctx, alice, portability.Lectern, first, portability.Options{})
		require.NoError(t, err)
		require.Equal(t, 4, rep.Kept)
		require.Zero(t, rep.Created+rep.Updated)
		require.Equal(t, withoutVolatile(t, first), withoutVolatile(t, b.exportJSON(alice)))
	})
}

// On another deployment the Series are new: the Reader's own fields come
// back exactly, the Series' facts do not (only the backend's fetches write
// them), and every new Series has its Acquisition queued.
func TestImportIntoAnotherDeployment(t *testing.T) {
	t.Parallel()
	src, dst := setup(t), setup(t)
	ctx := context.Background()
	alice := src.reader("alice")
	src.richLibrary(alice)
	file := src.exportJSON(alice)

	dave := dst.reader("dave")
	rep, err := dst.im.Import(ctx, dave, portability.Lectern, file, portability.Options{})
	require.NoError(t, err)
	require.Equal(t, 4, rep.SeriesCreated)
	require.Equal(t, 4, dst.count(`SELECT count(*) FROM river_job WHERE kind = 'poll_series' AND args->>'reason' = 'acquisition'`))

	var a, d portability.Export
	require.NoError(t, json.Unmarshal(file, &a))
	require.NoError(t, json.Unmarshal(dst.exportJSON(dave), &d))
	require.Len(t, d.Bookmarks, len(a.Bookmarks))
	for i := range a.Bookmarks {
		x, y := a.Bookmarks[i], d.Bookmarks[i]
		require.Equal(t, x.Key, y.Key)
		require.Equal(t, x.SeriesURL, y.SeriesURL)
		require.Equal(t, x.Title, y.Title, "the title travels as the Reader's hint until the Series has its own")
		require.Equal(t, x.Chapter, y.Chapter)
		require.Equal(t, x.ChapterNumber, y.ChapterNumber)
		require.Equal(t, x.ChapterURL, y.ChapterURL)
		require.Equal(t, x.ProgressAt, y.ProgressAt)
		require.Equal(t, x.CreatedAt, y.CreatedAt)
		require.Empty(t, y.LatestChapter, "a Latest Chapter in a file is never taken as a Series fact")
		require.Nil(t, y.LatestAt)
	}
}

const urlList = `# my list
https://asurascans.com/comics/omniscient-reader-9f8e7d6c	Chapter 200
https://asurascans.com/comics/nano-machine-aa11bb22  Chapter 150
https://tapas.io/series/some-manga  Chapter 3
https://asurascans.com/comics/omniscient-reader-0a0b0c0d   Chapter 212.5

not a url at all
https://demonicscans.org/manga/Martial-Peak
https://asurascans.com/comics/nano-machine-aa11bb22  Chapter 90
https://demonicscans.org/about
`

func TestURLListImport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	erin := b.reader("erin")
	// Erin already reads Nano Machine further than the file says.
	b.put(erin, "https://asurascans.com/comics/nano-machine-aa11bb22", "", "Chapter 160", "")

	rep, err := b.im.Import(ctx, erin, portability.URLs, []byte(urlList), portability.Options{})
	require.NoError(t, err)
	require.True(t, rep.Refused)
	require.False(t, rep.Applied)
	require.Equal(t, []int{4, 7, 10}, errLines(rep), "each bad line is named: %+v", rep.Errors)
	require.Contains(t, rep.Errors[0].Error, "not a page of a supported Site")
	require.Contains(t, rep.Errors[0].Input, "tapas.io")
	require.Contains(t, rep.Errors[1].Error, "not an absolute http(s) URL")
	require.Contains(t, rep.Errors[2].Error, "not a series or chapter page")
	require.Equal(t, 1, b.count(`SELECT count(*) FROM bookmarks WHERE reader_id = $1`, erin), "nothing was imported")
	require.Equal(t, 1, b.count(`SELECT count(*) FROM river_job`), "no Acquisition was queued beyond the PUT's")
	// The refused report still says what the good lines would do.
	require.Equal(t, 2, rep.Created)
	require.Equal(t, 1, rep.Kept)
	require.Equal(t, 2, rep.Merged)

	dry, err := b.im.Import(ctx, erin, portability.URLs, []byte(urlList), portability.Options{SkipInvalid: true, DryRun: true})
	require.NoError(t, err)
	require.False(t, dry.Applied)
	require.Equal(t, 3, dry.Skipped)
	require.Equal(t, 1, b.count(`SELECT count(*) FROM bookmarks WHERE reader_id = $1`, erin), "a dry run writes nothing")

	rep, err = b.im.Import(ctx, erin, portability.URLs, []byte(urlList), portability.Options{SkipInvalid: true})
	require.NoError(t, err)
	require.True(t, rep.Applied)
	require.Equal(t, 3, rep.Skipped)
	require.Equal(t, dry.Items, rep.Items, "the dry run showed exactly what happened")
	require.Equal(t, 2, rep.Created)
	require.Equal(t, 1, rep.Kept)
	require.Equal(t, 2, rep.SeriesCreated, "Nano Machine existed already")
	require.Equal(t, 3, b.count(`SELECT count(*) FROM bookmarks WHERE reader_id = $1`, erin))
	require.Equal(t, 3, b.count(`SELECT count(*) FROM river_job WHERE kind = 'poll_series'`), "one Acquisition per new Series")

	// The two Omniscient Reader lines (rotated suffixes, one Series) merge
	// keeping the further Progress, numerically.
	ch, n := b.progress(erin, "asura:omniscient-reader")
	require.Equal(t, "Chapter 212.5", ch)
	require.Equal(t, 212.5, *n)
	ch, _ = b.progress(erin, "asura:nano-machine")
	require.Equal(t, "Chapter 160", ch, "the Bookmark's further Progress is kept over both lines")
	ch, n = b.progress(erin, "demonic:Martial-Peak")
	require.Empty(t, ch)
	require.Nil(t, n)

	// Importing further Progress later updates, and only that Bookmark.
	rep, err = b.im.Import(ctx, erin, portability.URLs,
		[]byte("https://asurascans.com/comics/nano-machine-ffffffff\tChapter 161\nhttps://demonicscans.org/manga/Martial-Peak\n"), portability.Options{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Updated)
	require.Equal(t, 1, rep.Kept)
	ch, _ = b.progress(erin, "asura:nano-machine")
	require.Equal(t, "Chapter 161", ch)
}

func errLines(rep portability.Report) []int {
	var out []int
	for _, e := range rep.Errors {
		out = append(out, e.Line)
	}
	return out
}

// A Kenmei export, columns in Kenmei's order but read by name, with quoted
// titles holding commas and quotes, a BOM, a duplicate and bad rows.
const kenmeiCSV = "\ufeff" + `title,status,score,series_url,last_volume_read,last_chapter_read,last_read_at,notes
"Solo Leveling, Ragnarok",reading,9,https://asurascans.com/comics/solo-leveling-ragnarok-12ab34cd,,45,2024-11-02 18:04:11 UTC,
"The ""Greatest"" Estate Developer",reading,8,https://asuracomic.net/series/the-greatest-estate-developer-7c7c7c7c,,120.5,2024-10-01T08:00:00Z,"great, really"
Unknown Site Manga,reading,0,https://tapas.io/series/abc,,10,,
No URL Manga,plan_to_read,0,,,0,,
"Solo Leveling, Ragnarok",reading,9,https://asurascans.com/comics/solo-leveling-ragnarok-99zz88yy,,47,2024-11-09 10:00:00 UTC,
Reverend Insanity,completed,10,https://novelfull.com/reverend-insanity.html,,0,,
`

func TestKenmeiImport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	fay := b.reader("fay")

	rep, err := b.im.Import(ctx, fay, portability.Kenmei, []byte(kenmeiCSV), portability.Options{})
	require.NoError(t, err)
	require.True(t, rep.Refused)
	require.Equal(t, []int{4, 5}, errLines(rep))
	require.Contains(t, rep.Errors[0].Error, "tapas.io")
	require.Contains(t, rep.Errors[1].Error, "no series URL")
	require.Zero(t, b.count(`SELECT count(*) FROM bookmarks`))

	rep, err = b.im.Import(ctx, fay, portability.Kenmei, []byte(kenmeiCSV), portability.Options{SkipInvalid: true})
	require.NoError(t, err)
	require.True(t, rep.Applied)
	require.Equal(t, 3, rep.Created)
	require.Equal(t, 1, rep.Merged)

	ref, err := latest.Default().Resolve("https://asurascans.com/comics/solo-leveling-ragnarok-12ab34cd")
	require.NoError(t, err)
	bm, err := b.st.GetBookmark(ctx, fay, ref.Key)
	require.NoError(t, err)
	require.Equal(t, "Chapter 47", bm.Chapter, "the duplicate row's further chapter wins")
	require.Equal(t, 47.0, *bm.ChapterNumber)
	require.Equal(t, "Solo Leveling, Ragnarok", bm.Title)
	require.Equal(t, time.Date(2024, 11, 9, 10, 0, 0, 0, time.UTC), bm.ProgressAt.UTC())

	ref, err = latest.Default().Resolve("https://asuracomic.net/series/the-greatest-estate-developer-7c7c7c7c")
	require.NoError(t, err)
	bm, err = b.st.GetBookmark(ctx, fay, ref.Key)
	require.NoError(t, err)
	require.Equal(t, `The "Greatest" Estate Developer`, bm.Title)
	require.Equal(t, 120.5, *bm.ChapterNumber)

	bm, err = b.st.GetBookmark(ctx, fay, "novelfull:reverend-insanity")
	require.NoError(t, err)
	require.Empty(t, bm.Chapter, "Kenmei's 0 chapters read is no Progress")
}

// Columns in another order, semicolons, CRLF and a renamed header still read.
func TestKenmeiToleratesShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	gus := b.reader("gus")
	file := "Last Chapter Read;URL;Title\r\n33;https://demonicscans.org/manga/Martial-Peak;\"Martial; Peak\"\r\n"
	rep, err := b.im.Import(ctx, gus, portability.Kenmei, []byte(file), portability.Options{})
	require.NoError(t, err)
	require.Empty(t, rep.Errors)
	require.Equal(t, 1, rep.Created)
	bm, err := b.st.GetBookmark(ctx, gus, "demonic:Martial-Peak")
	require.NoError(t, err)
	require.Equal(t, "Chapter 33", bm.Chapter)
	require.Equal(t, "Martial; Peak", bm.Title)

	_, err = b.im.Import(ctx, gus, portability.Kenmei, []byte("title,status\nx,reading\n"), portability.Options{})
	require.ErrorIs(t, err, portability.ErrUnreadable, "a CSV without a URL column is not a usable Kenmei export")
}

// Lectern's own files are checked too: a key that does not match its URL,
// a chapter URL on another host, a newer version.
func TestLecternImportChecks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	hal := b.reader("hal")
	file := `{
  "format": "lectern-export",
  "version": 1,
  "bookmarks": [
    {"key": "asura:wrong", "site": "asura", "series_url": "https://asurascans.com/comics/nano-machine-aa11bb22"},
    {"key": "demonic:Martial-Peak", "site": "demonic", "series_url": "https://demonicscans.org/manga/Martial-Peak",
     "chapter": "Chapter 3", "chapter_number": 3, "chapter_url": "https://evil.example/x"},
    {"key": "novelfull:reverend-insanity", "site": "novelfull", "series_url": "https://novelfull.com/reverend-insanity.html",
     "chapter": "Chapter 9", "chapter_number": "nine"},
    {"key": "novelfull:x", "site": "nope", "series_url": "https://novelfull.com/x.html"}
  ]
}`
	rep, err := b.im.Import(ctx, hal, portability.Lectern, []byte(file), portability.Options{})
	require.NoError(t, err)
	require.Equal(t, []int{5, 6, 8, 10}, errLines(rep), "the lines the objects start on: %+v", rep.Errors)
	require.Contains(t, rep.Errors[0].Error, `expected "asura:nano-machine"`)
	require.Contains(t, rep.Errors[1].Error, "evil.example is not one of demonic's")
	require.Contains(t, rep.Errors[2].Error, "chapter_number must be a number")
	require.Contains(t, rep.Errors[3].Error, `unknown site "nope"`)
	require.Zero(t, b.count(`SELECT count(*) FROM bookmarks`))

	newer := strings.Replace(file, `"version": 1`, `"version": 2`, 1)
	_, err = b.im.Import(ctx, hal, portability.Lectern, []byte(newer), portability.Options{})
	require.ErrorIs(t, err, portability.ErrUnreadable)
	require.Contains(t, err.Error(), "newer Lectern")
}

// bigList is n distinct asura series URLs with Progress, one per line.
func bigList(n int, badLast bool) []byte {
	var buf bytes.Buffer
	for i := range n {
		if badLast && i == n-1 {
			buf.WriteString("https://unknown.example/comics/x\n")
			continue
		}
		fmt.Fprintf(&buf, "https://asurascans.com/comics/series-number-%d-a1b2c3d4\tChapter %d\n", i, i%300+1)
	}
	return buf.Bytes()
}

// 5,000 lines go in as one transaction: every Bookmark carries the same
// creating transaction id, and one bad line keeps all 4,999 others out.
func TestImportFiveThousandLinesInOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ivy := b.reader("ivy")

	rep, err := b.im.Import(ctx, ivy, portability.URLs, bigList(5000, true), portability.Options{})
	require.NoError(t, err)
	require.True(t, rep.Refused)
	require.Equal(t, []int{5000}, errLines(rep))
	require.Zero(t, b.count(`SELECT count(*) FROM bookmarks`))
	require.Zero(t, b.count(`SELECT count(*) FROM series`))

	start := time.Now()
	rep, err = b.im.Import(ctx, ivy, portability.URLs, bigList(5000, false), portability.Options{})
	elapsed := time.Since(start)
	require.NoError(t, err)
	require.True(t, rep.Applied)
	require.Equal(t, 5000, rep.Created)
	require.Equal(t, 5000, rep.SeriesCreated)
	require.Equal(t, 5000, b.count(`SELECT count(*) FROM bookmarks WHERE reader_id = $1`, ivy))
	require.Equal(t, 1, b.count(`SELECT count(DISTINCT xmin::text) FROM bookmarks WHERE reader_id = $1`, ivy),
		"every Bookmark was written by one transaction")
	require.Equal(t, 5000, b.count(`SELECT count(*) FROM river_job WHERE kind = 'poll_series'`))
	require.Equal(t, 5000, b.count(`SELECT count(*) FROM series WHERE readers = 1`), "the reader counts follow")
	t.Logf("5,000-line import: %s end to end, %d ms in the transaction", elapsed.Round(time.Millisecond), rep.Millis)
}

// countingAcquirer counts the batches the production Acquirer is given.
type countingAcquirer struct {
	poll.Acquirer
	calls int
}

func (a *countingAcquirer) AcquireMany(ctx context.Context, tx *store.Store, keys []string) error {
	a.calls++
	return a.Acquirer.AcquireMany(ctx, tx, keys)
}

// The Acquirer batches: every new Series in one call, inside the import's
// transaction (rolled back with it on a dry run).
func TestImportUsesABatchAcquirer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	acq := &countingAcquirer{Acquirer: b.lib.Acquire.(poll.Acquirer)}
	b.lib.Acquire = acq
	jo := b.reader("jo")

	rep, err := b.im.Import(ctx, jo, portability.URLs, bigList(300, false), portability.Options{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 300, rep.SeriesCreated)
	require.Zero(t, b.count(`SELECT count(*) FROM river_job`), "rolled back with the dry run")

	start := time.Now()
	rep, err = b.im.Import(ctx, jo, portability.URLs, bigList(5000, false), portability.Options{})
	elapsed := time.Since(start)
	require.NoError(t, err)
	require.Equal(t, 5000, rep.SeriesCreated)
	require.Equal(t, 2, acq.calls)
	require.Equal(t, 5000, b.count(`SELECT count(*) FROM river_job WHERE kind = 'poll_series' AND args->>'reason' = 'acquisition'`))
	t.Logf("5,000-line import with batched Acquisitions: %s", elapsed.Round(time.Millisecond))
}

// Kenmei lists one row per Site it tracks a title on: rows of one title
// (however the Sites spell it) become one Work; a title on one Site links
// nothing.
func TestKenmeiRowsOfOneTitleBecomeOneWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	gil := b.reader("gil")
	csv := `title,status,score,series_url,last_volume_read,last_chapter_read,last_read_at,notes
Omniscient Reader's Viewpoint,reading,9,https://asurascans.com/comics/omniscient-readers-viewpoint-5e6f7a8b,,120,,
Omniscient Readers Viewpoint,reading,9,https://demonicscans.org/manga/Omniscient-Readers-Viewpoint,,118,,
Martial Peak,reading,7,https://demonicscans.org/manga/Martial-Peak,,3800,,
`
	rep, err := b.im.Import(ctx, gil, portability.Kenmei, []byte(csv), portability.Options{})
	require.NoError(t, err)
	require.True(t, rep.Applied)
	require.Equal(t, 1, rep.WorksLinked)
	works, err := b.lib.Works(ctx, gil)
	require.NoError(t, err)
	require.Len(t, works, 1)
	require.Equal(t, []string{"asura:omniscient-readers-viewpoint", "demonic:Omniscient-Readers-Viewpoint"}, works[0].Keys)
	require.Equal(t, "Chapter 120", works[0].Chapter, "the Work's Progress is the furthest row's")
	require.Equal(t, "asura", works[0].ProgressSite)
}

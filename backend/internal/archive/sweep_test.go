package archive_test

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func mangaChapter(n string) latest.Chapter {
	return latest.Chapter{Label: "Chapter " + n, URL: mangaChapterURL(n)}
}

func demonicPage(chapter, page string) string {
	return hitKey(imageHost, "/mangas/Solo Max-Level Newbie/"+chapter+"/"+page+".jpg", "v=3")
}

// queueOnce queues a chapter whose job has a single attempt, so it ends
// failed at once: by running out of attempts (a 503), or with a problem
// retrying cannot change (a 404).
func (r *testBundle) queueOnce(rd store.Reader, key, n string) {
	r.t.Helper()
	ctx := context.Background()
	ch, queued, err := r.st.EnsureArchiveChapter(ctx, key, store.ArchiveChapterInput{URL: mangaChapterURL(n), Label: "Chapter " + n, Position: 50},
		&rd.ID, store.ArchiveQueued, "", "")
	require.NoError(r.t, err)
	require.True(r.t, queued)
	_, err = r.river.Insert(ctx, archive.ChapterArgs{URL: ch.URL, ChapterID: ch.ID, Series: key}, &river.InsertOpts{MaxAttempts: 1})
	require.NoError(r.t, err)
	r.waitFor("chapter "+n+" to fail", func() bool {
		return r.chapter(ch.URL).State == store.ArchiveFailed
	})
}

// The sweep queues again what keep archiving should have and has not: a
// Latest Chapter found after the follow began whose follow was lost, a
// chapter whose attempts ran out a day ago, and an archived chapter whose
// page file vanished (only that page is fetched again). A chapter found
// before the follow, one found minutes ago (its follow job's), one that
// failed for good, and one that ran out of attempts just now are left.
func TestSweepQueuesWhatKeepArchivingMissed(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := r.pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	rd, _ := r.reader("ada", false, true)
	key := r.hold(rd, mangaURL, "Solo Max-Level Newbie")
	require.NoError(t, r.svc.SetFollow(ctx, rd, key, true))
	exec(`UPDATE archive_follows SET created_at = now() - interval '3 hours'`)

	// Archived by a follow: 180; its second page's file will vanish.
	require.NoError(t, r.svc.Follow(ctx, key, []latest.Chapter{mangaChapter("180")}))
	r.waitFor("chapter 180 archived", func() bool { return r.chapter(mangaChapterURL("180")).State == store.ArchiveArchived })
	pages, err := r.st.ArchivePagesOf(ctx, r.chapter(mangaChapterURL("180")).ID)
	require.NoError(t, err)
	lost, err := r.svc.Pages.(*blob.FS).Path(pages[1].Address)
	require.NoError(t, err)
	require.NoError(t, os.Remove(lost))

	// Failed: chapter 1 ran out of attempts (a day ago, as the sweep will
	// see it), chapter 2 too but just now; chapter 9 is gone from the Site.
	r.site.Status(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter=1"), http.StatusServiceUnavailable)
	r.site.Status(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter=2"), http.StatusServiceUnavailable)
	r.site.Status(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter=9"), http.StatusNotFound)
	for _, n := range []string{"1", "2", "9"} {
		r.queueOnce(rd, key, n)
	}
	require.NotNil(t, r.exhaustedAt(mangaChapterURL("1")), "a 503 on the last attempt: the attempts ran out")
	require.Nil(t, r.exhaustedAt(mangaChapterURL("9")), "a 404: failed for good")
	exec(`UPDATE archive_chapters SET exhausted_at = now() - interval '25 hours' WHERE url = $1`, mangaChapterURL("1"))
	for _, n := range []string{"1", "2"} {
		r.site.Status(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter="+n), 0)
	}

	// The Latest Chapter history: 182 found two hours ago, its follow lost;
	// 180.5 ten minutes ago (its follow job's to do); 181 before the follow.
	for _, h := range []struct {
		n, ago string
	}{{"182", "2 hours"}, {"180.5", "10 minutes"}, {"181", "4 hours"}} {
		exec(`INSERT INTO latest_chapter_history (series_key, label, url, first_seen_at) VALUES ($1, $2, $3, now() - $4::interval)`,
			key, "Chapter "+h.n, mangaChapterURL(h.n), h.ago)
	}

	kept := r.site.Hits(demonicPage("180", "01"))
	res, ran, err := r.svc.SweepIfDue(ctx)
	require.NoError(t, err)
	require.True(t, ran, "never swept: due")
	require.Equal(t, archive.SweepResult{Missed: 1, Exhausted: 1, Lost: 1}, res)

	r.waitFor("the swept chapters archived", func() bool {
		return r.count(`SELECT count(*) FROM archive_chapters WHERE url = ANY($1) AND state = 'archived'`,
			[]string{mangaChapterURL("1"), mangaChapterURL("180"), mangaChapterURL("182")}) == 3
	})
	has, err := r.svc.Pages.Has(context.Background(), pages[1].Address, int64(pages[1].Size))
	require.NoError(t, err)
	require.True(t, has, "the lost page is stored again")
	require.Equal(t, kept, r.site.Hits(demonicPage("180", "01")), "a page whose file is there is not fetched again")
	require.Equal(t, 2, r.site.Hits(demonicPage("180", "02")))
	for _, n := range []string{"2", "9"} {
		require.Equal(t, store.ArchiveFailed, r.chapter(mangaChapterURL(n)).State, "chapter %s stays failed", n)
	}
	for _, n := range []string{"180.5", "181"} {
		require.Zero(t, r.count(`SELECT count(*) FROM archive_chapters WHERE url = $1`, mangaChapterURL(n)), "chapter %s not queued", n)
	}

	// Swept to its end: not due again for a day, however often it looks.
	_, ran, err = r.svc.SweepIfDue(ctx)
	require.NoError(t, err)
	require.False(t, ran)
	exec(`UPDATE periodic_runs SET last_run_at = now() - interval '25 hours' WHERE name = 'archive_sweep'`)
	res, ran, err = r.svc.SweepIfDue(ctx)
	require.NoError(t, err)
	require.True(t, ran, "a day later (or after a downtime) it is due")
	require.Equal(t, archive.SweepResult{}, res, "nothing left to sweep")
}

func (r *testBundle) exhaustedAt(url string) any {
	r.t.Helper()
	var at any
	require.NoError(r.t, r.pool.QueryRow(context.Background(), `SELECT exhausted_at FROM archive_chapters WHERE url = $1`, url).Scan(&at))
	return at
}

// A chapter queued again the moment its last attempt ended gets a job of
// its own: River finishes a job only after its worker has returned, so the
// job that failed the chapter may still be running (here it stays so), and
// a job unique by URL alone was skipped as its duplicate, leaving the
// chapter queued with no job to run it. A queued chapter left without a job
// all the same (River discarded it) is stranded: the sweep queues it again.
func TestChapterQueuedAgainWhileItsLastJobFinishes(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	rd, _ := r.reader("ada", false, true)
	key := r.hold(rd, mangaURL, "Solo Max-Level Newbie")

	r.site.Status(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter=3"), http.StatusServiceUnavailable)
	r.queueOnce(rd, key, "3")
	r.site.Status(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter=3"), 0)
	ch := r.chapter(mangaChapterURL("3"))
	var finishing int64
	require.NoError(t, r.pool.QueryRow(ctx, `
		UPDATE river_job SET state = 'running', finalized_at = NULL
		WHERE kind = 'archive_chapter' AND args->>'url' = $1 RETURNING id`, ch.URL).Scan(&finishing))

	require.NoError(t, r.svc.RetryChapter(ctx, ch.ID))
	queued := r.chapter(ch.URL)
	require.Equal(t, store.ArchiveQueued, queued.State)
	require.NotNil(t, queued.JobID)
	require.NotEqual(t, finishing, *queued.JobID, "a job of its own, not the one finishing")
	r.waitFor("chapter 3 archived", func() bool { return r.chapter(ch.URL).State == store.ArchiveArchived })

	// Stranded: chapter 4 queued an hour ago and chapter 5 just now, neither
	// with a job; only the first is past the grace.
	for _, n := range []string{"4", "5"} {
		_, q, err := r.st.EnsureArchiveChapter(ctx, key, store.ArchiveChapterInput{URL: mangaChapterURL(n), Label: "Chapter " + n, Position: 60},
			&rd.ID, store.ArchiveQueued, "", "")
		require.NoError(t, err)
		require.True(t, q)
	}
	_, err := r.pool.Exec(ctx, `UPDATE archive_chapters SET queued_at = now() - interval '1 hour' WHERE url = $1`, mangaChapterURL("4"))
	require.NoError(t, err)
	res, err := r.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, archive.SweepResult{Stranded: 1}, res)
	r.waitFor("the stranded chapter archived", func() bool { return r.chapter(mangaChapterURL("4")).State == store.ArchiveArchived })
	require.Equal(t, store.ArchiveQueued, r.chapter(mangaChapterURL("5")).State, "within the grace: left to its job")
	res, err = r.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, archive.SweepResult{}, res, "nothing stranded any more")
}

package archive_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func float(f float64) *float64 { return &f }

// "Keep archiving": a chapter the Poll finds archives itself for a Reader
// who switched it on, charged to them; without a follower allowed to
// archive nothing is queued; a repeated call queues nothing twice; the
// switch goes with the Bookmark.
func TestFollowArchivesNewChapters(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	hal, halToken := r.reader("hal", false, true)
	ivy, _ := r.reader("ivy", false, false)
	key := r.hold(hal, mangaURL, "Solo Max-Level Newbie")
	r.hold(ivy, mangaURL, "")

	newest := latest.Chapter{Label: "Chapter 182", Number: float(182), URL: mangaChapterURL("182")}
	// Nobody follows yet: nothing happens.
	require.NoError(t, r.svc.Follow(ctx, key, []latest.Chapter{newest}))
	require.Zero(t, r.count(`SELECT count(*) FROM archive_chapters`))

	// Ivy may not archive, so she cannot follow; Hal follows through the API.
	require.ErrorIs(t, r.svc.SetFollow(ctx, ivy, key, true), archive.ErrNotAllowed)
	code, _, body := r.apiDo(http.MethodPut, seriesAPI(key, "/archive/follow"), halToken, map[string]any{"follow": true})
	require.Equal(t, http.StatusOK, code, string(body))

	require.NoError(t, r.svc.Follow(ctx, key, []latest.Chapter{newest}))
	require.NoError(t, r.svc.Follow(ctx, key, []latest.Chapter{newest}))
	r.waitFor("the followed chapter", func() bool { return len(mustArchived(t, r, key)) == 1 })
	c := r.chapter(newest.URL)
	require.Equal(t, hal.ID, *c.RequestedBy)
	require.Equal(t, 1, r.count(`SELECT count(*) FROM river_job WHERE kind = 'archive_chapter'`), "queued once")
	require.NoError(t, r.svc.Follow(ctx, key, []latest.Chapter{newest}))
	require.Equal(t, 1, r.count(`SELECT count(*) FROM river_job WHERE kind = 'archive_chapter'`), "an archived chapter is not queued again")

	// A locked chapter is recorded with its problem and not fetched.
	locked := latest.Chapter{Label: "Chapter 183", Number: float(183), URL: mangaChapterURL("183"), Locked: true}
	require.NoError(t, r.svc.Follow(ctx, key, []latest.Chapter{locked}))
	lc := r.chapter(locked.URL)
	require.Equal(t, store.ArchiveFailed, lc.State)
	require.Equal(t, latest.ProblemLocked, lc.Problem)
	require.Greater(t, lc.Position, c.Position, "a new chapter goes after the known ones")
	require.Zero(t, r.site.Hits(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter=183")))

	// The Owner switches Hal off: his follow queues nothing more.
	require.NoError(t, r.st.SetArchiveReader(ctx, hal.ID, false, nil))
	next := latest.Chapter{Label: "Chapter 181", Number: float(181), URL: mangaChapterURL("181")}
	require.NoError(t, r.svc.Follow(ctx, key, []latest.Chapter{next}))
	_, err := r.st.ArchiveChapterByURL(ctx, next.URL)
	require.ErrorIs(t, err, store.ErrNotFound)

	// Removing the Bookmark removes the follow.
	require.NoError(t, r.st.DeleteBookmark(ctx, hal.ID, key))
	on, err := r.st.ArchiveFollowing(ctx, hal.ID, key)
	require.NoError(t, err)
	require.False(t, on)
}

// The Owner sees every archive job in the web console and cancels one in
// flight: nothing of it becomes visible even when its fetch completes;
// retry queues it again and it is archived. The Owner sets a Reader's
// switch and cap from the console.
func TestOwnerCancelsAndRetries(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	owner, ownerToken := r.reader("owner", true, false)
	jo, _ := r.reader("jo", false, false)
	key := r.hold(owner, mangaURL, "Solo Max-Level Newbie")
	page := hitKey(imageHost, "/mangas/Solo Max-Level Newbie/181/02.jpg", "v=3")
	r.site.Hold(page)
	r.request(owner, key, "chapter 181")
	<-r.site.held
	c := r.chapter(mangaChapterURL("181"))

	b := r.signIn("owner")
	p := b.Get("/owner/archive")
	require.Equal(t, http.StatusOK, p.Code, p.Body)
	row := p.Doc.Find(`[data-testid="archive-job-row"][data-id="` + strconv.FormatInt(c.ID, 10) + `"]`)
	require.Equal(t, 1, row.Length())
	require.Equal(t, "queued", row.AttrOr("data-state", ""))
	require.Contains(t, row.Text(), "running")
	res := b.PostForm("/owner/archive", "/owner/archive/jobs/"+strconv.FormatInt(c.ID, 10)+"/cancel", nil)
	require.Equal(t, http.StatusSeeOther, res.Code, res.Body)
	r.site.Release(page)
	r.waitFor("the cancelled job to end", func() bool {
		var state string
		require.NoError(t, r.pool.QueryRow(ctx, `SELECT state::text FROM river_job WHERE id = $1`, *c.JobID).Scan(&state))
		return state == "cancelled"
	})
	c = r.chapter(mangaChapterURL("181"))
	require.Equal(t, store.ArchiveCancelled, c.State)
	require.Empty(t, mustArchived(t, r, key))
	require.Zero(t, r.count(`SELECT count(*) FROM archive_pages`))
	// Cancelling again is a conflict, not an error page.
	code, _, _ := r.apiDo(http.MethodPost, "/api/admin/archive/jobs/"+itoa64(c.ID)+"/cancel", ownerToken, nil)
	require.Equal(t, http.StatusConflict, code)

	code, _, body := r.apiDo(http.MethodPost, "/api/admin/archive/jobs/"+itoa64(c.ID)+"/retry", ownerToken, nil)
	require.Equal(t, http.StatusOK, code, string(body))
	r.waitFor("the retried chapter", func() bool { return len(mustArchived(t, r, key)) == 1 })
	code, _, _ = r.apiDo(http.MethodPost, "/api/admin/archive/jobs/999999/retry", ownerToken, nil)
	require.Equal(t, http.StatusNotFound, code)

	res = b.PostForm("/owner/archive", "/owner/archive/readers/"+strconv.FormatInt(jo.ID, 10),
		url.Values{"enabled": {"true"}, "max_chapters": {"25"}})
	require.Equal(t, http.StatusSeeOther, res.Code, res.Body)
	a, err := r.st.ArchiveAllowanceOf(ctx, jo.ID)
	require.NoError(t, err)
	require.True(t, a.Enabled)
	require.Equal(t, 25, *a.MaxChapters)
	res = b.PostForm("/owner/archive", "/owner/archive/readers/"+strconv.FormatInt(jo.ID, 10),
		url.Values{"max_chapters": {"lots"}})
	require.Equal(t, http.StatusUnprocessableEntity, res.Code)

	// A Reader cannot open the console.
	jb := r.signIn("jo")
	require.Equal(t, http.StatusForbidden, jb.Get("/owner/archive").Code)
}

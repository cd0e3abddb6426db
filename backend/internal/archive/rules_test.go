package archive_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/poll"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func numbers(chapters []latest.Chapter) []string {
	out := []string{}
	for _, c := range chapters {
		if c.Number == nil {
			out = append(out, c.Label)
			continue
		}
		out = append(out, strconv.FormatFloat(*c.Number, 'f', -1, 64))
	}
	return out
}

// Every scope selects the right chapters of a list as the registry reads it
// from asura's fixture: 1, 2, 249, 250, 250.5, 251 and 252, the last two
// locked (premium, early access).
func TestScopesSelect(t *testing.T) {
	t.Parallel()
	site, _ := latest.Default().Lookup("asura")
	page, _ := url.Parse(asuraURL)
	list, err := site.Chapters([]byte(readFixture(t, "asura", "series.html")), page)
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2", "249", "250", "250.5", "251", "252"}, numbers(list))
	require.True(t, list[5].Locked)
	require.True(t, list[6].Locked)
	archived := map[string]bool{list[0].URL: true, list[3].URL: true}

	for _, tc := range []struct {
		scope string
		want  []string
	}{
		{"all", []string{"1", "2", "249", "250", "250.5", "251", "252"}},
		{"missing", []string{"2", "249", "250.5", "251", "252"}},
		{"latest", []string{"250.5"}},
		{"first 3", []string{"1", "2", "249"}},
		{"first 100", []string{"1", "2", "249", "250", "250.5"}},
		{"last 2", []string{"250", "250.5"}},
		{"last 1", []string{"250.5"}},
		{"chapter 250.5", []string{"250.5"}},
		{"chapter 252", []string{"252"}},
		{"chapter 3", []string{}},
		{"after 250", []string{"250.5", "251", "252"}},
		{"after 250.5", []string{"251", "252"}},
		{"after 0", []string{"1", "2", "249", "250", "250.5", "251", "252"}},
		{"after 252", []string{}},
	} {
		sc, err := archive.ParseScope(tc.scope)
		require.NoError(t, err, tc.scope)
		require.Equal(t, tc.scope, sc.String())
		require.Equal(t, tc.want, numbers(sc.Select(list, func(u string) bool { return archived[u] })), tc.scope)
	}
	require.Empty(t, mustScope(t, "latest").Select(nil, func(string) bool { return false }))

	for _, bad := range []string{"", "some", "first", "first 0", "first -1", "first x", "last 1.5", "chapter",
		"chapter x", "after NaN", "after -1", "all 3", "latest 1", "first 1 2", "chapter 1e9"} {
		_, err := archive.ParseScope(bad)
		require.ErrorIs(t, err, archive.ErrBadScope, bad)
	}
	sc, err := archive.ParseScope("  LAST   5 ")
	require.NoError(t, err)
	require.Equal(t, "last 5", sc.String())
}

func mustScope(t *testing.T, s string) archive.Scope {
	t.Helper()
	sc, err := archive.ParseScope(s)
	require.NoError(t, err)
	return sc
}

// The same scopes end to end: each request lists the Site's chapters in
// its job, queues only what its scope names that is not archived yet, and
// the archive grows by exactly those chapters.
func TestScopesQueueTheirChapters(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	owner, _ := r.reader("owner", true, false)
	key := r.hold(owner, mangaURL, "Solo Max-Level Newbie")
	for _, step := range []struct {
		scope            string
		selected, queued int
		archived         []string
	}{
		{"chapter 2", 1, 1, []string{"2"}},
		{"latest", 1, 1, []string{"2", "182"}},
		{"first 1", 1, 1, []string{"1", "2", "182"}},
		{"last 2", 2, 1, []string{"1", "2", "181", "182"}},
		{"after 180", 3, 1, []string{"1", "2", "180.5", "181", "182"}},
		{"missing", 1, 1, []string{"1", "2", "180", "180.5", "181", "182"}},
		{"all", 6, 0, []string{"1", "2", "180", "180.5", "181", "182"}},
	} {
		req := r.request(owner, key, step.scope)
		r.settled(req)
		done, err := r.st.ArchiveRequestByID(ctx, req.ID)
		require.NoError(t, err)
		require.Equal(t, store.ArchiveRequestDone, done.State, step.scope)
		require.Equal(t, step.selected, *done.Selected, step.scope)
		require.Equal(t, step.queued, *done.Queued, step.scope)
		got, err := r.st.ArchivedChapters(ctx, key)
		require.NoError(t, err)
		var have []string
		for _, c := range got {
			have = append(have, c.URL)
		}
		var want []string
		for _, n := range step.archived {
			want = append(want, mangaChapterURL(n))
		}
		require.Equal(t, want, have, step.scope)
	}
	for _, n := range mangaChapters {
		require.Equal(t, 1, r.site.Hits(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter="+n)),
			"chapter %s fetched once over seven requests", n)
	}
}

// Archiving is off for a Reader until the Owner switches it on; the cap
// counts chapters; a Reader who does not hold a Series can neither see,
// read nor export its archive; the Owner's endpoints refuse a Reader.
func TestPermissionsAndCap(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	_, ownerToken := r.reader("owner", true, false)
	cy, cyToken := r.reader("cy", false, false)
	dee, deeToken := r.reader("dee", false, true)
	key := r.hold(cy, mangaURL, "Solo Max-Level Newbie")
	r.hold(dee, novelURL, "Shadow Slave")

	// Off by default.
	code, _, body := r.apiDo(http.MethodPost, seriesAPI(key, "/archive"), cyToken, map[string]any{"scope": "all"})
	require.Equal(t, http.StatusForbidden, code, string(body))
	require.Contains(t, string(body), "not enabled")
	code, _, body = r.apiDo(http.MethodPut, seriesAPI(key, "/archive/follow"), cyToken, map[string]any{"follow": true})
	require.Equal(t, http.StatusForbidden, code, string(body))
	code, _, body = r.apiDo(http.MethodGet, seriesAPI(key, "/archive"), cyToken, nil)
	require.Equal(t, http.StatusOK, code, string(body))
	var st archive.Status
	require.NoError(t, json.Unmarshal(body, &st))
	require.False(t, st.CanArchive)
	require.NotEmpty(t, st.Reason)
	b := r.signIn("cy")
	p := b.Get("/series/" + url.PathEscape(key) + "/archive")
	require.Equal(t, http.StatusOK, p.Code)
	require.Equal(t, 1, p.Doc.Find(`[data-testid="archive-refused"]`).Length())
	require.Zero(t, p.Doc.Find(`[data-testid="request-form"]`).Length())
	require.Zero(t, r.count(`SELECT count(*) FROM archive_requests`))

	// The Owner's switch, over the Owner's API; a Reader may not use it.
	code, _, _ = r.apiDo(http.MethodPut, "/api/admin/archive/readers/"+itoa64(cy.ID), cyToken, map[string]any{"enabled": true})
	require.Equal(t, http.StatusForbidden, code)
	code, _, body = r.apiDo(http.MethodPut, "/api/admin/archive/readers/"+itoa64(cy.ID), ownerToken, map[string]any{"enabled": true, "max_chapters": 2})
	require.Equal(t, http.StatusOK, code, string(body))
	code, _, body = r.apiDo(http.MethodPut, "/api/admin/archive/readers/"+itoa64(cy.ID), ownerToken, map[string]any{"enabled": true, "max_chapters": -3})
	require.Equal(t, http.StatusUnprocessableEntity, code, string(body))

	// A cap of two chapters: "all" archives the first two and says so.
	code, _, body = r.apiDo(http.MethodPost, seriesAPI(key, "/archive"), cyToken, map[string]any{"scope": "all"})
	require.Equal(t, http.StatusAccepted, code, string(body))
	var acc archive.RequestStatus
	require.NoError(t, json.Unmarshal(body, &acc))
	req, err := r.st.ArchiveRequestByID(ctx, acc.ID)
	require.NoError(t, err)
	r.settled(req)
	req, err = r.st.ArchiveRequestByID(ctx, acc.ID)
	require.NoError(t, err)
	require.Equal(t, 6, *req.Selected)
	require.Equal(t, 2, *req.Queued)
	require.Equal(t, 4, *req.Capped)
	got, err := r.st.ArchivedChapters(ctx, key)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, mangaChapterURL("1"), got[0].URL)
	require.Zero(t, r.site.Hits(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter=180")), "capped chapters are not fetched")
	code, _, body = r.apiDo(http.MethodPost, seriesAPI(key, "/archive"), cyToken, map[string]any{"scope": "last", "count": 1})
	require.Equal(t, http.StatusForbidden, code, string(body))
	require.Contains(t, string(body), "cap")

	// Another Reader, allowed to archive but not holding the Series, sees
	// nothing of it: not its status, a chapter, a page or an export.
	c1 := got[0]
	pages, err := r.st.ArchivePagesOf(ctx, c1.ID)
	require.NoError(t, err)
	for _, path := range []string{"/archive", "/archive.cbz", "/archive.cbz?chapters=1"} {
		code, _, body := r.apiDo(http.MethodGet, seriesAPI(key, path), deeToken, nil)
		require.Equal(t, http.StatusNotFound, code, "%s: %s", path, body)
	}
	code, _, _ = r.apiDo(http.MethodPost, seriesAPI(key, "/archive"), deeToken, map[string]any{"scope": "all"})
	require.Equal(t, http.StatusNotFound, code)
	bd := r.signIn("dee")
	for _, path := range []string{
		"/series/" + url.PathEscape(key) + "/archive",
		archive.ChapterPath(key, c1.ID),
		archive.PagePath(key, pages[0].Address),
		"/series/" + url.PathEscape(key) + "/archive.cbz",
	} {
		require.Equal(t, http.StatusNotFound, bd.Get(path).Code, path)
	}
	// Nor does an address of one Series open through another the Reader holds.
	require.Equal(t, http.StatusNotFound, bd.Get(archive.PagePath(novelKey, pages[0].Address)).Code)
	// Without a session the page bytes are not served at all.
	resp, err := http.Get(r.app.URL + archive.PagePath(key, pages[0].Address))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.Request.Response.StatusCode)
	require.Contains(t, resp.Request.URL.Path, "/login")

	// The Owner sees every job and every Reader's switch.
	code, _, body = r.apiDo(http.MethodGet, "/api/admin/archive/jobs", ownerToken, nil)
	require.Equal(t, http.StatusOK, code)
	var jobs []archive.Job
	require.NoError(t, json.Unmarshal(body, &jobs))
	require.Len(t, jobs, 2)
	require.Equal(t, "cy", jobs[0].Reader)
	code, _, body = r.apiDo(http.MethodGet, "/api/admin/archive/readers", ownerToken, nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"name":"cy","owner":false,"enabled":true,"max_chapters":2,"chapters_charged":2`)
	code, _, _ = r.apiDo(http.MethodGet, "/api/admin/archive/jobs", deeToken, nil)
	require.Equal(t, http.StatusForbidden, code)
}

// A request for a Site that is backing off waits: its job snoozes until
// the back-off ends, burns no attempt and sends nothing to the Site; once
// the Site is resumed it goes on.
func TestRequestWaitsOnBackedOffSite(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	rd, _ := r.reader("eve", false, true)
	key := r.hold(rd, mangaURL, "Solo Max-Level Newbie")
	until, err := r.st.BackOffSite(ctx, "demonic", "http_429: test", func(int) time.Duration { return time.Hour })
	require.NoError(t, err)

	req := r.request(rd, key, "latest")
	var scheduled time.Time
	r.waitFor("the request to snooze", func() bool {
		var state string
		var attempt int
		err := r.pool.QueryRow(ctx, `SELECT state::text, attempt, scheduled_at FROM river_job WHERE id = $1`, *req.JobID).Scan(&state, &attempt, &scheduled)
		require.NoError(t, err)
		if state != "scheduled" {
			return false
		}
		require.Zero(t, attempt, "a snooze burns no attempt")
		return true
	})
	require.WithinDuration(t, until, scheduled, 7*time.Minute, "snoozed to the back-off's end, with a little jitter")
	require.False(t, scheduled.Before(until))
	require.Zero(t, r.site.HitsPrefix("demonicscans.org"), "nothing is sent to a backed-off Site")
	got, err := r.st.ArchiveRequestByID(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, store.ArchiveQueued, got.State)

	// The Owner's resume, as the API, the console and `lectern site resume`
	// run it: the back-off ends and the Site's waiting jobs run now.
	// Its client only inserts, as a web replica's does.
	rc, err := river.NewClient(riverpgxv5.New(r.st.Pool), &river.Config{})
	require.NoError(t, err)
	q := &poll.Queue{Client: rc, Store: r.st, Registry: latest.Default()}
	require.NoError(t, q.ResumeSite(ctx, "demonic"))
	r.settled(req)
	require.Len(t, mustArchived(t, r, key), 1)
}

// A Site refusing a chapter fetch (429) backs the whole Site off, as a
// refused poll does, and the chapter waits without burning an attempt;
// other Sites go on.
func TestRefusalBacksOffSite(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	rd, _ := r.reader("fay", false, true)
	key := r.hold(rd, mangaURL, "Solo Max-Level Newbie")
	novel := r.hold(rd, novelURL, "Shadow Slave")
	r.site.Status(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter=182"), http.StatusTooManyRequests)

	req := r.request(rd, key, "latest")
	ch := mangaChapterURL("182")
	r.waitFor("the chapter to wait on the back-off", func() bool {
		c, err := r.st.ArchiveChapterByURL(ctx, ch)
		if err != nil || c.JobID == nil {
			return false
		}
		var state string
		var attempt int
		require.NoError(t, r.pool.QueryRow(ctx, `SELECT state::text, attempt FROM river_job WHERE id = $1`, *c.JobID).Scan(&state, &attempt))
		if state != "scheduled" {
			return false
		}
		require.Zero(t, attempt, "a refusal burns no attempt")
		return true
	})
	c := r.chapter(ch)
	require.Equal(t, store.ArchiveQueued, c.State)
	require.Contains(t, c.Detail, "backing off")
	ss, err := r.st.SiteStateOf(ctx, "demonic")
	require.NoError(t, err)
	until, paused := ss.Paused(time.Now())
	require.True(t, paused)
	require.True(t, until.After(time.Now().Add(110*time.Second)), "Retry-After: 120 is honoured")
	require.Contains(t, ss.LastProblem, "http_429")
	require.Equal(t, 1, r.site.Hits(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter=182")))

	// Another Site is not held up.
	r.settled(r.request(rd, novel, "latest"))
	require.Len(t, mustArchived(t, r, novel), 1)
	got, err := r.st.ArchiveRequestByID(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, store.ArchiveRequestDone, got.State)
}

func mustArchived(t *testing.T, r *testBundle, key string) []store.ArchiveChapter {
	t.Helper()
	got, err := r.st.ArchivedChapters(context.Background(), key)
	require.NoError(t, err)
	return got
}

// Locked chapters, scrambled pages, JPEG XL pages and page addresses the
// destination gate refuses end as failed with a named problem, and nothing
// of them is visible or stored.
func TestProblemsAreNamed(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	owner, ownerToken := r.reader("owner", true, false)

	asura := r.hold(owner, asuraURL, "Omniscient Reader's Viewpoint")
	r.settled(r.request(owner, asura, "all"))
	arch := mustArchived(t, r, asura)
	require.Len(t, arch, 4, r.jobsDump())
	for _, c := range arch {
		require.Equal(t, 3, c.PageCount, c.URL)
	}
	for _, n := range []string{"251", "252"} {
		listed := r.chapter(asuraURL + "/chapter/" + n)
		require.Equal(t, store.ArchiveFailed, listed.State)
		require.Equal(t, latest.ProblemLocked, listed.Problem)
		require.Zero(t, r.site.Hits("asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b/chapter/"+n), "a chapter listed as locked is not fetched")
	}
	tiles := r.chapter(asuraURL + "/chapter/250")
	require.Equal(t, store.ArchiveFailed, tiles.State)
	require.Equal(t, latest.ProblemLocked, tiles.Problem)
	require.Contains(t, tiles.Detail, "asura marks the chapter locked", "named from the fetched chapter page")

	manga := r.hold(owner, mangaURL, "Solo Max-Level Newbie")
	r.site.Private("1")
	r.site.JXL("2")
	r.settled(r.request(owner, manga, "first 2"))
	private := r.chapter(mangaChapterURL("1"))
	require.Equal(t, store.ArchiveFailed, private.State)
	require.Equal(t, archive.ProblemRefused, private.Problem)
	require.Contains(t, private.Detail, "loopback")
	jxl := r.chapter(mangaChapterURL("2"))
	require.Equal(t, store.ArchiveFailed, jxl.State)
	require.Equal(t, archive.ProblemJPEGXL, jxl.Problem)
	require.Equal(t, 1, r.site.Hits(hitKey(imageHost, "/mangas/Solo Max-Level Newbie/2/01.jpg", "v=3")), "a named problem is not retried")
	require.Empty(t, mustArchived(t, r, manga))
	require.Zero(t, r.count(`SELECT count(*) FROM archive_pages p JOIN archive_chapters c ON c.id = p.chapter_id WHERE c.series_key = $1`, manga))

	comix := r.hold(owner, comixURL, "The Greatest Estate Developer")
	r.settled(r.request(owner, comix, "chapter 205"))
	rows, err := r.st.ArchiveChaptersOf(ctx, comix)
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	for _, c := range rows {
		require.Equal(t, store.ArchiveFailed, c.State)
		require.Equal(t, latest.ProblemScrambled, c.Problem)
	}

	// The failures with their reasons, as the Reader's status shows them.
	code, _, body := r.apiDo(http.MethodGet, seriesAPI(manga, "/archive"), ownerToken, nil)
	require.Equal(t, http.StatusOK, code)
	var st archive.Status
	require.NoError(t, json.Unmarshal(body, &st))
	require.Equal(t, 2, st.ChaptersFailed)
	problems := map[string]string{}
	for _, c := range st.Chapters {
		problems[c.URL] = c.Problem
	}
	require.Equal(t, archive.ProblemRefused, problems[mangaChapterURL("1")])
	require.Equal(t, archive.ProblemJPEGXL, problems[mangaChapterURL("2")])
	b := r.signIn("owner")
	p := b.Get("/series/" + url.PathEscape(manga) + "/archive")
	require.Equal(t, http.StatusOK, p.Code)
	require.ElementsMatch(t, []string{"refused", "jpeg_xl"}, p.Doc.Find(`[data-testid="failed-row"] [data-testid="problem"]`).Map(func(_ int, s *goquery.Selection) string { return s.Text() }))
}

// A replica archives one chapter of a Site at a time: the Site's pace
// serialises its requests anyway, and the workers are the Poll's too. The
// second chapter snoozes, without burning an attempt or touching the Site,
// and is woken as soon as the first ends.
func TestOneChapterOfASiteAtATime(t *testing.T) {
	r := setup(t)
	ctx := context.Background()
	owner, _ := r.reader("owner", true, false)
	key := r.hold(owner, mangaURL, "Solo Max-Level Newbie")
	firstPage := func(n string) string { return hitKey(imageHost, "/mangas/Solo Max-Level Newbie/"+n+"/01.jpg", "v=3") }
	r.site.Hold(firstPage("181"))
	r.site.Hold(firstPage("182"))
	req := r.request(owner, key, "after 180.5")

	// Whichever chapter got the place is held on its first page; the other
	// must wait its turn.
	running, waiting := "181", "182"
	if <-r.site.held == firstPage("182") {
		running, waiting = "182", "181"
	}
	other := r.chapter(mangaChapterURL(waiting))
	r.waitFor("the other chapter to be turned away twice", func() bool {
		var state string
		var attempt, snoozes int
		require.NoError(t, r.pool.QueryRow(ctx, `SELECT state::text, attempt, coalesce((metadata->>'snoozes')::int, 0) FROM river_job WHERE id = $1`,
			*other.JobID).Scan(&state, &attempt, &snoozes))
		require.NotEqual(t, "completed", state)
		if state == "running" || snoozes < 2 {
			return false
		}
		require.Zero(t, attempt, "waiting for a place burns no attempt")
		return true
	})
	require.Zero(t, r.site.Hits(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter="+waiting)),
		"the waiting chapter has not touched the Site")
	require.Equal(t, 1, r.site.Hits(hitKey("demonicscans.org", "/chaptered.php", "manga=4812&chapter="+running)))
	r.site.Release(firstPage("181"))
	r.site.Release(firstPage("182"))
	r.settled(req)
	require.Len(t, mustArchived(t, r, key), 2)
}

package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/api"
	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/server"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// A Site of a family, added at run time, through the composed server on a
// real Postgres, River and the fake network: the Owner adds it on one
// replica; a second replica, already running, picks it up without a
// restart, and a Bookmark there is polled (the chapter list through the
// theme's ajax POST), its Cover stored and served, a chapter archived; the
// userscript that replica serves matches the new host.

const (
	ironOrchard = "https://toonhaven.test/manga/iron-orchard/"
	ironCover   = "https://toonhaven.test/wp-content/uploads/WP-manga/data/iron-orchard.webp"
)

func serveToonhaven(t *testing.T, a *apptest.App) {
	t.Helper()
	html := "text/html; charset=utf-8"
	a.Net.Set(ironOrchard, http.StatusOK, html, testenv.FamilyFixture(t, "madara", "series-ajax.html"))
	a.Net.Set(ironOrchard+"ajax/chapters/", http.StatusOK, html, testenv.FamilyFixture(t, "madara", "chapters-ajax.html"))
	a.Net.Set(ironCover, http.StatusOK, "image/webp", imagetest.RealPNG(t, 7))
	a.Net.Set(ironOrchard+"chapter-100/", http.StatusOK, html, testenv.FamilyFixture(t, "madara", "chapter.html"))
	for i, name := range []string{"01", "02", "03"} {
		a.Net.Set("https://cdn.toonhaven.test/manga_6a1/ch41/"+name+".jpg", http.StatusOK, "image/jpeg", imagetest.RealPNG(t, uint8(20+i)))
	}
}

func TestAFamilySiteAddedAtRunTimeWorksOnASecondReplica(t *testing.T) {
	t.Parallel()
	first := apptest.New(t, apptest.Options{PublicBaseURL: testBase, Workers: 4, DeferJobs: true,
		Seams: func(s *server.Seams) { s.SitesRefresh = 100 * time.Millisecond; s.SettingsTTL = 50 * time.Millisecond }})
	owner := first.Token("olive", true)
	ann := first.Reader("ann", false)
	require.NoError(t, first.Store.SetArchiveReader(context.Background(), ann.ID, true, nil))
	annTok := first.NewToken(ann)
	serveToonhaven(t, first)

	// The second replica runs before the Site exists; the first never
	// works jobs, so every poll below is the second's.
	second := first.Replica()
	second.StartJobs()
	require.Equal(t, http.StatusUnprocessableEntity, second.Do("GET", "/api/resolve?url="+url.QueryEscape(ironOrchard), annTok, nil).Code)

	added := time.Now()
	r := first.Do("POST", "/api/admin/sites", owner, map[string]any{
		"site": "toonhaven", "family": "madara", "hosts": []string{"toonhaven.test"}, "kind": "manga", "options": map[string]string{}})
	require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
	var got api.AddedSiteJSON
	r.JSON(t, &got)
	require.Equal(t, "madara", got.Family)
	require.False(t, got.Resumed)
	require.Equal(t, int64(2000), got.PaceMS, "a polite default pace")
	// The Owner may make it faster, as for any Site.
	r = first.Do("PUT", "/api/admin/sites/toonhaven", owner, map[string]any{"pace_ms": 0})
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)

	apptest.Eventually(t, "the second replica resolves the new Site's URLs", func() bool {
		return second.Do("GET", "/api/resolve?url="+url.QueryEscape(ironOrchard+"chapter-99/"), annTok, nil).Code == http.StatusOK
	})
	r = second.Do("PUT", "/api/bookmarks/toonhaven:iron-orchard", annTok, putBody("toonhaven", ironOrchard, "Chapter 99"))
	require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
	apptest.Eventually(t, "polled on the second replica, the Latest Chapter from the ajax list, the Cover stored", func() bool {
		b := second.Bookmark(annTok, "toonhaven:iron-orchard")
		return b.LatestChapter != nil && *b.LatestChapter == "Chapter 101" && b.Cover != nil && *b.Cover != ""
	})
	t.Logf("figure: site add to first poll and Cover on the second replica: %s (SITES_REFRESH %s in this test)",
		time.Since(added).Round(time.Millisecond), 100*time.Millisecond)
	require.NotZero(t, first.Net.Hits(ironOrchard+"ajax/chapters/"), "the chapter list came from the theme's ajax endpoint")

	b := second.Bookmark(annTok, "toonhaven:iron-orchard")
	require.Equal(t, "Chapter 99", b.Chapter)
	require.True(t, *b.Unread)
	code, ctype, body := coverBytes(t, second, *b.Cover, annTok)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "image/png", ctype, "the bytes decide the type")
	require.Equal(t, imagetest.RealPNG(t, 7), body)

	r = second.Do("POST", "/api/series/"+url.PathEscape("toonhaven:iron-orchard")+"/archive", annTok, map[string]any{"scope": "latest"})
	require.Less(t, r.Code, 300, "%s", r.Body)
	apptest.Eventually(t, "the newest readable chapter archived", func() bool {
		return second.Count(`SELECT count(*) FROM archive_chapters WHERE series_key = 'toonhaven:iron-orchard' AND state = 'archived'
			AND url = $1`, ironOrchard+"chapter-100/") == 1
	})

	script := second.Do("GET", "/userscripts/lectern-manga.user.js", "", nil)
	require.Equal(t, http.StatusOK, script.Code)
	require.Contains(t, string(script.Body), "// @match        https://toonhaven.test/*\n")
	require.Contains(t, string(script.Body), "// @match        https://www.toonhaven.test/*\n")
	require.Contains(t, string(script.Body), "// @match        https://asurascans.com/*\n", "the built-in Sites stay")
	require.NotContains(t, string(second.Do("GET", "/userscripts/lectern-novel.user.js", "", nil).Body), "toonhaven.test",
		"a manga Site is in the manga script only")
	require.Regexp(t, `// @version +\d+\.\d+\.\d+\.\d+\n`, string(script.Body), "a new version, so the manager's update check brings the list")
	require.Contains(t, string(script.Body), `const LECTERN_ADDED_SITES = '[{"site":"toonhaven","family":"madara","hosts":["toonhaven.test"],`+
		`"series_paths":["manga","series","comic","novel","webtoon"]}]';`, "the family adapters know the new Site")
}

// Removing a Site stops its polling and keeps its Bookmarks, their Series
// gone with the reason "site removed"; adding it back with the same name
// and family resumes them. Another family under a held name is refused.
func TestRemovingAndReaddingAFamilySite(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{PublicBaseURL: testBase, Workers: 2})
	owner, ann := a.Token("olive", true), a.Token("ann", false)
	serveToonhaven(t, a)
	def := map[string]any{"site": "toonhaven", "family": "madara", "hosts": []string{"toonhaven.test"}, "kind": "manga"}
	require.Equal(t, http.StatusCreated, a.Do("POST", "/api/admin/sites", owner, def).Code)
	require.Equal(t, http.StatusCreated, a.Do("PUT", "/api/bookmarks/toonhaven:iron-orchard", ann, putBody("toonhaven", ironOrchard, "Chapter 99")).Code)
	apptest.Eventually(t, "polled", func() bool { l := a.Bookmark(ann, "toonhaven:iron-orchard").LatestChapter; return l != nil && *l != "" })

	require.Equal(t, http.StatusNoContent, a.Do("DELETE", "/api/admin/sites/toonhaven", owner, nil).Code)
	require.Equal(t, "Chapter 99", a.Bookmark(ann, "toonhaven:iron-orchard").Chapter, "the Bookmark stays")
	reason, err := a.Store.SeriesGone(context.Background(), "toonhaven:iron-orchard")
	require.NoError(t, err)
	require.Equal(t, "site removed", reason)
	var list api.SitesJSON
	a.Do("GET", "/api/admin/sites", owner, nil).JSON(t, &list)
	for _, s := range list.Sites {
		require.NotEqual(t, "toonhaven", s.Site)
	}
	require.Equal(t, 0, a.Count(`SELECT count(*) FROM series WHERE key = 'toonhaven:iron-orchard' AND gone_at IS NULL`))
	due, err := a.Store.PollCandidates(context.Background(), time.Now().Add(365*24*time.Hour))
	require.NoError(t, err)
	for _, c := range due {
		require.NotEqual(t, "toonhaven:iron-orchard", c.Key, "a gone Series is not polled")
	}
	held, err := a.Store.HeldSites(context.Background())
	require.NoError(t, err)
	require.NotContains(t, held, "toonhaven", "nor planned")
	require.Equal(t, http.StatusNotFound, a.Do("DELETE", "/api/admin/sites/toonhaven", owner, nil).Code)

	other := map[string]any{"site": "toonhaven", "family": "mangathemesia", "hosts": []string{"toonhaven.test"}, "kind": "manga"}
	r := a.Do("POST", "/api/admin/sites", owner, other)
	require.Equal(t, http.StatusConflict, r.Code, "%s", r.Body)
	require.Contains(t, r.ErrorMsg(t), "another family")

	r = a.Do("POST", "/api/admin/sites", owner, def)
	require.Equal(t, http.StatusCreated, r.Code, "%s", r.Body)
	var back api.AddedSiteJSON
	r.JSON(t, &back)
	require.True(t, back.Resumed)
	reason, err = a.Store.SeriesGone(context.Background(), "toonhaven:iron-orchard")
	require.NoError(t, err)
	require.Empty(t, reason)
	held, err = a.Store.HeldSites(context.Background())
	require.NoError(t, err)
	require.Contains(t, held, "toonhaven", "planned again")
}

func TestAddingASiteRefusesWhatIsNotASite(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	owner, ann := a.Token("olive", true), a.Token("ann", false)
	ok := map[string]any{"site": "toonhaven", "family": "madara", "hosts": []string{"toonhaven.test"}, "kind": "manga"}
	require.Equal(t, http.StatusForbidden, a.Do("POST", "/api/admin/sites", ann, ok).Code, "the Owner's only")
	for _, tc := range []struct {
		body   map[string]any
		status int
		says   string
	}{
		{map[string]any{"site": "asura", "family": "madara", "hosts": []string{"x.test"}}, 422, "built-in"},
		{map[string]any{"site": "Toon", "family": "madara", "hosts": []string{"x.test"}}, 422, "lower-case"},
		{map[string]any{"site": "x", "family": "joomla", "hosts": []string{"x.test"}}, 422, "unknown family"},
		{map[string]any{"site": "x", "family": "madara", "hosts": []string{"asurascans.com"}}, 422, "already a host of the Site asura"},
		{map[string]any{"site": "x", "family": "madara", "hosts": []string{"127.0.0.1"}}, 422, "IP address"},
		{map[string]any{"site": "x", "family": "madara", "hosts": []string{"x.test:8443"}}, 422, "port"},
		{map[string]any{"site": "x", "family": "madara", "hosts": []string{"*.x.test"}}, 422, "wildcard"},
		{map[string]any{"site": "x", "family": "madara", "hosts": []string{"x.test"}, "options": map[string]string{"selector": "h1"}}, 422, "no option"},
		{map[string]any{"site": "x", "family": "lightnovelwp", "hosts": []string{"x.test"}, "kind": "manga"}, 422, "serves novel"},
	} {
		r := a.Do("POST", "/api/admin/sites", owner, tc.body)
		require.Equal(t, tc.status, r.Code, "%v: %s", tc.body, r.Body)
		require.Contains(t, r.ErrorMsg(t), tc.says)
	}
	require.Equal(t, http.StatusCreated, a.Do("POST", "/api/admin/sites", owner, ok).Code)
	r := a.Do("POST", "/api/admin/sites", owner, ok)
	require.Equal(t, http.StatusConflict, r.Code, "%s", r.Body)
	r = a.Do("POST", "/api/admin/sites", owner, map[string]any{"site": "toon2", "family": "madara", "hosts": []string{"www.toonhaven.test"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, "a host another Site has, www. or not")

	// PUT changes an added Site's hosts and options; a built-in has none.
	r = a.Do("PUT", "/api/admin/sites/toonhaven", owner, map[string]any{"hosts": []string{"toonhaven.test", "toonhaven.example"},
		"options": map[string]string{"chapters": "admin-ajax"}})
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	var ch api.SiteSettingsAnswerJSON
	r.JSON(t, &ch)
	require.Equal(t, []string{"toonhaven.test", "toonhaven.example"}, ch.Hosts)
	require.Equal(t, map[string]string{"chapters": "admin-ajax"}, ch.Options)
	ref, err := a.Server.Sites().Registry.Resolve("https://toonhaven.example/manga/iron-orchard/")
	require.NoError(t, err)
	require.Equal(t, "toonhaven:iron-orchard", ref.Key)
	r = a.Do("PUT", "/api/admin/sites/asura", owner, map[string]any{"hosts": []string{"asura.test"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, "%s", r.Body)
	require.Contains(t, r.ErrorMsg(t), "built-in")
	r = a.Do("PUT", "/api/admin/sites/toonhaven", owner, map[string]any{"options": map[string]string{"chapters": "graphql"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Equal(t, http.StatusNotFound, a.Do("PUT", "/api/admin/sites/nosuch", owner, map[string]any{"hosts": []string{"a.test"}}).Code)
}

// The console's "Test this Site": the probe of a pasted series URL,
// fetched now through the pinned, paced fetcher, nothing stored.
func TestProbingASiteBeforeAddingIt(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{PublicBaseURL: testBase})
	owner := a.Token("olive", true)
	serveToonhaven(t, a)
	r := a.Do("POST", "/api/admin/sites/probe", owner, map[string]any{"family": "madara", "kind": "manga", "url": ironOrchard})
	require.Equal(t, http.StatusOK, r.Code, "%s", r.Body)
	var res struct {
		Key           string `json:"key"`
		Title         string `json:"title"`
		Cover         string `json:"cover"`
		Problem       string `json:"problem"`
		LatestChapter struct {
			Label  string `json:"label"`
			Locked bool   `json:"locked"`
		} `json:"latest_chapter"`
		Chapters []any `json:"chapters"`
	}
	r.JSON(t, &res)
	require.Equal(t, "madara:iron-orchard", res.Key)
	require.Equal(t, "Iron Orchard", res.Title)
	require.Equal(t, ironCover, res.Cover)
	require.Equal(t, "Chapter 101", res.LatestChapter.Label)
	require.True(t, res.LatestChapter.Locked)
	require.Len(t, res.Chapters, 3)
	require.Empty(t, res.Problem)
	require.Equal(t, 1, a.Net.Hits(ironOrchard+"ajax/chapters/"), "the chapter list is fetched once")
	require.Zero(t, a.Count(`SELECT count(*) FROM added_sites`))

	r = a.Do("POST", "/api/admin/sites/probe", owner, map[string]any{"family": "madara", "url": "http://toonhaven.test/manga/x/"})
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.True(t, strings.Contains(r.ErrorMsg(t), "https"))
}

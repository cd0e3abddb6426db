package tracker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/secretbox"
	"github.com/lectern-reader/lectern/backend/internal/tracker"
	"github.com/lectern-reader/lectern/backend/internal/tracker/trackertest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The Series the tests read, on the fixture Site asura.
const (
	soloKey = "asura:solo-leveling"
	soloURL = "https://asurascans.com/comics/solo-leveling-1a2b3c4d"
	orvKey  = "asura:omniscient-reader"
	orvURL  = "https://asurascans.com/comics/omniscient-reader-9f8e7d6c"
)

type testBundle struct {
	t            *testing.T
	app          *apptest.App
	svc          *tracker.Service
	ani, mal, mu *trackertest.Fake
	token        string
	readerID     int64
}

// setup composes Lectern over three fake trackers on loopback, unpaced
// (pacing has its own test), with a Reader and their API token. River's
// workers do not run: the tests run the sync jobs themselves (runSyncs),
// so what a job scheduled is read before anything runs it.
func setup(t *testing.T, edit ...func(*config.Config)) *testBundle {
	t.Helper()
	b := &testBundle{t: t, ani: trackertest.AniList(t), mal: trackertest.MAL(t), mu: trackertest.MangaUpdates(t)}
	b.app = apptest.New(t, apptest.Options{Config: func(c *config.Config) {
		c.SecretKey = secretbox.NewKey()
		c.AniListAPIURL, c.AniListOAuthURL = b.ani.GraphQLURL(), b.ani.OAuthURL()
		c.AniListClientID, c.AniListClientSecret = b.ani.ClientID, b.ani.ClientSecret
		c.MALAPIURL, c.MALOAuthURL = b.mal.APIURL(), b.mal.MALOAuthURL()
		c.MALClientID, c.MALClientSecret = b.mal.ClientID, b.mal.ClientSecret
		c.MangaUpdatesAPIURL = b.mu.MUAPIURL()
		c.TrackerPace = "anilist=0s,myanimelist=0s,mangaupdates=0s"
		for _, e := range edit {
			e(c)
		}
	}})
	b.svc = b.app.Server.Trackers()
	r := b.app.Reader("ann", false)
	b.readerID, b.token = r.ID, b.app.NewToken(r)
	return b
}

func (b *testBundle) do(method, path string, body any) apptest.Response {
	b.t.Helper()
	return b.app.Do(method, path, b.token, body)
}

// put records Progress as the panel does.
func (b *testBundle) put(key, seriesURL, chapter string) {
	b.t.Helper()
	res := b.do("PUT", "/api/bookmarks/"+key, map[string]any{"site": "asura", "series_url": seriesURL, "title": "Solo Leveling", "chapter": chapter})
	require.Less(b.t, res.Code, 300, "%s", res.Body)
}

func (b *testBundle) linkAniList() {
	b.t.Helper()
	res := b.do("POST", "/api/trackers/anilist", map[string]string{"token": b.ani.Token})
	require.Equal(b.t, http.StatusOK, res.Code, "%s", res.Body)
}

func (b *testBundle) mapEntry(key, name string, id any) {
	b.t.Helper()
	res := b.do("PUT", "/api/bookmarks/"+key+"/trackers/"+name, map[string]any{"id": id})
	require.Less(b.t, res.Code, 300, "%s", res.Body)
}

type queued struct {
	ID          int64
	Args        tracker.SyncArgs
	ScheduledAt time.Time
	DueIn       time.Duration // scheduled_at - now() on the database's clock
}

// syncJobs lists the tracker_sync jobs waiting to run.
func (b *testBundle) syncJobs() []queued {
	b.t.Helper()
	rows, err := b.app.Store.Pool.Query(context.Background(), `
		SELECT id, args, scheduled_at, extract(epoch FROM scheduled_at - now())
		FROM river_job WHERE kind = 'tracker_sync' AND state IN ('available', 'scheduled') ORDER BY id`)
	require.NoError(b.t, err)
	defer rows.Close()
	var out []queued
	for rows.Next() {
		var q queued
		var args []byte
		var due float64
		require.NoError(b.t, rows.Scan(&q.ID, &args, &q.ScheduledAt, &due))
		require.NoError(b.t, json.Unmarshal(args, &q.Args))
		q.DueIn = time.Duration(due * float64(time.Second))
		out = append(out, q)
	}
	require.NoError(b.t, rows.Err())
	return out
}

// runSyncs runs every waiting sync job once, as River would when each is
// due, and marks it finished; a job that snoozes keeps waiting. It
// returns the snoozes.
func (b *testBundle) runSyncs() []time.Duration {
	b.t.Helper()
	var snoozes []time.Duration
	for range 10 {
		jobs := b.syncJobs()
		ran := 0
		for _, j := range jobs {
			if j.DueIn > tracker.SyncDelay+time.Second {
				continue // a retry for later: River would not run it yet
			}
			err := b.svc.Sync(context.Background(), j.Args)
			var sn *rivertype.JobSnoozeError
			if errors.As(err, &sn) {
				snoozes = append(snoozes, sn.Duration)
				_, err := b.app.Store.Pool.Exec(context.Background(), `UPDATE river_job SET scheduled_at = now() + $2::interval WHERE id = $1`, j.ID, sn.Duration)
				require.NoError(b.t, err)
				continue
			}
			require.NoError(b.t, err)
			_, err = b.app.Store.Pool.Exec(context.Background(), `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`, j.ID)
			require.NoError(b.t, err)
			ran++
		}
		if ran == 0 {
			return snoozes
		}
	}
	return snoozes
}

func (b *testBundle) bookmarkNumber(key string) (string, float64) {
	b.t.Helper()
	res := b.do("GET", "/api/bookmarks/"+key, nil)
	require.Equal(b.t, 200, res.Code, "%s", res.Body)
	var bm struct {
		Chapter       string  `json:"chapter"`
		ChapterNumber float64 `json:"chapter_number"`
	}
	res.JSON(b.t, &bm)
	return bm.Chapter, bm.ChapterNumber
}

func (b *testBundle) accounts() map[string]tracker.Account {
	b.t.Helper()
	res := b.do("GET", "/api/trackers", nil)
	require.Equal(b.t, 200, res.Code, "%s", res.Body)
	var list []tracker.Account
	res.JSON(b.t, &list)
	out := map[string]tracker.Account{}
	for _, a := range list {
		out[a.Tracker] = a
	}
	return out
}

// Ten quick Progress records make one sync job, due five seconds after the
// first, which sends the last of them in one write.
func TestTenPutsMakeOneRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(soloKey, soloURL, "Chapter 10")
	b.linkAniList()
	b.ani.Set(30013, trackertest.Entry{Progress: 10, Status: "CURRENT"})
	b.mapEntry(soloKey, tracker.AniList, 30013)
	b.runSyncs()
	b.ani.Reset()

	for ch := 11; ch <= 20; ch++ {
		b.put(soloKey, soloURL, fmt.Sprintf("Chapter %d", ch))
	}
	jobs := b.syncJobs()
	require.Len(t, jobs, 1, "one job for the burst")
	var gap float64
	require.NoError(t, b.app.Store.Pool.QueryRow(context.Background(), `
		SELECT extract(epoch FROM j.scheduled_at - e.dirty_since) FROM river_job j, tracker_entries e
		WHERE j.id = $1 AND e.id = $2`, jobs[0].ID, jobs[0].Args.Entry).Scan(&gap))
	require.InDelta(t, tracker.SyncDelay.Seconds(), gap, 0.001, "due five seconds after the first unsent record")

	b.runSyncs()
	require.Equal(t, 1, b.ani.Count("SaveMediaListEntry"), "one write for ten records")
	require.Equal(t, 1, b.ani.Count("MediaList"), "one read before it, so nothing is lowered")
	e, _ := b.ani.Get(30013)
	require.Equal(t, 20, e.Progress, "the Progress current when the job ran")
	require.Equal(t, "CURRENT", e.Status)
	require.Empty(t, b.syncJobs())

	// A record made while a job runs is not lost: it queues the next round.
	b.put(soloKey, soloURL, "Chapter 21")
	require.Len(t, b.syncJobs(), 1)
}

// The tracker is never lowered: a higher count there wins, and comes back
// to Lectern's Progress.
func TestPushNeverLowers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(soloKey, soloURL, "Chapter 12")
	b.linkAniList()
	b.ani.Set(30013, trackertest.Entry{Progress: 50, Status: "CURRENT"})
	b.mapEntry(soloKey, tracker.AniList, "https://anilist.co/manga/30013/Solo-Leveling")
	b.runSyncs()
	require.Zero(t, b.ani.Count("SaveMediaListEntry"), "12 never overwrites 50")
	e, _ := b.ani.Get(30013)
	require.Equal(t, 50, e.Progress)
	label, n := b.bookmarkNumber(soloKey)
	require.Equal(t, "Chapter 50", label, "the tracker's higher count is Lectern's now")
	require.Equal(t, 50.0, n)

	// A lower record later still does not lower the tracker.
	b.put(soloKey, soloURL, "Chapter 3")
	b.runSyncs()
	require.Zero(t, b.ani.Count("SaveMediaListEntry"))
	e, _ = b.ani.Get(30013)
	require.Equal(t, 50, e.Progress)
}

// A fractional chapter sends its whole part; Lectern keeps the fraction.
func TestFractionsFloor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(soloKey, soloURL, "Chapter 12.5")
	b.linkAniList()
	b.mapEntry(soloKey, tracker.AniList, 30013)
	b.runSyncs()
	e, ok := b.ani.Get(30013)
	require.True(t, ok, "added to the list")
	require.Equal(t, 12, e.Progress)
	label, n := b.bookmarkNumber(soloKey)
	require.Equal(t, "Chapter 12.5", label)
	require.Equal(t, 12.5, n, "the fraction stays in Lectern")

	// 12 on the tracker is not behind 12.5: nothing is written either way.
	b.ani.Reset()
	b.put(soloKey, soloURL, "Chapter 12.5")
	b.runSyncs()
	require.Zero(t, b.ani.Count("SaveMediaListEntry"))
	_, n = b.bookmarkNumber(soloKey)
	require.Equal(t, 12.5, n)
}

// Completed is sent only when the Reader marks the Bookmark.
func TestCompletedOnlyByTheReader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(soloKey, soloURL, "Chapter 200")
	b.linkAniList()
	b.mapEntry(soloKey, tracker.AniList, 30013)
	b.runSyncs()
	e, _ := b.ani.Get(30013)
	require.Equal(t, "CURRENT", e.Status)

	res := b.do("PUT", "/api/bookmarks/"+soloKey+"/completed", map[string]bool{"completed": true})
	require.Equal(t, 200, res.Code, "%s", res.Body)
	b.runSyncs()
	e, _ = b.ani.Get(30013)
	require.Equal(t, "COMPLETED", e.Status)
	require.Equal(t, 200, e.Progress)

	res = b.do("GET", "/api/bookmarks/"+soloKey+"/trackers", nil)
	require.Equal(t, 200, res.Code)
	var bt tracker.BookmarkTrackers
	res.JSON(t, &bt)
	require.True(t, bt.Completed)
	require.Len(t, bt.Entries, 1)
	require.Equal(t, "https://anilist.co/manga/30013", bt.Entries[0].URL)
	require.Equal(t, 200, *bt.Entries[0].SyncedProgress)
}

// A 429 holds the tracker until Retry-After: the job queues the next round
// then, every other sync of that tracker waits too, and the PUT is never
// held up.
func TestRetryAfterWaits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(soloKey, soloURL, "Chapter 7")
	b.put(orvKey, orvURL, "Chapter 3")
	b.linkAniList()
	b.ani.Fail(trackertest.Failure{Op: "MediaList", Status: 429, RetryAfter: "120", Body: `{"errors":[{"message":"Too Many Requests.","status":429}]}`})
	b.mapEntry(soloKey, tracker.AniList, 30013)
	b.runSyncs()
	require.Zero(t, b.ani.Count("SaveMediaListEntry"))

	jobs := b.syncJobs()
	require.Len(t, jobs, 1, "the retry")
	require.InDelta(t, 120, jobs[0].DueIn.Seconds(), 5, "scheduled at Retry-After")
	acc := b.accounts()[tracker.AniList]
	require.True(t, acc.Linked)
	require.Contains(t, acc.LastError, "rate limited")

	// Another entry's sync, due now, waits for the same moment without
	// asking AniList anything.
	b.ani.Reset()
	b.mapEntry(orvKey, tracker.AniList, 119257)
	snoozes := b.runSyncs()
	require.Len(t, snoozes, 1)
	require.InDelta(t, 120, snoozes[0].Seconds(), 5)
	require.Zero(t, b.ani.Count(""), "nothing reaches a tracker that asked to wait")

	// A PUT meanwhile answers at once and joins the waiting retry.
	b.put(soloKey, soloURL, "Chapter 8")
	require.Len(t, b.syncJobs(), 2, "the two entries' jobs, no third")
}

// An outage retries with a growing back-off; the record is kept waiting.
func TestOutageBacksOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(soloKey, soloURL, "Chapter 7")
	b.linkAniList()
	b.ani.Fail(trackertest.Failure{Status: 502, Body: `<html>bad gateway</html>`}, trackertest.Failure{Status: 503})
	b.mapEntry(soloKey, tracker.AniList, 30013)
	b.runSyncs()
	jobs := b.syncJobs()
	require.Len(t, jobs, 1)
	require.InDelta(t, 30, jobs[0].DueIn.Seconds(), 3, "first back-off")
	require.NoError(t, b.svc.Sync(context.Background(), jobs[0].Args))
	_, err := b.app.Store.Pool.Exec(context.Background(), `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`, jobs[0].ID)
	require.NoError(t, err)
	jobs = b.syncJobs()
	require.Len(t, jobs, 1)
	require.InDelta(t, 60, jobs[0].DueIn.Seconds(), 3, "doubled")
	require.Contains(t, b.accounts()[tracker.AniList].LastError, "503")
}

// A revoked token shows the account unlinked with the reason; the mapping
// and the unsent record stay for the next link.
func TestRevokedTokenUnlinks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(soloKey, soloURL, "Chapter 7")
	b.linkAniList()
	b.mapEntry(soloKey, tracker.AniList, 30013)
	b.ani.Revoke()
	b.runSyncs()
	acc := b.accounts()[tracker.AniList]
	require.False(t, acc.Linked)
	require.Contains(t, acc.UnlinkedReason, "AniList refused the token")
	require.Contains(t, acc.UnlinkedReason, "Invalid token")
	require.Empty(t, b.syncJobs(), "nothing retries a refused token")

	// Linking again sends what waited.
	res := b.do("POST", "/api/trackers/anilist", map[string]string{"token": b.ani.Token})
	require.Equal(t, 200, res.Code, "%s", res.Body)
	b.runSyncs()
	e, _ := b.ani.Get(30013)
	require.Equal(t, 7, e.Progress)
}

// A MyAnimeList token the tracker refuses is refreshed once; a refresh
// token refused too unlinks the account.
func TestMALRefreshThenUnlink(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(soloKey, soloURL, "Chapter 9")
	b.linkMAL()
	b.mapEntry(soloKey, tracker.MyAnimeList, 151807)
	b.mal.Fail(trackertest.Failure{Op: "get", Status: 401, Body: `{"error":"invalid_token"}`})
	b.runSyncs()
	e, _ := b.mal.Get(151807)
	require.Equal(t, 9, e.Progress, "sent after the refresh")
	require.Equal(t, 1, b.mal.Count("token")-1, "one refresh after the link's exchange")
	require.True(t, b.accounts()[tracker.MyAnimeList].Linked)

	b.mal.Revoke()
	b.put(soloKey, soloURL, "Chapter 10")
	b.runSyncs()
	acc := b.accounts()[tracker.MyAnimeList]
	require.False(t, acc.Linked)
	require.Contains(t, acc.UnlinkedReason, "MyAnimeList refused the token")
}

// linkMAL goes through the OAuth flow as a browser would.
func (b *testBundle) linkMAL() {
	b.t.Helper()
	ctx := context.Background()
	to, err := b.svc.StartOAuth(ctx, b.readerID, tracker.MyAnimeList)
	require.NoError(b.t, err)
	q := parseQuery(b.t, to)
	code := b.mal.IssueCode(q.Get("code_challenge"), q.Get("redirect_uri"))
	_, err = b.svc.FinishOAuth(ctx, b.readerID, tracker.MyAnimeList, q.Get("state"), code)
	require.NoError(b.t, err)
}

// Linking backfills every mapped entry both ways: the higher Progress of
// the two wins on each side.
func TestPullOnLinkBackfills(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(soloKey, soloURL, "Chapter 30")
	b.put(orvKey, orvURL, "Chapter 5")
	// Mapped before the link: no job, nothing to send to yet.
	b.mapEntry(soloKey, tracker.MyAnimeList, 151807)
	b.mapEntry(orvKey, tracker.MyAnimeList, 132214)
	require.Empty(t, b.syncJobs())
	b.mal.Set(151807, trackertest.Entry{Progress: 10, Status: "reading"})
	b.mal.Set(132214, trackertest.Entry{Progress: 20, Status: "on_hold"})

	b.linkMAL()
	require.Len(t, b.syncJobs(), 2, "the link queues a backfill of every mapped entry")
	b.runSyncs()
	e, _ := b.mal.Get(151807)
	require.Equal(t, 30, e.Progress, "Lectern's 30 beats MyAnimeList's 10")
	require.Equal(t, "reading", e.Status)
	e, _ = b.mal.Get(132214)
	require.Equal(t, 20, e.Progress, "untouched")
	require.Equal(t, "on_hold", e.Status, "nothing written: its status stays")
	label, n := b.bookmarkNumber(orvKey)
	require.Equal(t, "Chapter 20", label, "MyAnimeList's 20 beats Lectern's 5")
	require.Equal(t, 20.0, n)
}

// A count raised from one tracker reaches the Reader's other trackers.
func TestSeveralTrackersConverge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(soloKey, soloURL, "Chapter 4")
	b.linkAniList()
	b.linkMAL()
	b.ani.Set(30013, trackertest.Entry{Progress: 40, Status: "CURRENT"})
	b.mal.Set(151807, trackertest.Entry{Progress: 4, Status: "reading"})
	b.mapEntry(soloKey, tracker.AniList, 30013)
	b.runSyncs()
	b.mapEntry(soloKey, tracker.MyAnimeList, 151807)
	b.runSyncs()
	e, _ := b.mal.Get(151807)
	require.Equal(t, 40, e.Progress)
	_, n := b.bookmarkNumber(soloKey)
	require.Equal(t, 40.0, n)
}

// MangaUpdates links with the account's password (only its session is
// kept), adds a series to the reading list, then updates it.
func TestMangaUpdatesPush(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.do("POST", "/api/trackers/mangaupdates", map[string]string{"username": b.mu.UserName, "password": "wrong"})
	require.Equal(t, http.StatusUnprocessableEntity, res.Code, "%s", res.Body)
	res = b.do("POST", "/api/trackers/mangaupdates", map[string]string{"username": b.mu.UserName, "password": b.mu.Password})
	require.Equal(t, 200, res.Code, "%s", res.Body)
	var stored []byte
	require.NoError(t, b.app.Store.Pool.QueryRow(context.Background(), `SELECT token FROM tracker_accounts WHERE tracker = 'mangaupdates'`).Scan(&stored))
	require.NotContains(t, string(stored), b.mu.Token, "sealed at rest")
	require.NotContains(t, string(stored), b.mu.Password)

	b.put(soloKey, soloURL, "Chapter 3")
	b.mapEntry(soloKey, tracker.MangaUpdates, "pb8uwds") // the base-36 id of its URL
	b.runSyncs()
	require.Equal(t, 1, b.mu.Count("add"))
	e, ok := b.mu.Get(55099564912)
	require.True(t, ok, "pb8uwds is 55099564912")
	require.Equal(t, 3, e.Progress)
	require.Equal(t, "0", e.Status, "the reading list")

	b.put(soloKey, soloURL, "Chapter 4")
	b.runSyncs()
	require.Equal(t, 1, b.mu.Count("update"))
	e, _ = b.mu.Get(55099564912)
	require.Equal(t, 4, e.Progress)
}

// Without SECRET_KEY the server serves, and linking answers 503 naming it.
func TestNoSecretKey(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *config.Config) { c.SecretKey = "" })
	res := b.do("POST", "/api/trackers/anilist", map[string]string{"token": b.ani.Token})
	require.Equal(t, http.StatusServiceUnavailable, res.Code)
	require.Contains(t, res.ErrorMsg(t), "SECRET_KEY")
	require.Zero(t, b.ani.Count(""), "the token is not even sent")
	b.put(soloKey, soloURL, "Chapter 1")
}

func parseQuery(t *testing.T, raw string) interface{ Get(string) string } {
	t.Helper()
	i := strings.IndexByte(raw, '?')
	require.Positive(t, i)
	q, err := urlParseQuery(raw[i+1:])
	require.NoError(t, err)
	return q
}

// A tracker's pace is shared: each request takes the next slot, every
// interval after the one before; a slot beyond the longest wait a job
// sleeps is not taken, and the job snoozes for it instead.
func TestPacePerTracker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	st := b.app.Store
	wait, ok, err := st.ReserveTrackerSlot(ctx, "anilist", 2*time.Second, tracker.MaxPaceWait)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, wait)
	wait, ok, err = st.ReserveTrackerSlot(ctx, "anilist", 2*time.Second, tracker.MaxPaceWait)
	require.NoError(t, err)
	require.True(t, ok)
	require.InDelta(t, 2, wait.Seconds(), 0.5, "the next slot, two seconds on")
	wait, ok, err = st.ReserveTrackerSlot(ctx, "myanimelist", time.Second, tracker.MaxPaceWait)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, wait, "another tracker has its own pace")
	wait, ok, err = st.ReserveTrackerSlot(ctx, "anilist", 2*time.Second, time.Second)
	require.NoError(t, err)
	require.False(t, ok, "four seconds off is beyond a one-second wait")
	require.InDelta(t, 4, wait.Seconds(), 0.5)

	// A Retry-After in force snoozes a sync before it claims anything.
	require.NoError(t, st.BlockTracker(ctx, "anilist", time.Now().Add(90*time.Second)))
	b.put(soloKey, soloURL, "Chapter 2")
	b.linkAniList()
	b.mapEntry(soloKey, tracker.AniList, 30013)
	snoozes := b.runSyncs()
	require.Len(t, snoozes, 1)
	require.InDelta(t, 90, snoozes[0].Seconds(), 5)
	require.Zero(t, b.ani.Count("MediaList"))
}

// With River's workers running, a recorded Progress reaches the tracker by
// itself.
func TestSyncRunsOnRiver(t *testing.T) {
	t.Parallel()
	ani := trackertest.AniList(t)
	app := apptest.New(t, apptest.Options{Workers: 2, Config: func(c *config.Config) {
		c.SecretKey = secretbox.NewKey()
		c.AniListAPIURL = ani.GraphQLURL()
		c.TrackerPace = "anilist=0s"
	}})
	token := app.Token("ann", false)
	res := app.Do("POST", "/api/trackers/anilist", token, map[string]string{"token": ani.Token})
	require.Equal(t, 200, res.Code, "%s", res.Body)
	res = app.Do("PUT", "/api/bookmarks/"+soloKey, token, map[string]any{"site": "asura", "series_url": soloURL, "chapter": "Chapter 33"})
	require.Equal(t, 201, res.Code, "%s", res.Body)
	res = app.Do("PUT", "/api/bookmarks/"+soloKey+"/trackers/anilist", token, map[string]any{"id": 30013})
	require.Equal(t, 201, res.Code, "%s", res.Body)
	apptest.Eventually(t, "AniList has the Progress", func() bool {
		e, ok := ani.Get(30013)
		return ok && e.Progress == 33
	})
}

// The AniList list comes in through its API: previewed, then applied; an
// entry AniList links to a supported Site's page becomes a Bookmark with
// AniList's count and the mapping, the rest are listed as not placeable.
func TestAniListListImport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.linkAniList()
	b.ani.Set(105398, trackertest.Entry{Progress: 110, Status: "CURRENT", Title: "Solo Leveling", Links: []string{"https://www.webtoons.com/x", soloURL}})
	b.ani.Set(118586, trackertest.Entry{Progress: 4, Status: "PLANNING", Title: "Frieren"})

	res := b.do("POST", "/api/trackers/anilist/import?dry_run=true", nil)
	require.Equal(t, 200, res.Code, "%s", res.Body)
	var rep struct {
		Applied  bool `json:"applied"`
		Created  int  `json:"created"`
		Unplaced []struct {
			Title    string            `json:"title"`
			Trackers map[string]string `json:"trackers"`
		} `json:"unplaced"`
	}
	res.JSON(t, &rep)
	require.False(t, rep.Applied)
	require.Equal(t, 1, rep.Created)
	require.Len(t, rep.Unplaced, 1)
	require.Equal(t, "Frieren", rep.Unplaced[0].Title)
	require.Equal(t, map[string]string{"anilist": "118586"}, rep.Unplaced[0].Trackers)
	require.Equal(t, 404, b.do("GET", "/api/bookmarks/"+soloKey, nil).Code, "a preview writes nothing")

	res = b.do("POST", "/api/trackers/anilist/import", nil)
	require.Equal(t, 200, res.Code, "%s", res.Body)
	label, _ := b.bookmarkNumber(soloKey)
	require.Equal(t, "Chapter 110", label)
	res = b.do("GET", "/api/bookmarks/"+soloKey+"/trackers", nil)
	var bt tracker.BookmarkTrackers
	res.JSON(t, &bt)
	require.Len(t, bt.Entries, 1)
	require.Equal(t, "105398", bt.Entries[0].ID)
	require.Equal(t, "import", bt.Entries[0].Source)
}

// An import of a file that carries tracker ids queues the syncs of what it
// wrote, as a PUT does.
func TestFileImportQueuesSyncs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.linkMAL()
	file := `<myanimelist><manga><manga_mangadb_id>151807</manga_mangadb_id><manga_title><![CDATA[Solo Leveling]]></manga_title>` +
		`<my_read_chapters>12</my_read_chapters><lectern_series_url>` + soloURL + `</lectern_series_url></manga></myanimelist>`
	res := b.app.Do("POST", "/api/import?format=mal", b.token, file)
	require.Equal(t, 200, res.Code, "%s", res.Body)
	require.Len(t, b.syncJobs(), 1)
	b.runSyncs()
	e, ok := b.mal.Get(151807)
	require.True(t, ok)
	require.Equal(t, 12, e.Progress)
}

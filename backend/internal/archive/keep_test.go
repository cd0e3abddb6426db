package archive_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// Keep archiving through the whole deployment: the composed server with its
// workers (the Poll, the follow, the archive jobs) on a real Postgres and
// River, and the fixture Sites on the fake network. demonic's series page
// lists chapters 1, 2, 180, 180.5, 181 and 182.

// keepRig is one such deployment with Ann keeping demonic's Series
// archived; the Series was last seen at Chapter 180.5.
type keepRig struct {
	t     *testing.T
	app   *apptest.App
	key   string
	owner string
}

func demonicChapter(n string) string {
	return "https://demonicscans.org/chaptered.php?manga=4812&chapter=" + n
}

func newKeepRig(t *testing.T) *keepRig {
	t.Helper()
	app := apptest.New(t, apptest.Options{Workers: 4, Sites: &fixturesites.Options{}, Logger: quietLogger(),
		Config: func(c *config.Config) { c.SitePace = "demonic=0" }})
	r := &keepRig{t: t, app: app, owner: app.Token("olive", true)}
	ann := app.Reader("ann", false)
	require.NoError(t, app.Store.SetArchiveReader(context.Background(), ann.ID, true, nil))
	tok := app.NewToken(ann)
	ref, err := latest.Default().Resolve(fixturesites.DemonicSeries)
	require.NoError(t, err)
	r.key = ref.Key

	// The Site serves the chapters it will release; their pages show the
	// fixture chapter's images, which the fixture Sites serve.
	body := []byte(readFixture(t, "demonic", "chapter.html"))
	for _, n := range []string{"181", "182"} {
		app.Net.Set(demonicChapter(n), http.StatusOK, "text/html; charset=utf-8", body)
	}

	resp := app.Do("PUT", "/api/bookmarks/"+url.PathEscape(r.key), tok,
		map[string]any{"site": "demonic", "series_url": ref.SeriesURL, "chapter": "Chapter 180"})
	require.Equal(t, http.StatusCreated, resp.Code, "%s", resp.Body)
	apptest.Eventually(t, "the Acquisition finds the Latest Chapter", func() bool {
		return app.Count(`SELECT count(*) FROM series WHERE key = $1 AND latest_label = 'Chapter 182'`, r.key) == 1
	})
	// Until River records the Acquisition finished, a poll asked for now
	// is its duplicate.
	apptest.Eventually(t, "the Acquisition's job is finished", func() bool { return app.JobsDone("poll_series") })
	resp = app.Do("PUT", "/api/series/"+url.PathEscape(r.key)+"/archive/follow", tok, map[string]any{"follow": true})
	require.Equal(t, http.StatusOK, resp.Code, "%s", resp.Body)

	// The previous poll saw Chapter 180.5: 181 and 182 come out together.
	n := 180.5
	_, err = app.Store.Pool.Exec(context.Background(), `UPDATE series SET latest_label = 'Chapter 180.5', latest_number = $2, latest_url = $3 WHERE key = $1`,
		r.key, n, demonicChapter("180.5"))
	require.NoError(t, err)
	return r
}

// pollNow is the Owner's "poll now".
func (r *keepRig) pollNow() {
	r.t.Helper()
	resp := r.app.Do("POST", "/api/admin/series/"+url.PathEscape(r.key)+"/poll", r.owner, nil)
	require.Equal(r.t, http.StatusAccepted, resp.Code, "%s", resp.Body)
}

func (r *keepRig) archived(n string) bool {
	return r.app.Count(`SELECT count(*) FROM archive_chapters WHERE url = $1 AND state = 'archived' AND page_count = 4`, demonicChapter(n)) == 1
}

// A poll that finds two new chapters archives both: every chapter listed
// after the previous Latest Chapter, not only the newest.
func TestPollArchivesEveryChapterReleasedSinceTheLastPoll(t *testing.T) {
	t.Parallel()
	r := newKeepRig(t)
	r.pollNow()
	apptest.Eventually(t, "both new chapters archived", func() bool { return r.archived("181") && r.archived("182") })
	require.Equal(t, 2, r.app.Count(`SELECT count(*) FROM archive_chapters WHERE series_key = $1`, r.key),
		"only the chapters after the previous Latest Chapter: 180.5 and before were there already")
	// River marks a job completed a moment after its work commits.
	apptest.Eventually(t, "the follow is marked completed", func() bool {
		return r.app.Count(`SELECT count(*) FROM river_job WHERE kind = 'archive_follow' AND state = 'completed'`) == 1
	})
	var readerID int64
	require.NoError(t, r.app.Store.Pool.QueryRow(context.Background(),
		`SELECT DISTINCT requested_by FROM archive_chapters WHERE series_key = $1`, r.key).Scan(&readerID))
	ann, err := r.app.Store.ReaderByName(context.Background(), "ann")
	require.NoError(t, err)
	require.Equal(t, ann.ID, readerID, "charged to the Reader who keeps archiving")
}

// A follow that fails (here its table is out of reach) is not lost: River
// retries it with back-off, apart from the poll, and it succeeds once the
// database answers again.
func TestAFailedFollowIsRetried(t *testing.T) {
	t.Parallel()
	r := newKeepRig(t)
	exec := func(sql string) {
		_, err := r.app.Store.Pool.Exec(context.Background(), sql)
		require.NoError(t, err)
	}
	exec(`ALTER TABLE archive_readers RENAME TO archive_readers_away`)
	r.pollNow()
	var attemptedAt, scheduledAt time.Time
	// River keeps a short back-off "available" with a later time, a longer
	// one "retryable".
	apptest.Eventually(t, "the follow fails and waits to retry", func() bool {
		err := r.app.Store.Pool.QueryRow(context.Background(), `
			SELECT attempted_at, scheduled_at FROM river_job
			WHERE kind = 'archive_follow' AND cardinality(errors) > 0
				AND state IN ('retryable', 'available', 'scheduled')`).Scan(&attemptedAt, &scheduledAt)
		return err == nil
	})
	require.True(t, scheduledAt.After(attemptedAt), "retried after a back-off")
	require.Equal(t, 1, r.app.Count(`SELECT count(*) FROM series WHERE key = $1 AND latest_label = 'Chapter 182' AND poll_status = 'ok'`, r.key),
		"the poll itself succeeded")
	require.Zero(t, r.app.Count(`SELECT count(*) FROM archive_chapters`))
	exec(`ALTER TABLE archive_readers_away RENAME TO archive_readers`)

	apptest.Eventually(t, "the retried follow archives both chapters", func() bool { return r.archived("181") && r.archived("182") })
	apptest.Eventually(t, "the retried follow is marked completed", func() bool {
		return r.app.Count(`SELECT count(*) FROM river_job WHERE kind = 'archive_follow' AND state = 'completed' AND attempt >= 2`) == 1
	})
	st, err := r.app.Store.ArchiveChapterByURL(context.Background(), demonicChapter("182"))
	require.NoError(t, err)
	require.Equal(t, store.ArchiveArchived, st.State)
}

package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// twoMemberWork makes a Reader with a Work of two Bookmarks, asura:a and
// demonic:b.
func twoMemberWork(t *testing.T, st *store.Store) (readerID, workID int64) {
	t.Helper()
	ctx := context.Background()
	hash, err := credential.HashPassword("long enough password")
	require.NoError(t, err)
	ann, err := st.CreateReader(ctx, "ann", hash, false)
	require.NoError(t, err)
	for _, ns := range []store.NewSeries{
		{Key: "asura:a", Site: "asura", Kind: "manga", SeriesURL: "https://asurascans.com/comics/a"},
		{Key: "demonic:b", Site: "demonic", Kind: "manga", SeriesURL: "https://demonicscans.org/manga/b"},
	} {
		_, err = st.PutBookmark(ctx, ann.ID, ns, "", store.Progress{Chapter: "Chapter 1"})
		require.NoError(t, err)
	}
	w, err := st.CreateWork(ctx, ann.ID, []string{"asura:a", "demonic:b"})
	require.NoError(t, err)
	return ann.ID, w.ID
}

// Two removals from one two-member Work, each in its own transaction: at
// commit, each one's dissolve frees the other's Bookmark. Without the locks
// taken first they wait on each other's Bookmark row (40P01); through the
// store the second waits for the first (the Reader's membership lock, then
// the Work row) and finds the Work dissolved.
func TestWorkRemovalsDeadlockWithoutTheWorkLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	st := store.New(pool)
	reader, work := twoMemberWork(t, st)

	// Without the lock: plain statements, as a writer that forgot it.
	t1, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer t1.Rollback(ctx) //nolint:errcheck
	t2, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer t2.Rollback(ctx) //nolint:errcheck
	_, err = t1.Exec(ctx, `UPDATE bookmarks SET work_id = NULL WHERE reader_id = $1 AND series_key = 'asura:a'`, reader)
	require.NoError(t, err)
	_, err = t2.Exec(ctx, `UPDATE bookmarks SET work_id = NULL WHERE reader_id = $1 AND series_key = 'demonic:b'`, reader)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- t1.Commit(ctx) }() // its dissolve waits for demonic:b, which t2 holds
	waitForLockWait(t, pool)
	err2 := t2.Commit(ctx) // its dissolve waits for asura:a, which t1 holds
	err1 := <-done
	require.True(t, isDeadlock(err1) || isDeadlock(err2), "without the Work lock: %v / %v", err1, err2)
	require.False(t, isDeadlock(err1) && isDeadlock(err2))

	// Through the store: the Reader's membership lock and the Work row
	// first.
	_, err = pool.Exec(ctx, `DELETE FROM works`)
	require.NoError(t, err)
	w, err := st.CreateWork(ctx, reader, []string{"asura:a", "demonic:b"})
	require.NoError(t, err)
	work = w.ID
	hold, locked := make(chan struct{}), make(chan bool, 1)
	first := make(chan error, 1)
	go func() {
		first <- st.InTx(ctx, func(tx *store.Store) error {
			dissolved, err := tx.RemoveFromWork(ctx, reader, work, "asura:a")
			locked <- dissolved
			if err != nil {
				return err
			}
			<-hold // commit only once the other removal waits
			return nil
		})
	}()
	require.True(t, <-locked, "the first removal leaves one member: it dissolves at commit")
	second := make(chan error, 1)
	go func() {
		_, err := st.RemoveFromWork(ctx, reader, work, "demonic:b")
		second <- err
	}()
	waitForLockWait(t, pool)
	close(hold)
	require.NoError(t, <-first)
	err = <-second
	require.ErrorIs(t, err, store.ErrNoWork, "the first removal dissolved the Work; the second finds none, and no deadlock")
	require.False(t, isDeadlock(err))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM bookmarks WHERE work_id IS NOT NULL`).Scan(&n))
	require.Zero(t, n)
}

func isDeadlock(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40P01"
}

// waitForLockWait returns once some session of the test database waits on
// a lock.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	waitFor(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`, 1)
}

func waitFor(t *testing.T, pool *pgxpool.Pool, query string, want int) {
	t.Helper()
	for {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), query).Scan(&n))
		if n >= want {
			return
		}
		if t.Context().Err() != nil {
			t.Fatal("gave up waiting for: " + query)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Links, unlinks, member deletions, PUTs, imports' links and polls of one
// Reader's Bookmarks, all at once: no transaction is aborted as a deadlock,
// and every Work left standing has two or more members. (The interleavings
// that deadlock without the Work lock are rare here; the test above forces
// one. This one checks the whole set of writers together.)
func TestWorkChangesAtOnceNeverDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	st := store.New(pool)
	hash, err := credential.HashPassword("long enough password")
	require.NoError(t, err)
	ann, err := st.CreateReader(ctx, "ann", hash, false)
	require.NoError(t, err)
	const n = 6
	keys := make([]string, n)
	series := make([]store.NewSeries, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("asura:s%d", i)
		series[i] = store.NewSeries{Key: keys[i], Site: "asura", Kind: "manga", SeriesURL: "https://asurascans.com/comics/s" + fmt.Sprint(i)}
		_, err := st.PutBookmark(ctx, ann.ID, series[i], "", store.Progress{Chapter: "Chapter 1"})
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				a, b := keys[(g+i)%n], keys[(g+2*i+1)%n]
				var err error
				switch (g + i) % 6 {
				case 0:
					_, err = st.CreateWork(ctx, ann.ID, []string{a, b})
				case 1:
					var ws []store.WorkRow
					if ws, err = st.ListWorks(ctx, ann.ID); err == nil && len(ws) > 0 {
						_, err = st.RemoveFromWork(ctx, ann.ID, ws[0].ID, ws[0].Keys[0])
					}
				case 2:
					if err = st.DeleteBookmark(ctx, ann.ID, a); err == nil {
						_, err = st.PutBookmark(ctx, ann.ID, series[(g+i)%n], "", store.Progress{Chapter: "Chapter 2"})
					}
				case 3:
					num := float64(i)
					_, err = st.PutBookmark(ctx, ann.ID, series[(g+2*i+1)%n], "", store.Progress{Chapter: "Chapter", ChapterNumber: &num})
				case 4:
					err = st.InTx(ctx, func(tx *store.Store) error {
						if err := tx.LockReaderWorks(ctx, ann.ID); err != nil {
							return err
						}
						_, err := tx.ImportWorks(ctx, ann.ID, [][]string{{a, b}})
						return err
					})
				case 5:
					num := float64(100 + i)
					_, err = st.RecordPoll(ctx, a, store.PollResult{Status: store.PollOK, Success: true, Latest: &store.LatestChapter{Label: "Chapter", Number: &num}})
				}
				var refusal *store.WorkRefusal
				if err != nil && !errors.As(err, &refusal) && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrNoWork) {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.False(t, isDeadlock(err), "deadlock: %v", err)
		require.NoError(t, err)
	}
	var small int
	require.NoError(t, pool.QueryRow(ctx, `
		SELECT count(*) FROM works w WHERE (SELECT count(*) FROM bookmarks b WHERE b.work_id = w.id) < 2`).Scan(&small))
	require.Zero(t, small, "no Work of fewer than two members is left")
}

// A Reader's deletion takes their Works with their Bookmarks.
func TestDeletingAReaderTakesTheirWorks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	st := store.New(pool)
	reader, _ := twoMemberWork(t, st)
	require.NoError(t, st.DeleteReader(ctx, reader))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM works) + (SELECT count(*) FROM bookmarks)`).Scan(&n))
	require.Zero(t, n)
}

// A Work's chapter is one message even when the Site that had it first
// commits its poll after another Site's was queued: the late one is not
// queued, and the queued one is not dropped for it.
func TestAWorksChapterIsQueuedOnceWhicheverCommitsFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	st := store.New(pool)
	reader, _ := twoMemberWork(t, st)
	target, err := st.CreateTarget(ctx, reader, store.NewTarget{Kind: "json", URL: "jsons://hooks.example/ann"})
	require.NoError(t, err)
	// Both made before the chapters were seen.
	_, err = pool.Exec(ctx, `UPDATE notify_targets SET created_at = now() - interval '1 hour'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE bookmarks SET created_at = now() - interval '1 hour'`)
	require.NoError(t, err)
	history := func(key string, ago string) {
		t.Helper()
		_, err := pool.Exec(ctx, `
			INSERT INTO latest_chapter_history (series_key, label, number, url, prev_poll_at, first_seen_at)
			VALUES ($1, 'Chapter 121', 121, '', now() - interval '1 day', now() - $2::interval)`, key, ago)
		require.NoError(t, err)
	}
	history("asura:a", "1 minute")
	queued, _, err := st.QueueDeliveries(ctx, time.Hour)
	require.NoError(t, err)
	require.Equal(t, 1, queued)
	history("demonic:b", "2 minutes") // seen earlier, committed later
	queued, _, err = st.QueueDeliveries(ctx, time.Hour)
	require.NoError(t, err)
	require.Zero(t, queued)
	pending, _, err := st.PendingDeliveries(ctx, target.ID)
	require.NoError(t, err)
	require.Equal(t, 1, pending, "the queued message stays")
}

package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func listVersion(t *testing.T, st *store.Store, readerID int64) int64 {
	t.Helper()
	v, err := st.ListVersion(context.Background(), readerID)
	require.NoError(t, err)
	return v
}

func TestListVersionMovesWithWhatTheListShows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	hash, err := credential.HashPassword("long enough password")
	require.NoError(t, err)
	ann, err := st.CreateReader(ctx, "ann", hash, false)
	require.NoError(t, err)
	bob, err := st.CreateReader(ctx, "bob", hash, false)
	require.NoError(t, err)
	ns := store.NewSeries{Key: "asura:x", Site: "asura", Kind: "manga", SeriesURL: "https://asurascans.com/comics/x"}
	_, err = st.PutBookmark(ctx, ann.ID, ns, "", store.Progress{Chapter: "Chapter 1"})
	require.NoError(t, err)
	_, err = st.PutBookmark(ctx, bob.ID, ns, "", store.Progress{Chapter: "Chapter 1"})
	require.NoError(t, err)

	a, b := listVersion(t, st, ann.ID), listVersion(t, st, bob.ID)
	_, err = st.RecordPoll(ctx, ns.Key, store.PollResult{Status: store.PollOK, Success: true,
		Latest: &store.LatestChapter{Label: "Chapter 2"}, Title: "X"})
	require.NoError(t, err)
	require.Equal(t, a+1, listVersion(t, st, ann.ID), "one poll, one step, though it changed two facts")
	require.Equal(t, b+1, listVersion(t, st, bob.ID), "every Reader of the Series")

	_, err = st.RecordPoll(ctx, ns.Key, store.PollResult{Status: store.PollNotModified, Success: true})
	require.NoError(t, err)
	require.NoError(t, st.RecordCoverProblem(ctx, ns.Key, "http: 404"))
	_, err = st.RecordHint(ctx, ns.Key)
	require.NoError(t, err)
	require.Equal(t, a+1, listVersion(t, st, ann.ID), "bookkeeping no list shows")

	_, err = st.PutBookmark(ctx, bob.ID, ns, "", store.Progress{Chapter: "Chapter 2"})
	require.NoError(t, err)
	require.Equal(t, a+1, listVersion(t, st, ann.ID), "bob's Progress is bob's list")
	require.Equal(t, b+2, listVersion(t, st, bob.ID))

	version, list, err := st.ListBookmarksAt(ctx, ann.ID, "")
	require.NoError(t, err)
	require.Equal(t, a+1, version)
	require.Len(t, list, 1)
	require.Equal(t, "Chapter 2", list[0].LatestLabel)

	r, err := st.ReaderByToken(ctx, tokenFor(t, st, ann.ID))
	require.NoError(t, err)
	require.Equal(t, a+1, r.ListVersion, "the token's read carries the version")
}

func tokenFor(t *testing.T, st *store.Store, readerID int64) []byte {
	t.Helper()
	_, hash, err := credential.NewToken()
	require.NoError(t, err)
	_, err = st.CreateToken(context.Background(), readerID, "test", hash)
	require.NoError(t, err)
	return hash
}

// Polls changing the facts of Series while their Readers import, PUT and
// delete Bookmarks on the same Series, all at once: the lock order of
// docs/adr/0017 means none of them waits in a cycle, so Postgres never
// aborts one as a deadlock (40P01), and no version step is lost.
func TestPollsAndReaderWritesNeverDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	hash, err := credential.HashPassword("long enough password")
	require.NoError(t, err)
	const readers, series, rounds = 4, 24, 8
	var ids []int64
	for i := range readers {
		r, err := st.CreateReader(ctx, fmt.Sprint("reader", i), hash, false)
		require.NoError(t, err)
		ids = append(ids, r.ID)
	}
	ns := func(i int) store.NewSeries {
		return store.NewSeries{Key: fmt.Sprintf("asura:s%d", i), Site: "asura", Kind: "manga",
			SeriesURL: fmt.Sprintf("https://asurascans.com/comics/s%d", i)}
	}
	// Each Reader imports every Series in one transaction, in its own order,
	// so the transactions lock the Series rows in different orders.
	importAll := func(reader, round int) error {
		rows := make([]store.ImportRow, series)
		for j := range series {
			i := (j*[]int{1, 5, 7, 11}[reader] + round) % series // a permutation: 1, 5, 7, 11 are prime to 24
			rows[j] = store.ImportRow{Series: ns(i), Progress: &store.Progress{Chapter: fmt.Sprint("Chapter ", round)}}
		}
		keys := make([]string, series)
		for j, r := range rows {
			keys[j] = r.Series.Key
		}
		// As portability's import runs: the Reader's lock, then the writes.
		return st.InTx(ctx, func(tx *store.Store) error {
			if _, err := tx.LockReaderBookmarks(ctx, ids[reader], keys); err != nil {
				return err
			}
			// Removed and written again, so that the transaction locks
			// every Series row (their Reader counts) one after another, in
			// key order as the import itself does.
			sorted := slices.Sorted(slices.Values(keys))
			for _, k := range sorted {
				if _, err := tx.Tx().Exec(ctx, `DELETE FROM bookmarks WHERE reader_id = $1 AND series_key = $2`, ids[reader], k); err != nil {
					return err
				}
			}
			_, err := tx.ImportBookmarks(ctx, ids[reader], rows)
			return err
		})
	}
	for r := range readers {
		require.NoError(t, importAll(r, 0))
	}
	before := map[int64]int64{}
	for _, id := range ids {
		before[id] = listVersion(t, st, id)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for r := range readers {
		wg.Go(func() {
			for round := 1; round <= rounds; round++ {
				if err := importAll(r, round); err != nil {
					errs <- fmt.Errorf("import: %w", err)
				}
				s := ns((r + round) % series)
				if _, err := st.PutBookmark(ctx, ids[r], s, "", store.Progress{Chapter: "Chapter 99"}); err != nil {
					errs <- fmt.Errorf("put: %w", err)
				}
			}
		})
	}
	for p := range 3 {
		wg.Go(func() {
			for round := 1; round <= rounds; round++ {
				for i := p; i < series; i += 3 {
					_, err := st.RecordPoll(ctx, ns(i).Key, store.PollResult{Status: store.PollOK, Success: true,
						Latest: &store.LatestChapter{Label: fmt.Sprintf("Chapter %d-%d", round, i)}})
					if err != nil {
						errs <- fmt.Errorf("poll: %w", err)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, id := range ids {
		// Every import and PUT writes at least one of the Reader's Bookmarks
		// and every poll changes every Series the Reader holds.
		require.GreaterOrEqual(t, listVersion(t, st, id)-before[id], int64(rounds*2+rounds*series))
	}
}

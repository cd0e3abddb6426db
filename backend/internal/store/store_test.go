package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestMigrationsUpDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewEmptyURL(t)
	head, err := store.LatestMigration()
	require.NoError(t, err)

	require.NoError(t, store.MigrateUp(ctx, url))
	v, dirty, err := store.MigrationVersion(ctx, url)
	require.NoError(t, err)
	require.Equal(t, head, v)
	require.False(t, dirty)
	require.ElementsMatch(t, []string{"readers", "series", "bookmarks", "river_job"}, tables(t, url, "readers", "series", "bookmarks", "river_job"))

	require.NoError(t, store.MigrateDown(ctx, url, 0))
	v, _, err = store.MigrationVersion(ctx, url)
	require.NoError(t, err)
	require.Zero(t, v)
	require.Empty(t, tables(t, url, "readers", "series", "bookmarks", "river_job", "river_migration"),
		"every down removes what its up created")

	require.NoError(t, store.MigrateUp(ctx, url))
	v, _, err = store.MigrationVersion(ctx, url)
	require.NoError(t, err)
	require.Equal(t, head, v)

	// River's own bookkeeping agrees with the files that created its tables.
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	var riverVersions int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_migration WHERE line = 'main'`).Scan(&riverVersions))
	require.Equal(t, 8, riverVersions)
}

func tables(t *testing.T, url string, names ...string) []string {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	defer pool.Close()
	rows, err := pool.Query(context.Background(),
		`SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' AND table_name = ANY($1)`, names)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	return out
}

func TestLastOwnerIsKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	hash, err := credential.HashPassword("long enough password")
	require.NoError(t, err)
	owner, err := st.CreateReader(ctx, "olive", hash, true)
	require.NoError(t, err)
	reader, err := st.CreateReader(ctx, "ray", hash, false)
	require.NoError(t, err)

	require.ErrorIs(t, st.SetOwner(ctx, owner.ID, false), store.ErrLastOwner)
	require.ErrorIs(t, st.DeleteReader(ctx, owner.ID), store.ErrLastOwner)
	require.NoError(t, st.SetOwner(ctx, reader.ID, true))
	require.NoError(t, st.SetOwner(ctx, owner.ID, false), "with a second Owner the first may step down")
	require.ErrorIs(t, st.DeleteReader(ctx, reader.ID), store.ErrLastOwner)

	_, err = st.CreateReader(ctx, "ray", hash, false)
	require.ErrorIs(t, err, store.ErrConflict)

	_, err = st.CreateFirstOwner(ctx, "mallory", hash)
	require.ErrorIs(t, err, store.ErrConflict, "first-run set-up only works on an empty deployment")
}

func TestTokensAreStoredHashed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	hash, err := credential.HashPassword("long enough password")
	require.NoError(t, err)
	r, err := st.CreateReader(ctx, "ann", hash, false)
	require.NoError(t, err)
	token, th, err := credential.NewToken()
	require.NoError(t, err)
	tok, err := st.CreateToken(ctx, r.ID, "laptop", th)
	require.NoError(t, err)

	got, err := st.ReaderByToken(ctx, credential.HashSecret(token))
	require.NoError(t, err)
	require.Equal(t, r.ID, got.ID)

	// Nothing in the table is the token itself.
	var n int
	require.NoError(t, st.Pool.QueryRow(ctx,
		`SELECT count(*) FROM api_tokens WHERE position($1::bytea in token_hash) > 0 OR name = $2`, []byte(token), token).Scan(&n))
	require.Zero(t, n)

	list, err := st.ListTokens(ctx, r.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.NotNil(t, list[0].LastUsedAt, "use is recorded")

	other, err := st.CreateReader(ctx, "bob", hash, false)
	require.NoError(t, err)
	require.ErrorIs(t, st.RevokeToken(ctx, other.ID, tok.ID), store.ErrNotFound, "a Reader cannot revoke another's token")
	require.NoError(t, st.RevokeToken(ctx, r.ID, tok.ID))
	_, err = st.ReaderByToken(ctx, credential.HashSecret(token))
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestReaderCountFollowsBookmarks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	hash, err := credential.HashPassword("long enough password")
	require.NoError(t, err)
	ns := store.NewSeries{Key: "asura:x", Site: "asura", Kind: "manga", SeriesURL: "https://asurascans.com/comics/x"}
	var ids []int64
	for _, name := range []string{"a", "b", "c"} {
		r, err := st.CreateReader(ctx, name, hash, false)
		require.NoError(t, err)
		ids = append(ids, r.ID)
		res, err := st.PutBookmark(ctx, r.ID, ns, "", store.Progress{Chapter: "Chapter 1"})
		require.NoError(t, err)
		require.Equal(t, name == "a", res.SeriesCreated)
		require.True(t, res.Created)
	}
	readers := func() int {
		var n int
		require.NoError(t, st.Pool.QueryRow(ctx, `SELECT readers FROM series WHERE key = 'asura:x'`).Scan(&n))
		return n
	}
	require.Equal(t, 3, readers())
	_, err = st.PutBookmark(ctx, ids[0], ns, "", store.Progress{Chapter: "Chapter 2"})
	require.NoError(t, err)
	require.Equal(t, 3, readers(), "an update is not a new Reader")
	require.NoError(t, st.DeleteBookmark(ctx, ids[1], "asura:x"))
	require.Equal(t, 2, readers())
	require.NoError(t, st.DeleteReader(ctx, ids[2]))
	require.Equal(t, 1, readers(), "deleting a Reader releases their Series")
}

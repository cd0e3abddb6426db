package backup_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/backup"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/s3test"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const key = "asura:solo-leveling"

// seeded is what a drill checks after the restore.
type seeded struct {
	token     string
	cover     []byte
	coverAddr string
	pages     [][]byte
}

// seed makes a deployment worth restoring: a Reader with a token and a
// Bookmark, its Series' Cover, and an archived chapter of three pages.
func seed(t *testing.T, a *apptest.App, stores *blob.Stores) seeded {
	t.Helper()
	ctx := context.Background()
	s := seeded{token: a.Token("ann", false)}
	res := a.Do(http.MethodPut, "/api/bookmarks/"+key, s.token,
		`{"site":"asura","series_url":"https://asurascans.com/comics/solo-leveling-1a2b3c4d","chapter":"Chapter 3"}`)
	require.Equal(t, http.StatusCreated, res.Code, string(res.Body))

	s.cover = imagetest.RealPNG(t, 7)
	var err error
	s.coverAddr, err = stores.Covers.Put(ctx, s.cover, imagetype.TypePNG)
	require.NoError(t, err)
	_, err = a.Store.Pool.Exec(ctx, `UPDATE series SET cover_address = $1, cover_type = $2 WHERE key = $3`, s.coverAddr, imagetype.TypePNG, key)
	require.NoError(t, err)

	n := 1.0
	ch, _, err := a.Store.EnsureArchiveChapter(ctx, key, store.ArchiveChapterInput{
		URL: "https://asurascans.com/comics/solo-leveling-1a2b3c4d/chapter/1", Label: "Chapter 1", Number: &n, Position: 1,
	}, nil, store.ArchiveQueued, "", "")
	require.NoError(t, err)
	var pages []store.ArchivePage
	for i := range 3 {
		b := imagetest.JPEG(t, 5000+i)
		addr, err := stores.Pages.Put(ctx, b, imagetype.TypeJPEG)
		require.NoError(t, err)
		s.pages = append(s.pages, b)
		pages = append(pages, store.ArchivePage{Index: i, Address: addr, ContentType: imagetype.TypeJPEG, Size: len(b), Width: 10, Height: 10,
			SourceURL: "https://img.example/" + addr})
	}
	require.NoError(t, a.Store.PublishArchiveChapter(ctx, ch.ID, pages, nil))
	return s
}

// served checks that the restored deployment serves everything again: the
// token, the Bookmark with its Cover URL, the Cover's bytes, and the
// archived chapter's pages (through the CBZ export, which reads each page
// from the store).
func served(t *testing.T, a *apptest.App, s seeded) {
	t.Helper()
	res := a.Do(http.MethodGet, "/api/bookmarks/"+key, s.token, nil)
	require.Equal(t, http.StatusOK, res.Code, "the old token works: %s", res.Body)
	var b struct {
		Key, Chapter, Cover string
	}
	res.JSON(t, &b)
	require.Equal(t, key, b.Key)
	require.Equal(t, "Chapter 3", b.Chapter)
	// Lists name a Cover by a short reference (docs/adr/0032).
	require.Contains(t, b.Cover, "/covers/"+s.coverAddr[:cover.ShortLen]+".")
	u, err := url.Parse(b.Cover)
	require.NoError(t, err)
	res = a.Do(http.MethodGet, u.Path, "", nil)
	require.Equal(t, http.StatusOK, res.Code)
	require.True(t, bytes.Equal(s.cover, res.Body), "the Cover's bytes")

	res = a.Do(http.MethodGet, "/api/series/"+key+"/archive.cbz", s.token, nil)
	require.Equal(t, http.StatusOK, res.Code, string(res.Body))
	zr, err := zip.NewReader(bytes.NewReader(res.Body), int64(len(res.Body)))
	require.NoError(t, err)
	var got [][]byte
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".jpg") {
			continue
		}
		rc, err := f.Open()
		require.NoError(t, err)
		p, err := io.ReadAll(rc)
		require.NoError(t, err)
		got = append(got, p)
	}
	require.Equal(t, s.pages, got, "every archived page, in order")

}

func drill(t *testing.T, before, after func(*config.Config)) {
	ctx := context.Background()
	a := apptest.New(t, apptest.Options{Config: before})
	stores, err := blob.Open(a.Config.Blobs())
	require.NoError(t, err)
	s := seed(t, a, stores)
	served(t, a, s)

	dir := filepath.Join(t.TempDir(), "backup")
	pool, err := pgxpool.New(ctx, a.DatabaseURL)
	require.NoError(t, err)
	defer pool.Close()
	rep, err := backup.Create(ctx, pool, stores, dir)
	require.NoError(t, err)
	require.Zero(t, rep.Missing)
	require.FileExists(t, filepath.Join(dir, backup.ManifestName))

	// Destroy: the database is gone, and so is the volume (a new DATA_DIR).
	empty := pgtest.NewEmptyURL(t)
	cfg := config.Config{DataDir: t.TempDir()}
	if after != nil {
		after(&cfg)
	}
	cfg.Fill()
	restored, err := blob.Open(cfg.Blobs())
	require.NoError(t, err)
	rep, err = backup.Restore(ctx, empty, restored, dir)
	require.NoError(t, err)
	require.Zero(t, rep.Missing)

	_, err = backup.Restore(ctx, empty, restored, dir)
	require.ErrorIs(t, err, backup.ErrNotEmpty, "never into a database holding anything")

	b := apptest.New(t, apptest.Options{DatabaseURL: empty, Config: func(c *config.Config) {
		c.DataDir = cfg.DataDir
		c.BlobURL, c.S3Endpoint, c.S3Region, c.S3AccessKeyID, c.S3SecretAccessKey = cfg.BlobURL, cfg.S3Endpoint, cfg.S3Region, cfg.S3AccessKeyID, cfg.S3SecretAccessKey
	}})
	served(t, b, s)
}

func TestRestoreDrillOnAVolume(t *testing.T) {
	t.Parallel()
	drill(t, nil, nil)
}

func TestRestoreDrillOnABucket(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "lectern")
	onBucket := func(c *config.Config) {
		c.BlobURL, c.S3Endpoint, c.S3Region = "s3://lectern/prod", srv.Endpoint, s3test.Region
		c.S3AccessKeyID, c.S3SecretAccessKey = s3test.AccessKey, s3test.SecretKey
	}
	drill(t, onBucket, onBucket)
}

// A volume's backup restores onto a bucket: the way from one machine's disk
// to object storage through a restore.
func TestRestoreDrillFromAVolumeOntoABucket(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "lectern")
	drill(t, nil, func(c *config.Config) {
		c.BlobURL, c.S3Endpoint, c.S3Region = "s3://lectern/moved", srv.Endpoint, s3test.Region
		c.S3AccessKeyID, c.S3SecretAccessKey = s3test.AccessKey, s3test.SecretKey
	})
}

func TestCreateRefusesAFullDirectoryAndRestoreAHalfBackup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x"), nil, 0o644))
	stores, err := blob.Open(blob.Settings{CoverDir: t.TempDir(), ArchiveDir: t.TempDir()})
	require.NoError(t, err)
	_, err = backup.Create(ctx, pool, stores, dir)
	require.ErrorContains(t, err, "not empty")
	_, err = backup.Restore(ctx, pgtest.NewEmptyURL(t), stores, dir)
	require.ErrorContains(t, err, "not a whole backup")
}

// The backup reads its tables from the catalog: a table no release of the
// backup code names (another branch's) is in the manifest with its rows,
// generated columns left to Postgres; the manifest names every table of the
// schema. Restoring it where no migration makes it is refused by name.
func TestBackupTakesEveryTableOfTheCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	_, err := pool.Exec(ctx, `CREATE TABLE works_from_another_branch (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		title text, twice bigint GENERATED ALWAYS AS (id * 2) STORED)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO works_from_another_branch (title) VALUES ('tab'||chr(9)||'and
newline\'), (NULL)`)
	require.NoError(t, err)
	stores, err := blob.Open(blob.Settings{CoverDir: t.TempDir(), ArchiveDir: t.TempDir()})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "b")
	rep, err := backup.Create(ctx, pool, stores, dir)
	require.NoError(t, err)

	var all []string
	rows, err := pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations' ORDER BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		all = append(all, n)
	}
	require.NoError(t, rows.Err())
	var names []string
	for _, tb := range rep.Manifest.Tables {
		names = append(names, tb.Name)
		if tb.Name == "works_from_another_branch" {
			require.Equal(t, []string{"id", "title"}, tb.Columns)
			require.EqualValues(t, 2, tb.Rows)
		}
	}
	require.Equal(t, all, names)
	require.Greater(t, len(names), 30)

	_, err = backup.Restore(ctx, pgtest.NewEmptyURL(t), stores, dir)
	require.ErrorContains(t, err, "works_from_another_branch")
}

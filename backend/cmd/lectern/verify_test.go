package main

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
)

// pngOf returns a real, distinct PNG for each n.
func pngOf(t *testing.T, n int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: uint8(n), G: uint8(n >> 8), B: 7, A: 255})
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

type verifyFixture struct {
	t                    *testing.T
	db                   *pgx.Conn
	env                  map[string]string
	covers, pages        *blob.FS
	coverA, coverB, page string
}

// newVerifyFixture is a deployment with two Covers and one archived page,
// each stored and named by its row.
func newVerifyFixture(t *testing.T, env map[string]string) *verifyFixture {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewURL(t)
	env["DATABASE_URL"] = url
	db, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close(context.Background()) })
	f := &verifyFixture{t: t, db: db, env: env}
	coverDir, archiveDir := env["COVER_DIR"], env["ARCHIVE_DIR"]
	if coverDir == "" {
		coverDir = filepath.Join(env["DATA_DIR"], "covers")
	}
	if archiveDir == "" {
		archiveDir = filepath.Join(env["DATA_DIR"], "archive")
	}
	f.covers, f.pages = &blob.FS{Dir: coverDir}, &blob.FS{Dir: filepath.Join(archiveDir, "pages")}
	// As serve does at start: the store makes only its own shard directories.
	require.NoError(t, os.MkdirAll(f.pages.Dir, 0o755))
	f.coverA = f.put(f.covers, 1)
	f.coverB = f.put(f.covers, 2)
	f.page = f.put(f.pages, 3)
	f.exec(`INSERT INTO series (key, site, kind, series_url, cover_address, cover_type) VALUES
		('asura:a', 'asura', 'manga', 'https://asuracomic.net/series/a', $1, 'image/png'),
		('asura:b', 'asura', 'manga', 'https://asuracomic.net/series/b', $2, 'image/png'),
		('asura:c', 'asura', 'manga', 'https://asuracomic.net/series/c', '', '')`, f.coverA, f.coverB)
	f.exec(`INSERT INTO archive_chapters (id, series_key, url, label, position) OVERRIDING SYSTEM VALUE
		VALUES (1, 'asura:a', 'https://asuracomic.net/series/a/chapter/1', 'Chapter 1', 0)`)
	f.exec(`INSERT INTO archive_pages (chapter_id, idx, address, content_type, size, crc32, width, height, source_url)
		VALUES (1, 0, $1, 'image/png', 70, 0, 2, 2, 'https://cdn.example.org/1.png')`, f.page)
	return f
}

func (f *verifyFixture) put(s *blob.FS, n int) string {
	f.t.Helper()
	a, err := s.Put(context.Background(), pngOf(f.t, n), imagetype.TypePNG)
	require.NoError(f.t, err)
	return a
}

func (f *verifyFixture) exec(sql string, args ...any) {
	f.t.Helper()
	_, err := f.db.Exec(context.Background(), sql, args...)
	require.NoError(f.t, err, sql)
}

func (f *verifyFixture) path(s *blob.FS, a string) string {
	return filepath.Join(s.Dir, a[:2], a[2:4], a)
}

func (f *verifyFixture) verify(args ...string) (int, string) {
	f.t.Helper()
	code, out, errOut := runCmd(f.t, f.env, "", append([]string{"verify"}, args...)...)
	require.Empty(f.t, errOut)
	return code, out
}

func TestVerifyFindsMissingOrphanedAndStrayFiles(t *testing.T) {
	t.Parallel()
	f := newVerifyFixture(t, map[string]string{"DATA_DIR": t.TempDir()})

	code, out := f.verify()
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Covers in "+f.covers.Dir+": 2 named, 2 present")
	require.Contains(t, out, "archived pages in "+f.pages.Dir+": 1 named, 1 present")
	require.Contains(t, out, "every named file is present and every file is named")

	// A file no row names (a replaced Cover) and a leftover temporary file
	// are reported, with their own exit status.
	orphan := f.put(f.covers, 4)
	stray := filepath.Join(f.covers.Dir, "ab", ".put-123456")
	require.NoError(t, os.MkdirAll(filepath.Dir(stray), 0o755))
	require.NoError(t, os.WriteFile(stray, []byte("half"), 0o644))
	code, out = f.verify()
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "orphan "+f.path(f.covers, orphan)+": no row names it")
	require.Contains(t, out, "stray "+stray)
	require.Contains(t, out, "1 orphans, 1 strays")

	// A named file that is gone is a loss.
	require.NoError(t, os.Remove(f.path(f.covers, f.coverB)))
	require.NoError(t, os.Remove(f.path(f.pages, f.page)))
	code, out = f.verify()
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "missing Cover "+f.coverB+": named by the database, no file at "+f.path(f.covers, f.coverB))
	require.Contains(t, out, "missing archived page "+f.page)
	require.Contains(t, out, "Covers in "+f.covers.Dir+": 2 named, 1 present")
	require.Contains(t, out, "2 missing, 1 orphans, 1 strays")
}

func TestVerifyHashFindsCorruptFiles(t *testing.T) {
	t.Parallel()
	f := newVerifyFixture(t, map[string]string{"DATA_DIR": t.TempDir()})
	p := f.path(f.pages, f.page)
	require.NoError(t, os.WriteFile(p, pngOf(t, 99), 0o644))

	code, out := f.verify()
	require.Equal(t, 0, code, "without --hash only presence is checked: %s", out)
	code, out = f.verify("--hash")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "corrupt archived page "+f.page+": "+p+" does not hash to its name")
	require.NotContains(t, out, "corrupt Cover")
}

// Covers and archived pages may share one directory: a file is an orphan only
// when no kind stored there names it.
func TestVerifySharedDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := newVerifyFixture(t, map[string]string{"COVER_DIR": dir, "ARCHIVE_DIR": dir})
	code, out := f.verify()
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "orphan")
	require.NotContains(t, out, "stray", "the pages below the Covers' directory are not taken for strays")
	// A page file no row names is still found, in its own directory.
	orphan := f.put(f.pages, 5)
	code, out = f.verify()
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "orphan "+f.path(f.pages, orphan))
	require.Contains(t, out, "1 orphans")
}

// A database without a kind's tables (older than the feature) skips that
// kind instead of failing.
func TestVerifySkipsKindsWithoutTables(t *testing.T) {
	t.Parallel()
	f := newVerifyFixture(t, map[string]string{"DATA_DIR": t.TempDir()})
	f.exec(`DROP TABLE archive_staging`)
	code, out := f.verify()
	// The archived page's file is now named by nothing that is checked, but
	// it lives in a directory no checked kind owns: not reported at all.
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "archived pages: not checked, this database has no table for them")
	require.Contains(t, out, "Covers in "+f.covers.Dir+": 2 named, 2 present")
}

func TestVerifyNeedsItsConfiguration(t *testing.T) {
	t.Parallel()
	code, _, errOut := runCmd(t, map[string]string{"DATA_DIR": t.TempDir()}, "", "verify")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "DATABASE_URL is required")
	code, _, errOut = runCmd(t, map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/x"}, "", "verify")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "DATA_DIR (or both COVER_DIR and ARCHIVE_DIR) is required")
	code, _, _ = runCmd(t, nil, "", "verify", "extra")
	require.Equal(t, 2, code)
	_, _, errOut = runCmd(t, nil, "", "verify", "-h")
	require.True(t, strings.Contains(errOut, "orphan"), errOut)
}

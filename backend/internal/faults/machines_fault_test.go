package faults

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/credential"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/s3test"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// Two machines: two Lectern processes with their own DATA_DIRs, one
// Postgres and one S3 server. A Cover acquired by A is served by B; A is
// killed (SIGKILL) in the middle of archiving a chapter and B, given
// workers, finishes it: the CBZ from B holds every page. Neither DATA_DIR
// holds a Cover or a page.
func TestTwoMachinesShareABucket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sites := startSites(t)
	s3 := s3test.Start(t)
	s3.Bucket(t, "shared")
	dbURL := pgtest.NewURL(t)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)
	token := newArchiveReader(t, st)

	const seriesURL = "https://webtoons.com/en/fantasy/the-salt-cartographer/list?title_no=7710"
	const imageHost = "webtoon-phinf.pstatic.net"
	ref, err := latest.Default().Resolve(seriesURL)
	require.NoError(t, err)

	bucket := s3.Env("shared", "lectern")
	dirA, dirB := t.TempDir(), t.TempDir()
	a := startReplica(t, replicaOptions{dbURL: dbURL, dataDir: dirA, sites: sites, rescue: 5 * time.Second, env: bucket})
	b := startReplica(t, replicaOptions{dbURL: dbURL, dataDir: dirB, sites: sites, rescue: 5 * time.Second,
		env: append(append([]string{}, bucket...), "WORKERS=0")})

	// A acquires the Series and its Cover (B runs no jobs).
	require.Equal(t, 201, put(t, a.base, token, ref.Key, seriesURL, "Ep. 5 - Brine"))
	var address string
	require.Eventually(t, func() bool {
		return pool.QueryRow(ctx, `SELECT cover_address FROM series WHERE key = $1`, ref.Key).Scan(&address) == nil && address != ""
	}, time.Minute, 50*time.Millisecond, "A never stored the Cover; its log:\n%s", a.log)
	fromA, fromB := get(t, a.base+"/covers/"+address), get(t, b.base+"/covers/"+address)
	require.NotEmpty(t, fromB)
	require.Equal(t, fromA, fromB, "B serves the Cover A acquired, from the bucket")

	// A starts the chapter; the image host holds every request open, so A
	// is mid-chapter when it dies.
	sites.SetMode(imageHost, fixturesites.Hang)
	req, err := http.NewRequest(http.MethodPost, a.base+"/api/series/"+url.PathEscape(ref.Key)+"/archive", strings.NewReader(`{"scope":"latest"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(body))
	require.Eventually(t, func() bool {
		return count(t, pool, `SELECT count(*) FROM river_job WHERE kind = 'archive_chapter' AND state = 'running'`) == 1 &&
			imageHits(sites, imageHost) > 0
	}, time.Minute, 20*time.Millisecond, "A never reached the chapter's images; its log:\n%s", a.log)
	a.kill(t)
	sites.SetMode(imageHost, fixturesites.Normal)

	// B, now with workers, rescues the stranded job and finishes it.
	b.stop(t)
	b = startReplica(t, replicaOptions{dbURL: dbURL, dataDir: dirB, sites: sites, rescue: 5 * time.Second, env: bucket})
	require.Eventually(t, func() bool {
		return count(t, pool, `SELECT count(*) FROM archive_chapters WHERE url = $1 AND state = 'archived' AND page_count = 3`, fixturesites.WebtoonsChapter) == 1
	}, 2*time.Minute, 100*time.Millisecond, "B never finished the chapter; its log:\n%s", b.log)

	cbzReq, err := http.NewRequest(http.MethodGet, b.base+"/api/series/"+url.PathEscape(ref.Key)+"/archive.cbz", nil)
	require.NoError(t, err)
	cbzReq.Header.Set("Authorization", "Bearer "+token)
	resp, err = http.DefaultClient.Do(cbzReq)
	require.NoError(t, err)
	cbz, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(cbz))
	zr, err := zip.NewReader(bytes.NewReader(cbz), int64(len(cbz)))
	require.NoError(t, err)
	images := 0
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".xml") {
			images++
		}
	}
	require.Equal(t, 3, images, "the CBZ holds every page: %v", zr.File)

	for _, dir := range []string{dirA, dirB} {
		for _, f := range testenv.FilesUnder(t, dir) {
			require.False(t, strings.HasPrefix(f, "covers/") || strings.HasPrefix(f, "archive/pages/"), "%s holds %s", dir, f)
		}
	}
	var objects int
	for _, f := range s3.Files(t) {
		if strings.HasPrefix(f, "shared/lectern/") {
			objects++
		}
	}
	require.GreaterOrEqual(t, objects, 4, "the Cover and three pages are in the bucket: %v", s3.Files(t))
}

func newArchiveReader(t *testing.T, st *store.Store) string {
	t.Helper()
	ctx := context.Background()
	hash, err := credential.HashPassword("correct horse battery")
	require.NoError(t, err)
	r, err := st.CreateReader(ctx, "ann", hash, false)
	require.NoError(t, err)
	require.NoError(t, st.SetArchiveReader(ctx, r.ID, true, nil))
	tok, th, err := credential.NewToken()
	require.NoError(t, err)
	_, err = st.CreateToken(ctx, r.ID, "machines", th)
	require.NoError(t, err)
	return tok
}

func imageHits(sites *fixturesites.Server, host string) int {
	n := 0
	for _, r := range sites.Requests() {
		if r.Host == host {
			n++
		}
	}
	return n
}

func get(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, fmt.Sprintf("GET %s: %s", u, b))
	return b
}

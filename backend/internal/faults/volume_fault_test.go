package faults

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// noisyPNG is a real PNG that does not compress: w×h random pixels.
func noisyPNG(t *testing.T, w, h int, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.RGBA{R: uint8(rng.Uint32()), G: uint8(rng.Uint32()), B: uint8(rng.Uint32()), A: 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func addressOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// The data volume fills up while an Owner's Cover refetch writes new bytes.
// The refetch fails with the reason recorded on the Series ("cover volume
// is full") and logged; nothing partial is left on the volume; the old
// Cover is still the Series' Cover, still on the wire and still served
// whole; the Latest Chapter is untouched. Once space is freed, the next
// refetch stores the new Cover.
//
// The volume is a real 1 MiB tmpfs, which needs root (CI and the
// development machines run as root); the same failure injected through the
// Cover store's write seam is TestDiskFullLeavesNoPartialFile in
// backend/internal/cover.
func TestFullVolumeDuringCoverWriteKeepsTheOldCover(t *testing.T) {
	t.Parallel()
	coverDir := t.TempDir()
	if err := syscall.Mount("tmpfs", coverDir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m"); err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("running as root but cannot mount a tmpfs: %v", err)
		}
		t.Skipf("mounting a tmpfs needs root (%v); TestDiskFullLeavesNoPartialFile covers the store alone", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(coverDir, syscall.MNT_DETACH) })

	// The Cover image's path on the fixture CDN answers bytes the test
	// chooses: the old Cover first, then a new one.
	probe, err := fixturesites.Start(fixturesites.Options{})
	require.NoError(t, err)
	coverURL := probe.CoverOf(fixturesites.AsuraSeries)
	require.NoError(t, probe.Close())
	require.NotEmpty(t, coverURL)
	cu, err := url.Parse(coverURL)
	require.NoError(t, err)
	oldCover, newCover := noisyPNG(t, 40, 40, 1), noisyPNG(t, 120, 120, 2)
	var serveNew atomic.Bool
	sites, err := fixturesites.Start(fixturesites.Options{Extra: map[string]http.Handler{
		cu.Path: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b := oldCover
			if serveNew.Load() {
				b = newCover
			}
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(b)
		}),
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sites.Close() })

	l := startLectern(t, sites, func(c *config.Config) { c.CoverDir = coverDir })
	ann := newReader(t, l.st, "ann", false)
	owner := newReader(t, l.st, "olive", true)
	ref, err := latest.Default().Resolve(fixturesites.AsuraSeries)
	require.NoError(t, err)
	put(t, l.base, ann, ref.Key, fixturesites.AsuraSeries, "Chapter 1")
	require.Eventually(t, func() bool { return coverAddrOf(t, l.pool, ref.Key) == addressOf(oldCover) }, time.Minute, 50*time.Millisecond,
		"the old Cover was never stored; log:\n%s", l.log)
	before := l.bookmark(t, ann, ref.Key)
	// Lists name a Cover by its short reference (docs/adr/0032).
	require.True(t, strings.HasSuffix(before.Cover, "/covers/"+addressOf(oldCover)[:cover.ShortLen]+".png"), before.Cover)
	require.NotEmpty(t, before.LatestChapter)

	// Fill the volume to the last byte.
	filler, err := os.Create(filepath.Join(coverDir, "filler"))
	require.NoError(t, err)
	chunk := make([]byte, 64<<10)
	for {
		if _, err := filler.Write(chunk); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	require.NoError(t, filler.Close())

	// The Owner asks once the Acquisition's jobs are done: a refetch asked
	// while the Series' poll is still running is taken up by a later poll.
	require.Eventually(t, func() bool {
		return count(t, l.pool, `SELECT count(*) FROM river_job WHERE kind IN ('poll_series', 'fetch_cover') AND state <> 'completed'`) == 0
	}, time.Minute, 20*time.Millisecond)
	serveNew.Store(true)
	l.refetch(t, owner, ref.Key)
	require.Eventually(t, func() bool { return strings.Contains(l.coverProblem(t, ref.Key), "cover volume is full") },
		time.Minute, 50*time.Millisecond, "the full volume was not recorded; log:\n%s", l.log)
	require.Contains(t, l.log.String(), "cover volume is full", "the failure is logged")

	// The old Cover stands, whole; nothing partial is on the volume.
	require.Equal(t, addressOf(oldCover), coverAddrOf(t, l.pool, ref.Key))
	after := l.bookmark(t, ann, ref.Key)
	require.Equal(t, before.Cover, after.Cover)
	require.Equal(t, before.LatestChapter, after.LatestChapter)
	require.Equal(t, oldCover, l.get(t, after.Cover))
	require.ElementsMatch(t, []string{"filler", addressOf(oldCover)}, volumeFiles(t, coverDir), "a partial file was left behind")

	// Space comes back; the next refetch stores the new Cover.
	require.NoError(t, os.Remove(filepath.Join(coverDir, "filler")))
	require.Eventually(t, func() bool {
		return count(t, l.pool, `SELECT count(*) FROM river_job WHERE kind IN ('poll_series', 'fetch_cover') AND state <> 'completed'`) == 0
	}, time.Minute, 20*time.Millisecond)
	l.refetch(t, owner, ref.Key)
	require.Eventually(t, func() bool { return coverAddrOf(t, l.pool, ref.Key) == addressOf(newCover) }, time.Minute, 50*time.Millisecond,
		"the new Cover was not stored once space was back; log:\n%s", l.log)
	require.Equal(t, newCover, l.get(t, l.bookmark(t, ann, ref.Key).Cover))
	require.Empty(t, l.coverProblem(t, ref.Key))
}

type bookmarkJSON struct {
	Cover         string `json:"cover"`
	LatestChapter string `json:"latest_chapter"`
}

func (l *lectern) bookmark(t *testing.T, token, key string) bookmarkJSON {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, l.base+"/api/bookmarks/"+key, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var b bookmarkJSON
	require.NoError(t, decodeJSON(resp.Body, &b))
	return b
}

// get fetches a Cover by its wire URL (on PUBLIC_BASE_URL) from the replica.
func (l *lectern) get(t *testing.T, coverURL string) []byte {
	t.Helper()
	u, err := url.Parse(coverURL)
	require.NoError(t, err)
	resp, err := http.Get(l.base + u.Path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

func (l *lectern) refetch(t *testing.T, ownerToken, key string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, l.base+"/api/admin/series/"+key+"/cover/refetch", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+ownerToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
}

func (l *lectern) coverProblem(t *testing.T, key string) string {
	t.Helper()
	var p string
	require.NoError(t, l.pool.QueryRow(context.Background(), `SELECT cover_problem FROM series WHERE key = $1`, key).Scan(&p))
	return p
}

// volumeFiles lists the file names on the volume (no directories).
func volumeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, d.Name())
		}
		return nil
	}))
	return out
}

func decodeJSON(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

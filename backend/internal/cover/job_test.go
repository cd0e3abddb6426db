package cover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/fetch"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The fetch_cover job over a real Postgres and real files, with the two
// fetchers replaced by recorders: which one an address goes to is decided by
// its shape, and what the job records follows.

type recordedImages struct {
	mu    sync.Mutex
	urls  []string
	refs  []string
	image Image
	err   error
}

func (r *recordedImages) FetchImage(_ context.Context, rawURL, referer string) (Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.urls = append(r.urls, rawURL)
	r.refs = append(r.refs, referer)
	if r.err != nil {
		return Image{}, r.err
	}
	img := r.image
	img.URL = rawURL
	return img, nil
}

type recordedBrowser struct {
	enabled bool
	mu      sync.Mutex
	calls   []string
	hosts   [][]string
	max     int64
	data    []byte
	ctype   string
}

func (b *recordedBrowser) Enabled() bool { return b.enabled }

func (b *recordedBrowser) FetchImage(_ context.Context, pageURL, imageURL string, hosts []string, maxBytes int64) ([]byte, string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, pageURL+" "+imageURL)
	b.hosts = append(b.hosts, hosts)
	b.max = maxBytes
	return b.data, b.ctype, nil
}

type pacerFunc func(ctx context.Context, host string, every time.Duration) error

func (f pacerFunc) Wait(ctx context.Context, host string, every time.Duration) error {
	return f(ctx, host, every)
}

type jobEnv struct {
	st      *store.Store
	covers  *blob.FS
	images  *recordedImages
	browser *recordedBrowser
	paced   []string
	f       *Fetcher
}

func newJobEnv(t *testing.T) *jobEnv {
	t.Helper()
	e := &jobEnv{st: store.New(pgtest.New(t)), covers: &blob.FS{Dir: t.TempDir()},
		images: &recordedImages{image: Image{Bytes: imagetest.PNG(t, 4000), ContentType: imagetype.TypePNG}}, browser: &recordedBrowser{}}
	e.f = &Fetcher{Store: e.st, Covers: e.covers, Images: e.images, Browser: e.browser, MaxBytes: 1 << 20,
		Pacer: pacerFunc(func(_ context.Context, host string, every time.Duration) error {
			e.paced = append(e.paced, fmt.Sprintf("%s@%s", host, every))
			return nil
		}),
		Policy: &fetch.Policy{Registry: latest.Default(), Paces: fetch.Paces{}, States: e.st, Browser: e.browser},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return e
}

var readers int

func (e *jobEnv) series(t *testing.T, seriesURL string) store.Series {
	t.Helper()
	ref, err := latest.Default().Resolve(seriesURL)
	require.NoError(t, err)
	readers++
	r, err := e.st.CreateReader(context.Background(), fmt.Sprintf("r%d", readers), "x", false)
	require.NoError(t, err)
	_, err = e.st.PutBookmarkKeepProgress(context.Background(), r.ID, store.NewSeries{Key: ref.Key, Site: ref.Site, Kind: string(ref.Kind), SeriesURL: ref.SeriesURL}, "")
	require.NoError(t, err)
	s, err := e.st.SeriesByKey(context.Background(), ref.Key)
	require.NoError(t, err)
	return s
}

func (e *jobEnv) reload(t *testing.T, key string) store.Series {
	t.Helper()
	s, err := e.st.SeriesByKey(context.Background(), key)
	require.NoError(t, err)
	return s
}

const kaganeSeries = "https://kagane.to/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f3"

func TestCoversAreRoutedByTheAddressShape(t *testing.T) {
	e := newJobEnv(t)
	ctx := context.Background()

	// novelfull's pages need a browser, its images do not: plain, paced as
	// novelfull, with the series page as Referer.
	nf := e.series(t, "https://novelfull.com/the-legendary-mechanic.html")
	addr := "https://novelfull.com/uploads/thumbs/the-legendary-mechanic-c5f6d3e0b5.jpg"
	require.NoError(t, e.f.Fetch(ctx, FetchArgs{Key: nf.Key, Site: nf.Site, Address: addr, SeriesURL: nf.SeriesURL}))
	require.Equal(t, []string{addr}, e.images.urls)
	require.Equal(t, []string{nf.SeriesURL}, e.images.refs)
	require.Empty(t, e.browser.calls)
	require.Equal(t, []string{"novelfull.com@2s"}, e.paced)
	got := e.reload(t, nf.Key)
	require.Equal(t, imagetype.TypePNG, got.CoverType)
	require.Equal(t, addr, got.CoverSourceURL)
	require.Equal(t, 4000, *got.CoverSize)
	f, err := e.covers.Open(context.Background(), got.CoverAddress)
	require.NoError(t, err, "the bytes are on the volume at the recorded address")
	f.Close()

	// A CDN that is no Site's host is paced as the Series' Site.
	dm := e.series(t, "https://demonicscans.org/manga/Solo-Max-Level-Newbie")
	require.NoError(t, e.f.Fetch(ctx, FetchArgs{Key: dm.Key, Site: dm.Site, Address: "https://readermc.org/images/x.webp", SeriesURL: dm.SeriesURL}))
	require.Equal(t, "readermc.org@500ms", e.paced[1])

	// kagane's Cover answers only a cleared same-origin page: the browser,
	// pinned to kagane's hosts, capped as the gate caps.
	kg := e.series(t, kaganeSeries)
	kaddr := "https://kagane.to/api/v2/image/0199a4c2-cccc-7ddd-8eee-ffff00001111"
	e.browser.enabled, e.browser.data, e.browser.ctype = true, imagetest.WebP(t, 3000), "image/webp"
	require.NoError(t, e.f.Fetch(ctx, FetchArgs{Key: kg.Key, Site: kg.Site, Address: kaddr, SeriesURL: kg.SeriesURL}))
	require.Equal(t, []string{kg.SeriesURL + " " + kaddr}, e.browser.calls)
	require.Contains(t, e.browser.hosts[0], "kagane.to")
	require.NotContains(t, e.browser.hosts[0], "novelfull.com")
	require.Equal(t, int64(1<<20), e.browser.max)
	require.Len(t, e.images.urls, 2, "nothing of kagane's went through the plain gate")
	require.Equal(t, imagetype.TypeWebP, e.reload(t, kg.Key).CoverType)

	// The former domain's API subdomain is kagane's too.
	kgo := e.series(t, "https://kagane.org/series/0199a4c2-7d1e-7b3a-9f21-4be0c6d1a2f4")
	require.NoError(t, e.f.Fetch(ctx, FetchArgs{Key: kgo.Key, Site: kgo.Site, Address: "https://yuzuki.kagane.org/api/v2/image/x", SeriesURL: kgo.SeriesURL}))
	require.Len(t, e.browser.calls, 2)
	require.Contains(t, e.browser.hosts[1], "yuzuki.kagane.org")
}

func TestWithoutABrowserKaganeCoversStayEmpty(t *testing.T) {
	e := newJobEnv(t)
	kg := e.series(t, kaganeSeries)
	require.NoError(t, e.f.Fetch(context.Background(), FetchArgs{Key: kg.Key, Site: kg.Site,
		Address: "https://kagane.to/api/v2/image/0199a4c2-cccc-7ddd-8eee-ffff00001111", SeriesURL: kg.SeriesURL}))
	got := e.reload(t, kg.Key)
	require.Empty(t, got.CoverAddress)
	require.Contains(t, got.CoverProblem, "no browser")
	require.Empty(t, e.images.urls, "no plain fetch of a challenge page")
	require.Empty(t, e.browser.calls)
}

func TestAPollNeverReplacesACoverAndARefetchOnlyWithNewBytes(t *testing.T) {
	e := newJobEnv(t)
	ctx := context.Background()
	s := e.series(t, "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b")
	addr := "https://cdn.asurascans.com/asura-images/covers/o.webp"
	args := FetchArgs{Key: s.Key, Site: s.Site, Address: addr, SeriesURL: s.SeriesURL}
	require.NoError(t, e.f.Fetch(ctx, args))
	first := e.reload(t, s.Key)
	require.NotEmpty(t, first.CoverAddress)

	e.images.image = Image{Bytes: imagetest.JPEG(t, 5000), ContentType: imagetype.TypeJPEG}
	require.NoError(t, e.f.Fetch(ctx, args))
	require.Len(t, e.images.urls, 1, "a Series with a Cover is not fetched again")
	require.Equal(t, first.CoverAddress, e.reload(t, s.Key).CoverAddress)

	// A refetch that fails keeps the old Cover.
	e.images.err = errors.New("fixture: connection reset")
	args.Refetch = true
	require.NoError(t, e.f.Fetch(ctx, args), "a failed Cover is recorded, not retried by River")
	kept := e.reload(t, s.Key)
	require.Equal(t, first.CoverAddress, kept.CoverAddress)
	require.Equal(t, first.UpdatedAt, kept.UpdatedAt)
	require.Contains(t, kept.CoverProblem, "connection reset")

	// A refetch with new bytes replaces it.
	e.images.err = nil
	require.NoError(t, e.f.Fetch(ctx, args))
	replaced := e.reload(t, s.Key)
	require.NotEqual(t, first.CoverAddress, replaced.CoverAddress)
	require.Equal(t, imagetype.TypeJPEG, replaced.CoverType)
	require.True(t, replaced.UpdatedAt.After(first.UpdatedAt), "clients see the Cover: updated_at moves")
	require.Empty(t, replaced.CoverProblem)
}

func TestBrowserBytesMustProveAnImage(t *testing.T) {
	e := newJobEnv(t)
	kg := e.series(t, kaganeSeries)
	e.browser.enabled, e.browser.data, e.browser.ctype = true, []byte("<!doctype html><title>Just a moment...</title>"), "image/png"
	require.NoError(t, e.f.Fetch(context.Background(), FetchArgs{Key: kg.Key, Site: kg.Site,
		Address: "https://kagane.to/api/v2/image/0199a4c2-cccc-7ddd-8eee-ffff00001111", SeriesURL: kg.SeriesURL}))
	got := e.reload(t, kg.Key)
	require.Empty(t, got.CoverAddress)
	require.Contains(t, got.CoverProblem, "not a confirmed image")
	require.Zero(t, countFiles(t, e.covers.Dir))
}

func TestAPausedSiteHostIsNotFetched(t *testing.T) {
	e := newJobEnv(t)
	ctx := context.Background()
	s := e.series(t, "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b")
	_, err := e.st.BackOffSite(ctx, "asura", "http_429: slow down", func(int) time.Duration { return time.Hour })
	require.NoError(t, err)
	require.NoError(t, e.f.Fetch(ctx, FetchArgs{Key: s.Key, Site: s.Site, Address: "https://cdn.asurascans.com/c.webp", SeriesURL: s.SeriesURL}))
	require.Empty(t, e.images.urls)
	require.Contains(t, e.reload(t, s.Key).CoverProblem, "backing off")
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	require.NoError(t, err)
	return n
}

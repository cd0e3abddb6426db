package blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/errs"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/s3test"
)

func newS3(t *testing.T, srv *s3test.Server, bucket, prefix string) *blob.S3 {
	t.Helper()
	s, err := blob.NewS3(bucket, prefix, srv.Options())
	require.NoError(t, err)
	return s
}

// The bucket holds the raw bytes under <prefix>/ab/cd/<address>, as the
// volume does, and reads them back whole, by range, and by Has and List.
func TestS3StoresRawBytesByContentAddress(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "lectern")
	s := newS3(t, srv, "lectern", "deploy/covers")
	ctx := context.Background()
	require.NoError(t, s.Check(ctx))

	b := imagetest.JPEG(t, 30_000)
	addr, err := s.Put(ctx, b, imagetype.TypeJPEG)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	require.Equal(t, hex.EncodeToString(sum[:]), addr)

	// The gateway keeps each object as a file named by its key.
	raw, err := os.ReadFile(filepath.Join(srv.Root, "lectern", "deploy", "covers", addr[:2], addr[2:4], addr))
	require.NoError(t, err)
	require.True(t, bytes.Equal(b, raw), "the object is the raw bytes")
	require.Equal(t, "s3://lectern/deploy/covers/"+addr[:2]+"/"+addr[2:4]+"/"+addr, s.Where(addr))

	o, err := s.Open(ctx, addr)
	require.NoError(t, err)
	require.EqualValues(t, len(b), o.Size())
	got, err := io.ReadAll(o)
	require.NoError(t, err)
	require.True(t, bytes.Equal(b, got))
	mid := make([]byte, 100)
	_, err = o.ReadAt(mid, 1000)
	require.NoError(t, err)
	require.Equal(t, b[1000:1100], mid)
	require.NoError(t, o.Close())

	has, err := s.Has(ctx, addr, int64(len(b)))
	require.NoError(t, err)
	require.True(t, has)
	has, err = s.Has(ctx, addr, int64(len(b))+1)
	require.NoError(t, err)
	require.False(t, has, "a wrong size is not the object")
	has, err = s.Has(ctx, strings.Repeat("ab", 32), -1)
	require.NoError(t, err)
	require.False(t, has)

	// Storing the same bytes again is a no-op with the same address.
	again, err := s.Put(ctx, bytes.Clone(b), imagetype.TypeJPEG)
	require.NoError(t, err)
	require.Equal(t, addr, again)

	second, err := s.Put(ctx, imagetest.PNG(t, 500), imagetype.TypePNG)
	require.NoError(t, err)
	// Something else in the bucket, beside and under the prefix, is none of
	// Lectern's and is not listed.
	require.NoError(t, os.WriteFile(filepath.Join(srv.Root, "lectern", "deploy", "covers", "notes.txt"), []byte("x"), 0o644))
	other := newS3(t, srv, "lectern", "elsewhere")
	_, err = other.Put(ctx, imagetest.GIF(t, 300), imagetype.TypeGIF)
	require.NoError(t, err)
	var listed []string
	require.NoError(t, s.List(ctx, func(a string, size int64) error {
		listed = append(listed, a)
		return nil
	}))
	want := []string{addr, second}
	sort.Strings(want)
	sort.Strings(listed)
	require.Equal(t, want, listed)
}

func TestS3RefusesWhatIsNotAnImageAndBadAddresses(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "bkt")
	s := newS3(t, srv, "bkt", "")
	ctx := context.Background()
	_, err := s.Put(ctx, []byte("<!doctype html>"), imagetype.TypePNG)
	require.ErrorIs(t, err, imagetype.ErrNotImage)
	_, err = s.Put(ctx, imagetest.JPEG(t, 100), imagetype.TypePNG)
	require.ErrorIs(t, err, imagetype.ErrNotImage)
	for _, bad := range []string{"", "../x", strings.Repeat("A", 64), strings.Repeat("a", 63)} {
		_, err = s.Open(ctx, bad)
		require.ErrorIs(t, err, blob.ErrBadAddress, bad)
		_, err = s.Has(ctx, bad, -1)
		require.ErrorIs(t, err, blob.ErrBadAddress, bad)
	}
	_, err = s.Open(ctx, strings.Repeat("cd", 32))
	require.ErrorIs(t, err, blob.ErrNotFound)
	require.Empty(t, srv.Files(t), "nothing was stored")
}

// A bucket that cannot be reached, is missing, or refuses the credentials
// is ErrUnavailable (503 on the routes), and no error names the secret.
func TestS3UnavailableAndSecretNeverInErrors(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "bkt")
	ctx := context.Background()
	s := newS3(t, srv, "bkt", "p")
	addr, err := s.Put(ctx, imagetest.WebP(t, 2000), imagetype.TypeWebP)
	require.NoError(t, err)

	var seen []error
	check := func(err error) {
		t.Helper()
		require.Error(t, err)
		require.ErrorIs(t, err, blob.ErrUnavailable)
		require.Equal(t, errs.Unavailable, errs.CodeOf(err))
		seen = append(seen, err)
	}

	missing := newS3(t, srv, "no-such-bucket", "")
	check(missing.Check(ctx))

	o := srv.Options()
	o.SecretAccessKey = "wrong-" + s3test.SecretKey
	wrong, err := blob.NewS3("bkt", "p", o)
	require.NoError(t, err)
	check(wrong.Check(ctx))
	_, err = wrong.Open(ctx, addr)
	check(err)
	_, err = wrong.Put(ctx, imagetest.JPEG(t, 100), imagetype.TypeJPEG)
	check(err)

	srv.Stop()
	_, err = s.Open(ctx, addr)
	check(err)
	_, err = s.Has(ctx, addr, -1)
	check(err)
	_, err = s.Put(ctx, imagetest.JPEG(t, 100), imagetype.TypeJPEG)
	check(err)
	check(s.List(ctx, func(string, int64) error { return nil }))
	check(s.Check(ctx))

	for _, err := range seen {
		require.NotContains(t, err.Error(), s3test.SecretKey)
		require.NotContains(t, err.Error(), "lectern-test-secret")
	}

	srv.Restart(t)
	r, err := s.Open(ctx, addr)
	require.NoError(t, err, "the same objects once the bucket is back")
	require.NoError(t, r.Close())
}

// The Cover route serves a bucket's Covers with today's headers, answers 503
// (not 500, not cached) while the bucket is away, and, warm, serves the
// cache's Covers without the bucket.
func TestCoverRouteOnABucket(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "covers")
	ctx := context.Background()
	stores, err := blob.Open(blob.Settings{URL: "s3://covers/site", S3: srv.Options(), CoverCacheBytes: 1 << 20})
	require.NoError(t, err)
	require.NoError(t, stores.Check(ctx))
	hot, err := stores.Covers.Put(ctx, imagetest.PNG(t, 20_000), imagetype.TypePNG)
	require.NoError(t, err)
	cold, err := stores.Covers.Put(ctx, imagetest.JPEG(t, 20_000), imagetype.TypeJPEG)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(srv.Root, "covers", "site", "covers", hot[:2], hot[2:4], hot))

	h := cover.NewHandler(stores.Covers)
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	rec := get("/covers/" + hot + ".png")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, imagetype.TypePNG, rec.Header().Get("Content-Type"))
	require.Equal(t, "public, max-age=31536000, immutable", rec.Header().Get("Cache-Control"))
	require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
	require.Equal(t, "cross-origin", rec.Header().Get("Cross-Origin-Resource-Policy"))
	require.Equal(t, `"`+hot+`"`, rec.Header().Get("ETag"))
	require.Equal(t, 20_000, rec.Body.Len())
	require.Equal(t, http.StatusNotFound, get("/covers/"+strings.Repeat("ef", 32)).Code)

	srv.Stop()
	require.Equal(t, http.StatusOK, get("/covers/"+hot).Code, "a warm Cover is served from the cache")
	rec = get("/covers/" + cold)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	require.NotEmpty(t, rec.Header().Get("Retry-After"))
	srv.Restart(t)
	require.Equal(t, http.StatusOK, get("/covers/"+cold).Code)
}

// The cache holds at most its bytes, dropping the least recently used.
func TestCoverCacheIsBounded(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "bkt")
	ctx := context.Background()
	inner := newS3(t, srv, "bkt", "")
	c := blob.NewCached(inner, 80_000).(*blob.Cached)
	var addrs []string
	for i := range 12 {
		a, err := inner.Put(ctx, imagetest.JPEG(t, 9_000+i), imagetype.TypeJPEG)
		require.NoError(t, err)
		addrs = append(addrs, a)
		o, err := c.Open(ctx, a)
		require.NoError(t, err)
		require.NoError(t, o.Close())
		require.LessOrEqual(t, c.CachedBytes(), int64(80_000))
	}
	require.Greater(t, c.CachedBytes(), int64(60_000))
	srv.Stop()
	_, err := c.Open(ctx, addrs[len(addrs)-1])
	require.NoError(t, err, "the newest is cached")
	_, err = c.Open(ctx, addrs[0])
	require.ErrorIs(t, err, blob.ErrUnavailable, "the oldest was dropped: the bucket is asked")
}

func TestOpenSettings(t *testing.T) {
	t.Parallel()
	st, err := blob.Open(blob.Settings{CoverDir: "/v/c", ArchiveDir: "/v/a"})
	require.NoError(t, err)
	require.Equal(t, "/v/c", st.Covers.(*blob.FS).Dir)
	require.Equal(t, "/v/a/pages", st.Pages.(*blob.FS).Dir)
	// BLOB_URL beats the directories; file:///dir is laid out as DATA_DIR.
	st, err = blob.Open(blob.Settings{URL: "file:///data/", CoverDir: "/v/c", ArchiveDir: "/v/a"})
	require.NoError(t, err)
	require.Equal(t, "/data/covers", st.Covers.(*blob.FS).Dir)
	require.Equal(t, "/data/archive/pages", st.Pages.(*blob.FS).Dir)
	require.Nil(t, st.Bucket)
	st, err = blob.Open(blob.Settings{URL: "s3://bkt/a/b/", S3: blob.S3Options{Endpoint: "http://127.0.0.1:1"}})
	require.NoError(t, err)
	require.Equal(t, "s3://bkt/a/b/covers", st.Covers.URL())
	require.Equal(t, "s3://bkt/a/b/pages", st.Pages.URL())
	for _, bad := range []string{"s3:///x", "file://host/x", "file:relative", "ftp://x/y", "::"} {
		_, err := blob.Open(blob.Settings{URL: bad})
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "BLOB_URL", bad)
	}
	_, err = blob.NewS3("b", "", blob.S3Options{Endpoint: "ftp://x"})
	require.Error(t, err)
	require.True(t, errors.Is(err, err))
}

// countingTransport counts requests and holds each one a moment, so that
// concurrent misses overlap.
type countingTransport struct {
	n    atomic.Int64
	hold time.Duration
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	time.Sleep(c.hold)
	return http.DefaultTransport.RoundTrip(r)
}

// Concurrent misses of one Cover share one read of the bucket.
func TestCoverCacheMissesShareOneRead(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "bkt")
	ctx := context.Background()
	plain := newS3(t, srv, "bkt", "")
	b := imagetest.PNG(t, 30_000)
	addr, err := plain.Put(ctx, b, imagetype.TypePNG)
	require.NoError(t, err)

	tr := &countingTransport{hold: 200 * time.Millisecond}
	o := srv.Options()
	o.Transport = tr
	inner, err := blob.NewS3("bkt", "", o)
	require.NoError(t, err)
	c := blob.NewCached(inner, 1<<20)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			r, err := c.Open(ctx, addr)
			if !assert.NoError(t, err) {
				return
			}
			got, err := io.ReadAll(r)
			assert.NoError(t, err)
			assert.True(t, bytes.Equal(b, got))
			_ = r.Close()
		})
	}
	wg.Wait()
	require.LessOrEqual(t, tr.n.Load(), int64(2), "one read of the bucket (its GET), not one per request")
}

// An object above a mebibyte streams (ranges for ReadAt and Seek) instead
// of being read whole.
func TestS3StreamsLargeObjects(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "bkt")
	s := newS3(t, srv, "bkt", "pages")
	ctx := context.Background()
	b := imagetest.JPEG(t, 1_500_000)
	addr, err := s.Put(ctx, b, imagetype.TypeJPEG)
	require.NoError(t, err)
	o, err := s.Open(ctx, addr)
	require.NoError(t, err)
	defer o.Close()
	require.EqualValues(t, len(b), o.Size())
	mid := make([]byte, 1000)
	_, err = o.ReadAt(mid, 1_200_000)
	require.NoError(t, err)
	require.Equal(t, b[1_200_000:1_201_000], mid)
	_, err = o.Seek(0, io.SeekStart)
	require.NoError(t, err)
	got, err := io.ReadAll(o)
	require.NoError(t, err)
	require.True(t, bytes.Equal(b, got))
}

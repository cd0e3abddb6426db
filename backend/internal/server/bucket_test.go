package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/apptest"
	"github.com/lectern-reader/lectern/backend/internal/archive"
	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/s3test"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// With BLOB_URL on a bucket, the Cover route and the archive reader's page
// route serve from it, and answer 503 (not 500) while it cannot be reached;
// Bookmarks, which need no bucket, are served all along.
func TestBucketAwayIs503NotAnError(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "media")
	a := apptest.New(t, apptest.Options{Config: func(c *config.Config) {
		c.BlobURL, c.S3Endpoint, c.S3Region = "s3://media/lectern", srv.Endpoint, s3test.Region
		c.S3AccessKeyID, c.S3SecretAccessKey = s3test.AccessKey, s3test.SecretKey
		c.CoverCacheBytes = 0 // every Cover from the bucket
	}})
	ctx := context.Background()
	stores, err := blob.Open(a.Config.Blobs())
	require.NoError(t, err)
	const key = "asura:solo-leveling"
	ann := a.Reader("ann", false)
	tok := a.NewToken(ann)
	res := a.Do(http.MethodPut, "/api/bookmarks/"+key, tok,
		`{"site":"asura","series_url":"https://asurascans.com/comics/solo-leveling-1a2b3c4d","chapter":"Chapter 3"}`)
	require.Equal(t, http.StatusCreated, res.Code, string(res.Body))
	coverAddr, err := stores.Covers.Put(ctx, imagetest.RealPNG(t, 3), imagetype.TypePNG)
	require.NoError(t, err)
	page := imagetest.JPEG(t, 4000)
	pageAddr, err := stores.Pages.Put(ctx, page, imagetype.TypeJPEG)
	require.NoError(t, err)
	n := 1.0
	ch, _, err := a.Store.EnsureArchiveChapter(ctx, key, store.ArchiveChapterInput{
		URL: "https://asurascans.com/comics/solo-leveling-1a2b3c4d/chapter/1", Label: "Chapter 1", Number: &n, Position: 1,
	}, nil, store.ArchiveQueued, "", "")
	require.NoError(t, err)
	require.NoError(t, a.Store.PublishArchiveChapter(ctx, ch.ID, []store.ArchivePage{{Index: 0, Address: pageAddr,
		ContentType: imagetype.TypeJPEG, Size: len(page), Width: 10, Height: 10, SourceURL: "https://img.example/1"}}, nil))

	br := a.Browser()
	br.SignIn("ann", apptest.Password)
	pagePath := archive.PagePath(key, pageAddr)
	require.Equal(t, http.StatusOK, a.Do(http.MethodGet, "/covers/"+coverAddr, "", nil).Code)
	got := br.Get(pagePath)
	require.Equal(t, http.StatusOK, got.Code, got.Body)

	srv.Stop()
	res = a.Do(http.MethodGet, "/covers/"+coverAddr, "", nil)
	require.Equal(t, http.StatusServiceUnavailable, res.Code, string(res.Body))
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	got = br.Get(pagePath)
	require.Equal(t, http.StatusServiceUnavailable, got.Code, got.Body)
	require.Equal(t, http.StatusOK, a.Do(http.MethodGet, "/api/bookmarks/"+key, tok, nil).Code, "Bookmarks need no bucket")

	srv.Restart(t)
	require.Equal(t, http.StatusOK, a.Do(http.MethodGet, "/covers/"+coverAddr, "", nil).Code)
	require.Equal(t, http.StatusOK, br.Get(pagePath).Code)
}

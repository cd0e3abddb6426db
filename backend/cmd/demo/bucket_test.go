package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/s3test"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// `make demo` with BLOB_URL and S3_* in its environment stores the seeded
// Bookmarks' Covers in the bucket, and serves them from there.
func TestDemoOnABucket(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "demo")
	vars := map[string]string{}
	for _, kv := range srv.Env("demo", "make-demo") {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	blobs := blobEnv(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	require.Len(t, blobs, 5, "every variable of the bucket is passed through")

	dataDir := t.TempDir()
	d, err := startDemo(context.Background(), demoOptions{DatabaseURL: pgtest.NewURL(t), DataDir: dataDir,
		Listen: "127.0.0.1:0", SitesListen: "127.0.0.1:0", Blobs: blobs})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	require.Equal(t, "s3://demo/make-demo", d.lectern.Config.BlobURL)

	e := &env{t: t, sites: d.sites, lectern: d.lectern, readerID: d.readerID, token: d.token}
	comix, err := latest.Default().Resolve(fixturesites.ComixSeries)
	require.NoError(t, err)
	b := e.waitCover(comix.Key)
	res, err := http.Get(b.Cover)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotEmpty(t, body)

	// The list names the Cover by a short reference (docs/adr/0032); the
	// route's ETag is its full address, the object's name in the bucket.
	address := strings.Trim(res.Header.Get("ETag"), `"`)
	require.Len(t, address, 64)
	require.Contains(t, b.Cover, "/covers/"+address[:cover.ShortLen]+".")
	require.FileExists(t, filepath.Join(srv.Root, "demo", "make-demo", "covers", address[:2], address[2:4], address))
	for _, f := range testenv.FilesUnder(t, dataDir) {
		require.False(t, strings.HasPrefix(f, "covers") || strings.HasPrefix(f, "archive"), "no Cover or page on the demo's volume: %s", f)
	}
}

package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/s3test"
)

// serve says at start when the bucket is missing or refuses the
// credentials, naming the bucket and never the secret; a good bucket is
// silent.
func TestServeSaysWhenTheBucketCannotBeUsed(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	srv.Bucket(t, "present")
	for _, tc := range []struct {
		name, url, secret string
		logged            bool
	}{
		{"good", "s3://present/x", s3test.SecretKey, false},
		{"missing bucket", "s3://absent/x", s3test.SecretKey, true},
		{"wrong secret", "s3://present/x", "wrong-" + s3test.SecretKey, true},
	} {
		cfg := config.Config{DataDir: t.TempDir(), BlobURL: tc.url, S3Endpoint: srv.Endpoint, S3Region: s3test.Region,
			S3AccessKeyID: s3test.AccessKey, S3SecretAccessKey: tc.secret}
		blobs, err := blob.Open(cfg.Blobs())
		require.NoError(t, err)
		var buf bytes.Buffer
		checkBucket(context.Background(), blobs, cfg, newLogger(&buf, cfg))
		if !tc.logged {
			require.Empty(t, buf.String(), tc.name)
			continue
		}
		require.Contains(t, buf.String(), "cannot be used", tc.name)
		require.Contains(t, buf.String(), tc.url, tc.name)
		require.NotContains(t, buf.String(), s3test.SecretKey, tc.name)
	}
}

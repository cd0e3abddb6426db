package blob_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/lectern-reader/lectern/backend/internal/s3test"
)

// BenchmarkBlobsCopy is `lectern blobs copy` of 10,000 Covers (20–60 KB)
// from a volume to a bucket of a real S3 server (versitygw on loopback) and
// back to a new volume, 8 at once, each hashed and verified:
//
//	go test -run '^$' -bench BlobsCopy -benchtime 1x ./backend/internal/blob/
func BenchmarkBlobsCopy(b *testing.B) {
	const covers = 10_000
	ctx := context.Background()
	vol := &blob.FS{Dir: filepath.Join(b.TempDir(), "covers")}
	rng := rand.New(rand.NewPCG(3, 4))
	for range covers {
		if _, err := vol.Put(ctx, imagetest.JPEG(b, 20_000+rng.IntN(40_001)), imagetype.TypeJPEG); err != nil {
			b.Fatal(err)
		}
	}
	srv := s3test.Start(b)
	srv.Bucket(b, "bench")
	var toBucket, toVolume time.Duration
	var bytes int64
	for b.Loop() {
		bucket, err := blob.NewS3("bench", "covers-"+time.Now().Format("150405.000000"), srv.Options())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		rep, err := blob.Copy(ctx, vol, bucket, 8)
		if err != nil || rep.Copied != covers {
			b.Fatalf("copy to the bucket: %+v, %v", rep, err)
		}
		toBucket += time.Since(start)
		bytes += rep.Bytes
		back := &blob.FS{Dir: filepath.Join(b.TempDir(), "back")}
		start = time.Now()
		rep, err = blob.Copy(ctx, bucket, back, 8)
		if err != nil || rep.Copied != covers {
			b.Fatalf("copy back: %+v, %v", rep, err)
		}
		toVolume += time.Since(start)
	}
	n := float64(b.N) * covers
	b.ReportMetric(n/toBucket.Seconds(), "to-bucket-covers/s")
	b.ReportMetric(float64(bytes)/1e6/toBucket.Seconds(), "to-bucket-MB/s")
	b.ReportMetric(n/toVolume.Seconds(), "to-volume-covers/s")
	b.ReportMetric(float64(bytes)/1e6/toVolume.Seconds(), "to-volume-MB/s")
}

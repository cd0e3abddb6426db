package blob

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Settings is everything that picks and reaches the stores of a deployment
// (config.Config.Blobs fills it from BLOB_URL, COVER_DIR, ARCHIVE_DIR, S3_*
// and COVER_CACHE_BYTES).
type Settings struct {
	// URL is BLOB_URL: file:///dir or s3://bucket/prefix. Empty means the
	// volume directories below.
	URL string
	// CoverDir and ArchiveDir are the volume's directories when URL is
	// empty; page bytes live under ArchiveDir/pages.
	CoverDir, ArchiveDir string
	S3                   S3Options
	// CoverCacheBytes bounds the memory cache of Covers in front of a
	// bucket; a volume needs none (the page cache is its cache).
	CoverCacheBytes int64
}

// Stores are a deployment's two stores: Covers and archived pages.
type Stores struct {
	Covers, Pages Store
	// Bucket is the bucket behind both, nil on a volume.
	Bucket *S3
}

// Open builds the stores Settings name. On a volume, file:///dir lays files
// out as DATA_DIR=dir does (dir/covers, dir/archive/pages), so pointing
// BLOB_URL at today's DATA_DIR changes nothing; in a bucket, Covers are
// under <prefix>/covers and pages under <prefix>/pages. Open makes no
// request: Check does.
func Open(s Settings) (*Stores, error) {
	if s.URL == "" {
		if s.CoverDir == "" || s.ArchiveDir == "" {
			return nil, errors.New("no store: set BLOB_URL, or DATA_DIR (or COVER_DIR and ARCHIVE_DIR)")
		}
		return &Stores{Covers: &FS{Dir: s.CoverDir}, Pages: &FS{Dir: filepath.Join(s.ArchiveDir, "pages")}}, nil
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, fmt.Errorf("BLOB_URL: %w", err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("BLOB_URL %q: a file URL names a local directory: file:///dir", s.URL)
		}
		if u.Path == "" || !filepath.IsAbs(u.Path) {
			return nil, fmt.Errorf("BLOB_URL %q: want an absolute directory, file:///dir", s.URL)
		}
		dir := filepath.Clean(u.Path)
		return &Stores{Covers: &FS{Dir: filepath.Join(dir, "covers")}, Pages: &FS{Dir: filepath.Join(dir, "archive", "pages")}}, nil
	case "s3":
		if u.Host == "" {
			return nil, fmt.Errorf("BLOB_URL %q: no bucket: want s3://bucket/prefix", s.URL)
		}
		prefix := strings.Trim(u.Path, "/")
		join := func(p string) string {
			if prefix == "" {
				return p
			}
			return prefix + "/" + p
		}
		covers, err := NewS3(u.Host, join("covers"), s.S3)
		if err != nil {
			return nil, err
		}
		pages, err := NewS3(u.Host, join("pages"), s.S3)
		if err != nil {
			return nil, err
		}
		return &Stores{Covers: NewCached(covers, s.CoverCacheBytes), Pages: pages, Bucket: covers}, nil
	}
	return nil, fmt.Errorf("BLOB_URL %q: want file:///dir or s3://bucket/prefix", s.URL)
}

// Check reaches the bucket, if there is one, so that a missing bucket or
// refused credentials are said at start.
func (s *Stores) Check(ctx context.Context) error {
	if s.Bucket == nil {
		return nil
	}
	return s.Bucket.Check(ctx)
}

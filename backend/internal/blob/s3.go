package blob

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Options is how to reach an S3-compatible server. The secret is never put
// in an error or a log line.
type S3Options struct {
	// Endpoint is the server's URL (http://minio:9000) or host[:port]
	// (https assumed). When it is set, buckets are addressed by path
	// (endpoint/bucket/key), which every S3-compatible server understands;
	// empty means AWS S3 with virtual-host addressing.
	Endpoint        string
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	// Transport is for tests; nil means a clone of http.DefaultTransport.
	Transport http.RoundTripper
}

// S3 is the content-addressed store in a bucket of an S3-compatible server
// (ADR 0030: minio-go). The object of address abcd… is
// <prefix>/ab/cd/abcd…, holding the raw bytes, as FS lays out files.
type S3 struct {
	client *minio.Client
	bucket string
	prefix string // no leading or trailing slash; may be empty
	where  string // s3://bucket/prefix, for reports
}

// NewS3 returns the store in bucket under prefix. It makes no request: a
// bucket that is missing or refuses the credentials is found by Check.
func NewS3(bucket, prefix string, o S3Options) (*S3, error) {
	if bucket == "" {
		return nil, errors.New("s3 store: no bucket")
	}
	endpoint, secure, lookup := "s3.amazonaws.com", true, minio.BucketLookupAuto
	if o.Endpoint != "" {
		host := o.Endpoint
		if u, err := url.Parse(o.Endpoint); err == nil && u.Host != "" {
			switch u.Scheme {
			case "http":
				secure = false
			case "https":
			default:
				return nil, fmt.Errorf("S3_ENDPOINT: scheme %q: want http or https", u.Scheme)
			}
			host = u.Host
		}
		endpoint, lookup = host, minio.BucketLookupPath
	}
	tr := o.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	c, err := minio.New(endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(o.AccessKeyID, o.SecretAccessKey, ""),
		Secure:       secure,
		Region:       o.Region,
		BucketLookup: lookup,
		Transport:    tr,
		// A Reader's request waits on this: an unreachable bucket answers
		// 503 after a retry, not after minio-go's default ten.
		MaxRetries: 2,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 store: %w", err)
	}
	prefix = strings.Trim(prefix, "/")
	where := "s3://" + bucket
	if prefix != "" {
		where += "/" + prefix
	}
	return &S3{client: c, bucket: bucket, prefix: prefix, where: where}, nil
}

func (s *S3) key(address string) string {
	k := address[0:2] + "/" + address[2:4] + "/" + address
	if s.prefix != "" {
		k = s.prefix + "/" + k
	}
	return k
}

// Check asks the server whether the bucket exists and these credentials may
// read it, so `serve` can say so at start instead of at the first Cover.
func (s *S3) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return s.err("check bucket", "", err)
	}
	if !ok {
		return fmt.Errorf("%s: the bucket does not exist: %w", s.where, ErrUnavailable)
	}
	return nil
}

// Put stores b at its address. The request carries Content-MD5, so the server
// refuses bytes damaged in transit, and the object is read back (its length,
// and its ETag as the MD5 of a single-part upload; an ETag that is not one is
// checked by reading the bytes back and hashing them) before the address is
// returned, so no row names an object the bucket does not hold whole.
func (s *S3) Put(ctx context.Context, b []byte, contentType string) (string, error) {
	address, err := admit(ctx, b, contentType)
	if err != nil {
		return "", err
	}
	if err := s.verify(ctx, address, b); err == nil {
		return address, nil // immutable: already stored whole
	} else if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrNotVerified) {
		return "", err
	}
	_, err = s.client.PutObject(ctx, s.bucket, s.key(address), bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{
		ContentType:      contentType,
		SendContentMd5:   true,
		DisableMultipart: true,
		// Immutable by address, like the Cover route's answers.
		CacheControl: "public, max-age=31536000, immutable",
	})
	if err != nil {
		return "", s.err("store cover", address, err)
	}
	if err := s.verify(ctx, address, b); err != nil {
		return "", err
	}
	return address, nil
}

// verify checks that the object at address holds exactly b.
func (s *S3) verify(ctx context.Context, address string, b []byte) error {
	info, err := s.client.StatObject(ctx, s.bucket, s.key(address), minio.StatObjectOptions{})
	if err != nil {
		return s.err("verify", address, err)
	}
	if info.Size != int64(len(b)) {
		return fmt.Errorf("verify %s: %d bytes stored, %d written: %w", s.Where(address), info.Size, len(b), ErrNotVerified)
	}
	m := md5.Sum(b)
	if strings.EqualFold(strings.Trim(info.ETag, `"`), hex.EncodeToString(m[:])) {
		return nil
	}
	// Not an MD5 ETag (some servers, encryption at rest): read it back.
	o, err := s.Open(ctx, address)
	if err != nil {
		return err
	}
	defer o.Close()
	h := sha256.New()
	if _, err := io.Copy(h, o); err != nil {
		return s.err("verify", address, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != address {
		return fmt.Errorf("verify %s: bytes read back do not hash to the address: %w", s.Where(address), ErrNotVerified)
	}
	return nil
}

// Open returns the object, its existence and size checked with one request;
// its bytes stream as they are read (ranges for Seek and ReadAt).
func (s *S3) Open(ctx context.Context, address string) (Object, error) {
	if !ValidAddress(address) {
		return nil, fmt.Errorf("open cover %q: %w", address, ErrBadAddress)
	}
	o, err := s.client.GetObject(ctx, s.bucket, s.key(address), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.err("open cover", address, err)
	}
	info, err := o.Stat()
	if err != nil {
		_ = o.Close()
		return nil, s.err("open cover", address, err)
	}
	if info.Size <= wholeReadMax {
		// One GET: the body of the request Stat made, read whole. Streamed,
		// the Cover route's sniff (ReadAt) and ServeContent's seek back to
		// the start would cost a second, ranged GET.
		defer o.Close()
		b := make([]byte, info.Size)
		if _, err := io.ReadFull(o, b); err != nil {
			return nil, s.err("read cover", address, err)
		}
		return memObject{bytes.NewReader(b)}, nil
	}
	return s3Object{o, info.Size}, nil
}

// wholeReadMax is the largest object Open reads whole into memory: every
// Cover and most page images (COVER_MAX_BYTES is 2 MiB).
const wholeReadMax = 1 << 20

type s3Object struct {
	*minio.Object
	size int64
}

func (o s3Object) Size() int64 { return o.size }

// Has asks the server for the object's size (a HEAD).
func (s *S3) Has(ctx context.Context, address string, size int64) (bool, error) {
	if !ValidAddress(address) {
		return false, fmt.Errorf("stored object %q: %w", address, ErrBadAddress)
	}
	info, err := s.client.StatObject(ctx, s.bucket, s.key(address), minio.StatObjectOptions{})
	if err != nil {
		err = s.err("check", address, err)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	return size < 0 || info.Size == size, nil
}

// List lists the objects under the prefix whose keys are content addresses
// in their place; anything else in the bucket is none of Lectern's.
func (s *S3) List(ctx context.Context, fn func(address string, size int64) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing when fn fails
	p := ""
	if s.prefix != "" {
		p = s.prefix + "/"
	}
	for info := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: p, Recursive: true}) {
		if info.Err != nil {
			return s.err("list", "", info.Err)
		}
		name := info.Key[strings.LastIndexByte(info.Key, '/')+1:]
		if !ValidAddress(name) || s.key(name) != info.Key {
			continue
		}
		if err := fn(name, info.Size); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Where is the object's s3:// URL, for reports.
func (s *S3) Where(address string) string {
	if !ValidAddress(address) {
		return "(not a content address)"
	}
	return "s3://" + s.bucket + "/" + s.key(address)
}

// URL is the store as BLOB_URL names it.
func (s *S3) URL() string { return s.where }

// err sorts a client error into the package's: a missing key is ErrNotFound;
// a server that cannot be reached, answers 5xx, or refuses the credentials
// or the bucket is ErrUnavailable (a Reader's request gets 503, and the
// same request works once the Owner fixes the bucket). minio-go's errors
// name neither credential, and the endpoint alone is no secret.
func (s *S3) err(step, address string, err error) error {
	what := s.where
	if address != "" {
		what = s.Where(address)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s %s: %w", step, what, err)
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey" || (resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket"):
		return fmt.Errorf("%s %s: %w", step, what, ErrNotFound)
	case resp.Code != "":
		return fmt.Errorf("%s %s: %s (%s, HTTP %d): %w", step, what, resp.Message, resp.Code, resp.StatusCode, ErrUnavailable)
	}
	return fmt.Errorf("%s %s: %v: %w", step, what, err, ErrUnavailable)
}

package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"

	"github.com/lectern-reader/lectern/backend/internal/imagetype"
)

// Image is a fetched image whose bytes proved their type.
type Image struct {
	Bytes []byte
	// ContentType is the type the bytes prove (one of cover.Type*).
	ContentType string
	// URL is the final URL, after redirects.
	URL string
}

const acceptImages = "image/avif,image/webp,image/png,image/jpeg,image/gif;q=0.9"

// FetchImage fetches rawURL through the gate and returns its bytes when they
// are a JPEG, PNG, WebP, GIF or AVIF image no larger than the cap. referer,
// when not empty, is sent as the Referer (the Series page the address came
// from, as a browser would).
//
// The type is decided by the response, never by the URL's extension: the
// Content-Type header must name one of the five image types, and the first
// bytes must prove an image. When both are images but disagree (a CDN that
// labels every file image/jpeg, as asura's does for its .webp names), the
// bytes win: they are what a browser decodes and what the Cover route sniffs
// when it serves them, and either way the result is an image. A header that
// names no image type, or bytes that are no image, are refused before the
// rest of the body is read.
func (c *Client) FetchImage(ctx context.Context, rawURL, referer string) (Image, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Image{}, fmt.Errorf("fetch image: %w", refuse(ClassMalformed, "", err))
	}
	if err := c.preflight(u); err != nil {
		return Image{}, fmt.Errorf("fetch image: %w", err)
	}
	target := u.Redacted()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Image{}, fmt.Errorf("fetch image %s: %w", target, err)
	}
	req.Header.Set("Accept", acceptImages)
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if referer != "" {
		req.Header.Set("Referer", referer)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Image{}, fmt.Errorf("fetch image %s: %w", target, asTimeout(target, err))
	}
	defer resp.Body.Close()
	final := resp.Request.URL.Redacted()

	if resp.StatusCode != http.StatusOK {
		return Image{}, fmt.Errorf("fetch image %s: %w", final, &StatusError{Status: resp.StatusCode})
	}
	if declared := resp.Header.Get("Content-Type"); !isImageType(declared) {
		return Image{}, fmt.Errorf("fetch image: %w", refuse(ClassNotImage, final, fmt.Errorf("content type %q", declared)))
	}
	if resp.ContentLength > c.maxBytes {
		return Image{}, fmt.Errorf("fetch image: %w", refuse(ClassTooLarge, final, fmt.Errorf("declared length %d over the cap of %d", resp.ContentLength, c.maxBytes)))
	}
	body, contentType, err := c.readImage(ctx, resp.Body, resp.ContentLength, final)
	if err != nil {
		return Image{}, fmt.Errorf("fetch image: %w", err)
	}
	return Image{Bytes: body, ContentType: contentType, URL: resp.Request.URL.String()}, nil
}

// readImage reads a body that must start with image bytes and stay within
// the cap. Its buffer never grows past cap+1 bytes, whatever the server sends
// or declares. Only a clean end of body ends it: a connection cut mid-body
// (io.ErrUnexpectedEOF from a chunked body) is a failure, never a short image.
func (c *Client) readImage(ctx context.Context, r io.Reader, declaredLen int64, target string) ([]byte, string, error) {
	limit := c.maxBytes + 1
	size := int64(64 << 10)
	if declaredLen > 0 {
		size = declaredLen + 1
	}
	buf := make([]byte, 0, min(max(size, imagetype.SniffLen), limit))
	contentType := ""
	for {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(int64(cap(buf))*2, limit))
			copy(grown, buf)
			buf = grown
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		eof := errors.Is(err, io.EOF)
		// The transport may report a clean end of body after the deadline
		// has fired and cut the connection: an end seen late proves nothing.
		if err != nil && (!eof || ctx.Err() != nil) {
			if cerr := ctx.Err(); cerr != nil {
				// A deadline becomes a timeout refusal; the caller's own
				// cancellation stays context.Canceled.
				return nil, "", asTimeout(target, fmt.Errorf("read %s: %w", target, cerr))
			}
			return nil, "", asTimeout(target, fmt.Errorf("read %s: %w", target, err))
		}
		// Judge the type as soon as the sniffer has its bytes, so a page
		// that is not an image is refused without reading the rest of it.
		if contentType == "" && (len(buf) >= imagetype.SniffLen || eof) {
			if contentType = imagetype.Sniff(buf); contentType == "" {
				return nil, "", refuse(ClassNotImage, target, errors.New("the first bytes are not an image"))
			}
		}
		if int64(len(buf)) > c.maxBytes {
			return nil, "", refuse(ClassTooLarge, target, fmt.Errorf("over the cap of %d bytes", c.maxBytes))
		}
		if eof {
			return buf, contentType, nil
		}
	}
}

// isImageType reports whether a Content-Type header names one of the five
// image types ("image/jpg", a common mislabel, counts as JPEG).
func isImageType(header string) bool {
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		return false
	}
	switch mt {
	case imagetype.TypeJPEG, imagetype.TypePNG, imagetype.TypeWebP, imagetype.TypeGIF, imagetype.TypeAVIF, "image/jpg":
		return true
	}
	return false
}

// Do sends a request through the gate for a destination that is not an image
// (a notification webhook): the same scheme, address and redirect checks, the
// same deadline, and a response body that fails with a too_large refusal
// past the cap. The caller closes the body.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	if err := c.preflight(req.URL); err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	target := req.URL.Redacted()
	if c.userAgent != "" && req.Header.Get("User-Agent") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("User-Agent", c.userAgent)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, target, asTimeout(target, err))
	}
	if resp.ContentLength > c.maxBytes {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %w", req.Method, target, refuse(ClassTooLarge, resp.Request.URL.Redacted(),
			fmt.Errorf("declared length %d over the cap of %d", resp.ContentLength, c.maxBytes)))
	}
	resp.Body = &cappedBody{rc: resp.Body, max: c.maxBytes, target: resp.Request.URL.Redacted()}
	return resp, nil
}

// cappedBody passes at most max bytes through and then fails with a
// too_large refusal, reading no more than one byte past the cap from below.
type cappedBody struct {
	rc     io.ReadCloser
	max    int64
	n      int64
	target string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.n > b.max {
		return 0, refuse(ClassTooLarge, b.target, fmt.Errorf("over the cap of %d bytes", b.max))
	}
	if left := b.max - b.n + 1; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		return n - int(b.n-b.max), refuse(ClassTooLarge, b.target, fmt.Errorf("over the cap of %d bytes", b.max))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return n, asTimeout(b.target, err)
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

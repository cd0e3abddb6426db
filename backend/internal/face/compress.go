package face

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Encoding is a content coding of a response body: Identity, Gzip or Zstd.
type Encoding string

// The codings Lectern sends. Zstd is smaller and cheaper to decode than
// gzip; gzip is what every client understands.
const (
	Identity Encoding = ""
	Gzip     Encoding = "gzip"
	Zstd     Encoding = "zstd"
)

// minCompress is the body size below which compression is not worth its
// framing: an error object or a short answer goes as it is.
const minCompress = 1024

// Negotiate picks the coding of a response from the request's
// Accept-Encoding (RFC 9110 §12.5.3): zstd over gzip over identity among
// those the client accepts with a q above zero. It is the one decision,
// for the compressing middleware and for the list's cached bodies alike.
func Negotiate(r *http.Request) Encoding {
	var gz, zs, star float64 = -1, -1, -1
	for _, v := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			q := 1.0
			if k, val, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					q = f
				}
			}
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "zstd":
				zs = q
			case "gzip", "x-gzip":
				gz = q
			case "*":
				star = q
			}
		}
	}
	if zs < 0 {
		zs = star
	}
	if gz < 0 {
		gz = star
	}
	switch {
	case zs > 0 && zs >= gz:
		return Zstd
	case gz > 0:
		return Gzip
	}
	return Identity
}

// ETagFor is the strong ETag of one representation: the identity body's
// tag, or the tag with the coding appended, since a gzip body and a zstd
// body are different bytes (RFC 9110 §8.8.3).
func ETagFor(tag string, enc Encoding) string {
	if enc == Identity {
		return `"` + tag + `"`
	}
	return `"` + tag + "-" + string(enc) + `"`
}

// zstdEncoder compresses whole bodies; EncodeAll may be called
// concurrently on one encoder.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(fmt.Sprintf("zstd encoder: %v", err)) // only for invalid options, which are fixed above
	}
	return e
})

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestCompression)
	return w
}}

// Encode compresses a whole body once, for a body that is cached and sent
// many times: the better compression levels are worth their time there.
func Encode(enc Encoding, body []byte) ([]byte, error) {
	switch enc {
	case Zstd:
		return zstdEncoder().EncodeAll(body, make([]byte, 0, len(body)/8)), nil
	case Gzip:
		var buf bytes.Buffer
		buf.Grow(len(body) / 8)
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		w.Reset(&buf)
		if _, err := w.Write(body); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return buf.Bytes(), nil
	}
	return body, nil
}

// WriteEncoded writes a body already in the coding enc: 200 with its
// Content-Encoding and length. The compressing middleware leaves it as it is.
func WriteEncoded(w http.ResponseWriter, contentType string, enc Encoding, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	if enc != Identity {
		h.Set("Content-Encoding", string(enc))
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// Compress compresses JSON responses for clients that accept it, with
// Vary: Accept-Encoding on every response. A body under minCompress, one
// another coding already set (WriteEncoded), and every non-JSON response
// (Covers, archives, exports) pass as they are. A handler's ETag on a body
// compressed here becomes weak, as the bytes are no longer the tagged ones.
func Compress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Accept-Encoding")
		enc := Negotiate(r)
		if enc == Identity || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		cw := &compressWriter{ResponseWriter: w, enc: enc}
		defer func() {
			// A handler that aborts (http.ErrAbortHandler) must leave a
			// broken body, never one closed with a valid trailer.
			if p := recover(); p != nil {
				panic(p)
			}
			cw.finish()
		}()
		next.ServeHTTP(cw, r)
	})
}

// compressWriter holds back up to minCompress bytes of a JSON body to learn
// whether compressing it is worth it, then compresses the rest as it comes.
type compressWriter struct {
	http.ResponseWriter
	enc     Encoding
	status  int
	decided bool // the header went out
	hold    bool // a compressible body still under minCompress: in buf
	buf     []byte
	out     io.WriteCloser
	release func() // returns out to its pool
}

func (c *compressWriter) WriteHeader(status int) {
	if c.status != 0 {
		return
	}
	c.status = status
	h := c.Header()
	ct := h.Get("Content-Type")
	if status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified &&
		h.Get("Content-Encoding") == "" && strings.HasPrefix(ct, "application/json") {
		c.hold = true
		return
	}
	c.decided = true
	c.ResponseWriter.WriteHeader(status)
}

func (c *compressWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if !c.hold {
		if c.out != nil {
			return c.out.Write(p)
		}
		return c.ResponseWriter.Write(p)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) < minCompress {
		return len(p), nil
	}
	c.start()
	if _, err := c.out.Write(c.buf); err != nil {
		return 0, err
	}
	c.buf = nil
	return len(p), nil
}

// start sends the header of a compressed body and opens its encoder.
func (c *compressWriter) start() {
	c.hold, c.decided = false, true
	h := c.Header()
	h.Del("Content-Length")
	h.Set("Content-Encoding", string(c.enc))
	if et := h.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
		h.Set("ETag", "W/"+et)
	}
	c.ResponseWriter.WriteHeader(c.status)
	switch c.enc {
	case Zstd:
		zw := streamZstd.Get().(*zstd.Encoder)
		zw.Reset(c.ResponseWriter)
		c.out, c.release = zw, func() { streamZstd.Put(zw) }
	default:
		gw := streamGzip.Get().(*gzip.Writer)
		gw.Reset(c.ResponseWriter)
		c.out, c.release = gw, func() { streamGzip.Put(gw) }
	}
}

// The streaming encoders, reused: a zstd encoder costs far more to build
// than a small body costs to compress.
var (
	streamZstd = sync.Pool{New: func() any {
		e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		return e
	}}
	streamGzip = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression)
		return w
	}}
)

// finish ends the body: a small one goes as it is, a compressed one gets
// its trailer.
func (c *compressWriter) finish() {
	switch {
	case c.hold:
		c.ResponseWriter.WriteHeader(c.status)
		_, _ = c.ResponseWriter.Write(c.buf)
	case c.out != nil:
		_ = c.out.Close()
		c.release()
	}
}

// Flush sends what is held or compressed so far.
func (c *compressWriter) Flush() {
	if c.hold {
		c.start()
		_, _ = c.out.Write(c.buf)
		c.buf = nil
	}
	if f, ok := c.out.(interface{ Flush() error }); ok {
		_ = f.Flush()
	}
	http.NewResponseController(c.ResponseWriter).Flush() //nolint:errcheck // a writer that cannot flush sends at the end
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (c *compressWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

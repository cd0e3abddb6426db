package gate_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/blob"
	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/fetch/gate"
)

// The public addresses the fixture's names resolve to: the fake network's
// stand-ins, which its dialer connects to its loopback server. Nothing ever
// leaves the machine.
var (
	publicV4 = fakenet.StandIn
	publicV6 = fakenet.StandIn6
)

// fixture is the fake network answering for every public test name (and
// the public literals) with the handler below.
type fixture struct {
	net *fakenet.Net
	// What the server did.
	endlessBytes atomic.Int64
}

type fixtureOpts struct {
	http2 bool
	// closeConns makes every response close its connection, so each request
	// needs a fresh dial (HTTP/1.1 only).
	closeConns bool
}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	f := &fixture{net: fakenet.New(t, fakenet.Options{HTTP1Only: !o.http2})}
	h := f.handler(o)
	for _, host := range []string{"cdn.test", "img.test", "hop.test", "hooks.test", "rebind.test", "v6.test",
		publicV4.String(), publicV6.String()} {
		f.net.HandleHost(host, h)
	}
	f.net.Resolve("v6.test", publicV6)
	return f
}

func (f *fixture) client(o gate.Options) *gate.Client {
	o.Resolver = f.net
	o.Dial = f.net.DialContext
	o.RootCAs = f.net.RootCAs()
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	return gate.New(o)
}

// requests counts the requests that reached the server.
func (f *fixture) requests() int64 { return int64(len(f.net.Requests())) }

// lastReferer and lastAgent are the last request's headers.
func (f *fixture) lastReferer() string { return f.last().Get("Referer") }

func (f *fixture) lastAgent() string { return f.last().Get("User-Agent") }

func (f *fixture) last() http.Header {
	r := f.net.Requests()
	if len(r) == 0 {
		return http.Header{}
	}
	return r[len(r)-1].Header
}

func (f *fixture) handler(o fixtureOpts) http.Handler {
	mux := http.NewServeMux()
	serve := func(contentType string, body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write(body)
		}
	}
	mux.HandleFunc("/cover.jpg", serve("image/jpeg", jpegCover))
	mux.HandleFunc("/cover.png", serve("image/png", pngCover))
	mux.HandleFunc("/cover.gif", serve("image/gif", gifCover))
	mux.HandleFunc("/cover.avif", serve("image/avif", avifCover))
	mux.HandleFunc("/cover.webp", serve("image/webp", webpCover))
	// asura: .webp names answered as image/jpeg, with WebP or JPEG bytes.
	mux.HandleFunc("/asura-webp-bytes.webp", serve("image/jpeg", webpCover))
	mux.HandleFunc("/asura-jpeg-bytes.webp", serve("image/jpeg", jpegCover))
	mux.HandleFunc("/jpg-alias.jpg", serve("image/jpg", jpegCover))
	// demonic publishes cover URLs with a raw space; it must arrive encoded.
	mux.HandleFunc("/spaced/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() != "/spaced/Some%20Title.jpg" {
			http.NotFound(w, r)
			return
		}
		serve("image/jpeg", jpegCover)(w, r)
	})
	mux.HandleFunc("/page.html", serve("text/html; charset=utf-8", []byte("<!doctype html><title>x</title>")))
	mux.HandleFunc("/jpeg-as-html", serve("text/html", jpegCover))
	mux.HandleFunc("/jpeg-as-octets", serve("application/octet-stream", jpegCover))
	mux.HandleFunc("/svg", serve("image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)))
	mux.HandleFunc("/html-as-png.png", serve("image/png", []byte("<!doctype html><html><body>not a picture</body></html>")))
	mux.HandleFunc("/empty-png", serve("image/png", nil))
	mux.HandleFunc("/missing.jpg", func(w http.ResponseWriter, _ *http.Request) {
		http.NotFound(w, nil)
	})
	// size?n=N: jpegOfSize(N), streamed in 16 KiB chunks without a
	// Content-Length and without holding the whole body.
	mux.HandleFunc("/size", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "image/jpeg")
		chunk := jpegOfSize(16 << 10)
		for sent := 0; sent < n; {
			k := min(n-sent, len(chunk))
			if _, err := w.Write(chunk[:k]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if sent == 0 {
				chunk = bytes.Repeat([]byte{0x42}, len(chunk))
			}
			sent += k
		}
	})
	mux.HandleFunc("/declared-huge", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/jpeg")
		w.Header().Set("Content-Length", strconv.Itoa(64<<20))
		_, _ = w.Write(jpegCover)
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/jpeg")
		chunk := jpegOfSize(32 << 10)
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			f.endlessBytes.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/drip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/jpeg")
		_, _ = w.Write(jpegCover[:4])
		w.(http.Flusher).Flush()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				if _, err := w.Write([]byte{0}); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	})
	// Responses cut mid-body: the connection closes before the declared
	// length, or before the terminating chunk.
	mux.HandleFunc("/truncated-length", func(w http.ResponseWriter, _ *http.Request) {
		cutConnection(w, "Content-Length: 5000\r\n\r\n", jpegOfSize(300))
	})
	mux.HandleFunc("/truncated-chunked", func(w http.ResponseWriter, _ *http.Request) {
		// Shorter than the sniffer's 512 bytes: the cut must not pass for a
		// small image.
		cutConnection(w, "Transfer-Encoding: chunked\r\n\r\n12c\r\n", jpegOfSize(300))
	})
	// redirect?to=URL answers 302 to URL.
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(http.StatusFound)
	})
	// chain/N redirects N times (across two hosts) and then serves a cover.
	mux.HandleFunc("/chain/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			serve("image/jpeg", jpegCover)(w, r)
			return
		}
		host := "hop.test"
		if r.Host == "hop.test" {
			host = "cdn.test"
		}
		http.Redirect(w, r, fmt.Sprintf("https://%s/chain/%d", host, n-1), http.StatusFound)
	})
	// hook echoes a webhook's body; hook-huge answers with an endless body.
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(append([]byte("got "), b...))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.closeConns {
			w.Header().Set("Connection", "close")
		}
		mux.ServeHTTP(w, r)
	})
}

// cutConnection writes a raw HTTP/1.1 response head and part of a body, then
// closes the connection.
func cutConnection(w http.ResponseWriter, head string, body []byte) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\n" + head)
	_, _ = buf.Write(body)
	_ = buf.Flush()
}

// Test images: the real magic numbers of each format followed by random bytes.
var (
	jpegCover = append([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}, random(2000)...)
	pngCover  = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), random(2000)...)
	gifCover  = append([]byte("GIF89a"), random(2000)...)
	webpCover = riff("VP8 ", random(2000))
	avifCover = append([]byte{
		0, 0, 0, 0x1c, 'f', 't', 'y', 'p', 'a', 'v', 'i', 'f', 0, 0, 0, 0,
		'a', 'v', 'i', 'f', 'm', 'i', 'f', '1', 'm', 'i', 'a', 'f',
	}, random(2000)...)
)

func riff(chunk string, payload []byte) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBP" + chunk)
	binary.LittleEndian.PutUint32(b[4:8], uint32(len(payload)+8))
	return append(b, payload...)
}

func jpegOfSize(n int) []byte {
	b := bytes.Repeat([]byte{0x42}, n)
	copy(b, jpegCover[:11])
	return b
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// acquire is what the fetch_cover job will do: fetch through the gate and
// store only what came back as a confirmed image.
func acquire(ctx context.Context, c *gate.Client, s *blob.FS, rawURL string) (string, error) {
	img, err := c.FetchImage(ctx, rawURL, "https://site.test/series/x")
	if err != nil {
		return "", err
	}
	return s.Put(ctx, img.Bytes, img.ContentType)
}

// storedFiles lists every file under dir.
func storedFiles(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

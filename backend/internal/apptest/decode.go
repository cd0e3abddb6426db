package apptest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// Decode undoes a response's Content-Encoding as a client (a browser, a
// userscript manager) does before a script sees the body, with the standard
// library's gzip and the reference zstd decoder, not the server's own code.
func Decode(body []byte, contentEncoding string) ([]byte, error) {
	var r io.Reader
	switch contentEncoding {
	case "", "identity":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decode gzip: %w", err)
		}
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decode zstd: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("decode: unexpected Content-Encoding %q", contentEncoding)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", contentEncoding, err)
	}
	return out, nil
}

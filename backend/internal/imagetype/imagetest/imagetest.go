// Package imagetest makes test images: the real magic numbers of each format
// followed by random bytes, which is all the blob store, the Cover route and
// the gate ever look at, and small real PNGs for the parts that decode.
package imagetest

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"testing"
)

// JPEG is n bytes that start like a JPEG file.
func JPEG(t testing.TB, n int) []byte {
	t.Helper()
	b := Random(t, n)
	copy(b, []byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00})
	return b
}

// PNG is n bytes that start like a PNG file.
func PNG(t testing.TB, n int) []byte {
	t.Helper()
	b := Random(t, n)
	copy(b, "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	return b
}

// GIF is n bytes that start like a GIF file.
func GIF(t testing.TB, n int) []byte {
	t.Helper()
	b := Random(t, n)
	copy(b, "GIF87a")
	return b
}

// WebP is n bytes that start like a lossless WebP file.
func WebP(t testing.TB, n int) []byte {
	t.Helper()
	b := Random(t, n)
	copy(b, "RIFF\x00\x00\x00\x00WEBPVP8L")
	binary.LittleEndian.PutUint32(b[4:8], uint32(n-8))
	return b
}

// AVIF is n bytes that start like an AVIF file.
func AVIF(t testing.TB, n int) []byte {
	t.Helper()
	b := Random(t, n)
	copy(b, []byte{0, 0, 0, 0x18, 'f', 't', 'y', 'p', 'm', 'i', 'f', '1', 0, 0, 0, 0, 'm', 'i', 'f', '1', 'a', 'v', 'i', 'f'})
	return b
}

// Random is n random bytes.
func Random(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// RealPNG is a small real PNG (20 by 28), different for each seed.
func RealPNG(t testing.TB, seed uint8) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 20, 28))
	for x := range 20 {
		for y := range 28 {
			img.Set(x, y, color.RGBA{R: seed, G: uint8(x * 12), B: uint8(y * 9), A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

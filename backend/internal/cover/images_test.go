package cover

import (
	"crypto/rand"
	"encoding/binary"
	"testing"
)

// Test images: the real magic numbers of each format followed by random
// bytes, which is all the store and the route ever look at.
func jpegBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := randomBytes(t, n)
	copy(b, []byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00})
	return b
}

func pngBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := randomBytes(t, n)
	copy(b, "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	return b
}

func gifBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := randomBytes(t, n)
	copy(b, "GIF87a")
	return b
}

func webpBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := randomBytes(t, n)
	copy(b, "RIFF\x00\x00\x00\x00WEBPVP8L")
	binary.LittleEndian.PutUint32(b[4:8], uint32(n-8))
	return b
}

func avifBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := randomBytes(t, n)
	copy(b, []byte{0, 0, 0, 0x18, 'f', 't', 'y', 'p', 'm', 'i', 'f', '1', 0, 0, 0, 0, 'm', 'i', 'f', '1', 'a', 'v', 'i', 'f'})
	return b
}

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

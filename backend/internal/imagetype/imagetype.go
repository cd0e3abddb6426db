// Package imagetype decides an image's type from its bytes alone, for the
// destination gate, the blob store and the Cover route.
package imagetype

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// ErrNotImage: the bytes are not a JPEG, PNG, WebP, GIF or AVIF image of the
// declared type. The Cover route relies on only confirmed images being stored.
var ErrNotImage = errors.New("bytes are not a confirmed image of the declared type")

// The five image types a Cover may have. Anything else is refused before it is
// stored, and the route serves only what these magic numbers confirm.
const (
	TypeJPEG = "image/jpeg"
	TypePNG  = "image/png"
	TypeWebP = "image/webp"
	TypeGIF  = "image/gif"
	TypeAVIF = "image/avif"
)

// SniffLen is how many leading bytes Sniff needs to decide every type it knows.
// An AVIF file names its brands in a leading ftyp box; 512 bytes holds any
// plausible one.
const SniffLen = 512

// Sniff returns the image type proven by the first bytes of b, or "" when b does
// not start like a JPEG, PNG, WebP, GIF or AVIF file. It exists because
// http.DetectContentType knows no AVIF, and because the decision must rest on
// the bytes alone, never on a header or a file name.
func Sniff(b []byte) string {
	switch {
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return TypeJPEG
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return TypePNG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return TypeGIF
	case isWebP(b):
		return TypeWebP
	case isAVIF(b):
		return TypeAVIF
	}
	return ""
}

// isWebP checks the RIFF container, the WEBP form type and a known first chunk
// (lossy, lossless or extended), so a RIFF WAVE or AVI file is not taken for one.
func isWebP(b []byte) bool {
	if len(b) < 16 || !bytes.Equal(b[0:4], []byte("RIFF")) || !bytes.Equal(b[8:12], []byte("WEBP")) {
		return false
	}
	switch string(b[12:16]) {
	case "VP8 ", "VP8L", "VP8X":
		return true
	}
	return false
}

// isAVIF reads the leading ISO-BMFF ftyp box: the major brand or one of the
// compatible brands must be avif (still image) or avis (image sequence). A HEIC
// file has the same box with heic/mif1 brands only and is not accepted.
func isAVIF(b []byte) bool {
	if len(b) < 16 || !bytes.Equal(b[4:8], []byte("ftyp")) {
		return false
	}
	size := int(binary.BigEndian.Uint32(b[0:4]))
	if size < 16 || size%4 != 0 {
		return false
	}
	end := min(size, len(b))
	if isAVIFBrand(b[8:12]) {
		return true
	}
	// b[12:16] is the minor version; compatible brands follow in 4-byte steps.
	for i := 16; i+4 <= end; i += 4 {
		if isAVIFBrand(b[i : i+4]) {
			return true
		}
	}
	return false
}

func isAVIFBrand(brand []byte) bool {
	return bytes.Equal(brand, []byte("avif")) || bytes.Equal(brand, []byte("avis"))
}

// Ext is the file extension of a Cover's public URL for an image type, or ""
// for a type that is not one of the five.
func Ext(contentType string) string {
	switch contentType {
	case TypeJPEG:
		return "jpg"
	case TypePNG:
		return "png"
	case TypeWebP:
		return "webp"
	case TypeGIF:
		return "gif"
	case TypeAVIF:
		return "avif"
	}
	return ""
}

// typeForExt is the inverse of Ext.
func ForExt(ext string) string {
	switch ext {
	case "jpg":
		return TypeJPEG
	case "png":
		return TypePNG
	case "webp":
		return TypeWebP
	case "gif":
		return TypeGIF
	case "avif":
		return TypeAVIF
	}
	return ""
}

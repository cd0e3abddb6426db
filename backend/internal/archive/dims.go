package archive

import (
	"bytes"
	"encoding/binary"
	"image"
	_ "image/gif"  // registers GIF for DecodeConfig
	_ "image/jpeg" // registers JPEG for DecodeConfig
	_ "image/png"  // registers PNG for DecodeConfig

	"github.com/lectern-reader/lectern/backend/internal/imagetype"
)

// maxSide bounds a believable image side; a header claiming more is taken
// as unknown rather than put into a page's width attribute.
const maxSide = 1 << 16

// Dimensions reads an image's width and height from its header without
// decoding the pixels, so the reader can lay out lazy images before they
// load. 0, 0 means unknown (a header it cannot read); the page is stored
// anyway and shown without a reserved size.
func Dimensions(b []byte, contentType string) (w, h int) {
	switch contentType {
	case imagetype.TypeJPEG, imagetype.TypePNG, imagetype.TypeGIF:
		cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
		if err != nil {
			return 0, 0
		}
		w, h = cfg.Width, cfg.Height
	case imagetype.TypeWebP:
		w, h = webpSize(b)
	case imagetype.TypeAVIF:
		w, h = avifSize(b)
	}
	if w <= 0 || h <= 0 || w > maxSide || h > maxSide {
		return 0, 0
	}
	return w, h
}

// webpSize reads the first chunk of a WebP file: lossy (VP8), lossless
// (VP8L) or extended (VP8X, whose canvas size is the image's).
func webpSize(b []byte) (int, int) {
	if len(b) < 30 {
		return 0, 0
	}
	d := b[20:]
	switch string(b[12:16]) {
	case "VP8 ":
		// 3-byte frame tag, start code 9d 01 2a, then 14-bit sizes.
		if d[3] != 0x9d || d[4] != 0x01 || d[5] != 0x2a {
			return 0, 0
		}
		return int(binary.LittleEndian.Uint16(d[6:8]) & 0x3fff), int(binary.LittleEndian.Uint16(d[8:10]) & 0x3fff)
	case "VP8L":
		if d[0] != 0x2f {
			return 0, 0
		}
		bits := binary.LittleEndian.Uint32(d[1:5])
		return int(bits&0x3fff) + 1, int((bits>>14)&0x3fff) + 1
	case "VP8X":
		w := int(d[4]) | int(d[5])<<8 | int(d[6])<<16
		h := int(d[7]) | int(d[8])<<8 | int(d[9])<<16
		return w + 1, h + 1
	}
	return 0, 0
}

// avifSize finds the first image spatial extent ('ispe') property, which is
// the primary image's in every encoder seen, within the header.
func avifSize(b []byte) (int, int) {
	head := b[:min(len(b), 64<<10)]
	i := bytes.Index(head, []byte("ispe"))
	// box type, 4 bytes of version and flags, then width and height.
	if i < 0 || i+16 > len(head) {
		return 0, 0
	}
	return int(binary.BigEndian.Uint32(head[i+8 : i+12])), int(binary.BigEndian.Uint32(head[i+12 : i+16]))
}

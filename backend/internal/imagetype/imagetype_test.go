package imagetype_test

import (
	"testing"

	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/imagetype/imagetest"
	"github.com/stretchr/testify/require"
)

func TestSniffConfirmsOnlyTheFiveImageTypes(t *testing.T) {
	t.Parallel()
	ftyp := func(major string, compat ...string) []byte {
		b := []byte{0, 0, 0, byte(16 + 4*len(compat)), 'f', 't', 'y', 'p'}
		b = append(b, major...)
		b = append(b, 0, 0, 0, 0)
		for _, c := range compat {
			b = append(b, c...)
		}
		return append(b, make([]byte, 32)...)
	}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"jpeg jfif", imagetest.JPEG(t, 64), imagetype.TypeJPEG},
		{"jpeg exif", []byte("\xFF\xD8\xFF\xE1\x00\x18Exif\x00\x00"), imagetype.TypeJPEG},
		{"png", imagetest.PNG(t, 64), imagetype.TypePNG},
		{"gif87a", imagetest.GIF(t, 64), imagetype.TypeGIF},
		{"gif89a", []byte("GIF89a\x01\x00\x01\x00"), imagetype.TypeGIF},
		{"webp lossless", imagetest.WebP(t, 64), imagetype.TypeWebP},
		{"webp lossy", []byte("RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00"), imagetype.TypeWebP},
		{"webp extended", []byte("RIFF\x24\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00"), imagetype.TypeWebP},
		{"avif major brand", ftyp("avif", "mif1", "miaf"), imagetype.TypeAVIF},
		{"avif sequence", ftyp("avis", "msf1"), imagetype.TypeAVIF},
		{"avif as compatible brand", imagetest.AVIF(t, 64), imagetype.TypeAVIF},

		{"empty", nil, ""},
		{"jpeg truncated", []byte{0xFF, 0xD8}, ""},
		{"png truncated", []byte("\x89PNG\r\n"), ""},
		{"gif other version", []byte("GIF90a\x00\x00"), ""},
		{"riff wave", []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00"), ""},
		{"riff webp unknown chunk", []byte("RIFF\x24\x00\x00\x00WEBPABCD\x10\x00\x00\x00"), ""},
		{"heic", ftyp("heic", "mif1", "heic"), ""},
		{"mp4", ftyp("isom", "iso2", "mp41"), ""},
		{"avif brand beyond the box", append(ftyp("mif1"), "avif"...), ""},
		{"ftyp with absurd size", append([]byte{0xff, 0xff, 0xff, 0xfc, 'f', 't', 'y', 'p', 'm', 'i', 'f', '1', 0, 0, 0, 0}, "mif1"...), ""},
		{"ftyp too small", []byte{0, 0, 0, 8, 'f', 't', 'y', 'p', 'a', 'v', 'i', 'f', 0, 0, 0, 0}, ""},
		{"html", []byte("<!doctype html><html><body>hi</body></html>"), ""},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`), ""},
		{"bmp", []byte("BM\x36\x00\x0c\x00\x00\x00\x00\x00"), ""},
		{"ico", []byte{0, 0, 1, 0, 1, 0, 16, 16}, ""},
		{"pdf", []byte("%PDF-1.7\n"), ""},
		{"json", []byte(`{"cover":"x"}`), ""},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, imagetype.Sniff(tc.b), tc.name)
	}
}

func TestExtensionsRoundTrip(t *testing.T) {
	t.Parallel()
	for typ, ext := range map[string]string{imagetype.TypeJPEG: "jpg", imagetype.TypePNG: "png", imagetype.TypeWebP: "webp", imagetype.TypeGIF: "gif", imagetype.TypeAVIF: "avif"} {
		require.Equal(t, ext, imagetype.Ext(typ))
		require.Equal(t, typ, imagetype.ForExt(ext))
	}
	for _, typ := range []string{"", "image/svg+xml", "text/html", "image/jpg", "IMAGE/PNG"} {
		require.Empty(t, imagetype.Ext(typ), typ)
	}
	for _, ext := range []string{"", "jpeg", "JPG", "svg", "html", "png.jpg"} {
		require.Empty(t, imagetype.ForExt(ext), ext)
	}
}

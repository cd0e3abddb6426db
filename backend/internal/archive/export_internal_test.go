package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/imagetype"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

func TestDimensionsFromHeaders(t *testing.T) {
	t.Parallel()
	img := image.NewPaletted(image.Rect(0, 0, 37, 19), color.Palette{color.Black, color.White})
	var pngBuf, gifBuf bytes.Buffer
	require.NoError(t, png.Encode(&pngBuf, img))
	require.NoError(t, gif.Encode(&gifBuf, img, nil))

	riff := func(chunk string, data []byte) []byte {
		b := []byte("RIFF\x00\x00\x00\x00WEBP" + chunk + "\x00\x00\x00\x00")
		return append(b, data...)
	}
	lossy := riff("VP8 ", []byte{0, 0, 0, 0x9d, 0x01, 0x2a, 0x40, 0x01, 0xf0, 0x00, 0, 0}) // 320x240
	lossless := make([]byte, 10)
	lossless[0] = 0x2f
	binary.LittleEndian.PutUint32(lossless[1:], uint32(799)|uint32(1199)<<14)        // 800x1200
	extended := riff("VP8X", []byte{0, 0, 0, 0, 0x1f, 0x03, 0, 0x57, 0x04, 0, 0, 0}) // 800x1112
	avif := append([]byte("\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf"),
		[]byte("\x00\x00\x00\x14ispe\x00\x00\x00\x00\x00\x00\x02\xd0\x00\x00\x0f\xa0")...) // 720x4000

	for _, tc := range []struct {
		name string
		b    []byte
		ct   string
		w, h int
	}{
		{"png", pngBuf.Bytes(), imagetype.TypePNG, 37, 19},
		{"gif", gifBuf.Bytes(), imagetype.TypeGIF, 37, 19},
		{"webp lossy", lossy, imagetype.TypeWebP, 320, 240},
		{"webp lossless", riff("VP8L", lossless), imagetype.TypeWebP, 800, 1200},
		{"webp extended", extended, imagetype.TypeWebP, 800, 1112},
		{"avif", avif, imagetype.TypeAVIF, 720, 4000},
		{"truncated jpeg", []byte{0xff, 0xd8, 0xff}, imagetype.TypeJPEG, 0, 0},
		{"garbage webp", riff("VP8 ", []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), imagetype.TypeWebP, 0, 0},
		{"no ispe", []byte("\x00\x00\x00\x1cftypavif"), imagetype.TypeAVIF, 0, 0},
		{"absurd size", append([]byte("ftypavif ispe"), []byte("\x00\x00\x00\x00\x7f\xff\xff\xff\x00\x00\x00\x10")...), imagetype.TypeAVIF, 0, 0},
		{"unknown type", pngBuf.Bytes(), "image/jxl", 0, 0},
	} {
		w, h := Dimensions(tc.b, tc.ct)
		require.Equal(t, [2]int{tc.w, tc.h}, [2]int{w, h}, tc.name)
	}
}

func TestParagraphsAndEscaping(t *testing.T) {
	t.Parallel()
	got := Paragraphs("  First line\r\nsecond line \n\n\n<b>bold</b> & \"x\"\n\n")
	require.Equal(t, [][]string{{"First line", "second line"}, {`<b>bold</b> & "x"`}}, got)
	var b bytes.Buffer
	require.NoError(t, writeChapterXHTML(&b, epubSeries{Language: "en"}, store.ArchiveChapter{Label: "Ch. 1 <intro> & \x01more"},
		"a < b && c > d\x0be\n\nnext"))
	doc := b.String()
	require.Contains(t, doc, "<title>Ch. 1 &lt;intro&gt; &amp; \uFFFDmore</title>", "characters XML cannot hold become U+FFFD")
	require.Contains(t, doc, "<p>a &lt; b &amp;&amp; c &gt; d\uFFFDe</p>")
	require.Contains(t, doc, "<p>next</p>")
}

func TestSelectionParse(t *testing.T) {
	t.Parallel()
	n := func(f float64) *float64 { return &f }
	ch := func(id int64, num *float64) store.ArchiveChapter { return store.ArchiveChapter{ID: id, Number: num} }
	sel, err := ParseSelection("1-3, 7.5 ,all", "42")
	require.NoError(t, err)
	require.False(t, sel.All())
	require.True(t, sel.match(ch(1, n(2))))
	require.True(t, sel.match(ch(1, n(3))))
	require.True(t, sel.match(ch(1, n(7.5))))
	require.False(t, sel.match(ch(1, n(4))))
	require.False(t, sel.match(ch(1, nil)))
	require.True(t, sel.match(ch(42, nil)), "an id names a chapter without a number")
	all, err := ParseSelection("", "")
	require.NoError(t, err)
	require.True(t, all.All())
	require.True(t, all.match(ch(9, nil)))
	for _, bad := range [][2]string{{"x", ""}, {"5-2", ""}, {"1-", ""}, {"-1", ""}, {"NaN", ""}, {"", "0"}, {"", "x"},
		{strings.Repeat("1,", 600), ""}, {strings.Repeat("9", 5000), ""}} {
		_, err := ParseSelection(bad[0], bad[1])
		require.ErrorIs(t, err, ErrBadSelection, "%q %q", bad[0], bad[1])
	}
}

func TestFileNames(t *testing.T) {
	t.Parallel()
	e := &Export{title: `Solo: "Max" / Level?`, Chapters: []store.ArchiveChapter{{Label: "Chapter 12"}}}
	require.Equal(t, "Solo_ _Max_ _ Level_ - Chapter 12.cbz", e.FileName("cbz"))
	e = &Export{title: "Ωmega..", Chapters: make([]store.ArchiveChapter, 2)}
	require.Equal(t, "Ωmega.epub", e.FileName("epub"))
	require.Equal(t, "_mega.epub", e.ASCIIFileName("epub"))
	e = &Export{title: "\x00\x01", Chapters: make([]store.ArchiveChapter, 2)}
	require.Equal(t, "__.cbz", e.FileName("cbz"))
}

// A page whose file is missing, or shorter than its row says, fails the
// stream instead of writing a short entry into a zip that looks whole.
func TestCBZFailsOnMissingOrShortPage(t *testing.T) {
	t.Parallel()
	page := store.ArchivePage{Address: strings.Repeat("a", 64), ContentType: imagetype.TypeJPEG, Size: 10, Width: 1, Height: 1}
	chapters := []cbzChapter{{Chapter: store.ArchiveChapter{Label: "c"}, Pages: func(context.Context) ([]store.ArchivePage, error) {
		return []store.ArchivePage{page}, nil
	}}}
	missing := func(context.Context, string) (io.ReadCloser, error) { return nil, fs.ErrNotExist }
	err := writeCBZ(context.Background(), io.Discard, cbzSeries{Title: "s"}, chapters, missing, time.Now())
	require.ErrorIs(t, err, fs.ErrNotExist)
	short := func(context.Context, string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader("12345")), nil
	}
	err = writeCBZ(context.Background(), io.Discard, cbzSeries{Title: "s"}, chapters, short, time.Now())
	require.Error(t, err)
	require.Contains(t, err.Error(), "has 5 bytes")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = writeCBZ(ctx, io.Discard, cbzSeries{Title: "s"}, chapters, short, time.Now())
	require.True(t, errors.Is(err, context.Canceled))
}

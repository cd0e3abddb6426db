package fixturesites

import (
	"bytes"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
)

// imageKind decides the shape of a generated image.
type imageKind int

const (
	coverImage imageKind = iota // a Cover: portrait, a title band and an emblem
	pageImage                   // a manga page: a few bordered panels
	smallImage                  // anything else a page shows (logos, thumbnails)
)

// generate draws a PNG that differs for every seed (the image's URL), so a
// test can tell one Cover from another and a browser shows something that
// looks like what it stands for. Real CDNs name such files .webp or .jpg; the
// bytes are PNG and the Content-Type says so, as the Cover job decides from
// the bytes, never the extension.
func generate(seed string, kind imageKind) []byte {
	h := fnv.New64a()
	_, _ = h.Write([]byte(seed))
	sum := h.Sum64()
	top := hue(float64(sum%360), 0.55, 0.55)
	bottom := hue(float64((sum>>16)%360), 0.6, 0.25)

	w, ht := 240, 340
	switch kind {
	case pageImage:
		w, ht = 400, 600
	case smallImage:
		w, ht = 96, 96
	}
	img := image.NewRGBA(image.Rect(0, 0, w, ht))
	for y := range ht {
		c := mix(top, bottom, float64(y)/float64(ht-1))
		row := img.Pix[y*img.Stride : y*img.Stride+w*4]
		for x := 0; x < w*4; x += 4 {
			row[x], row[x+1], row[x+2], row[x+3] = c.R, c.G, c.B, 255
		}
	}
	switch kind {
	case coverImage:
		fill(img, image.Rect(0, ht*2/3, w, ht*2/3+ht/6), color.RGBA{16, 18, 22, 255})
		r := w / 5
		cx, cy := w/2, ht/3
		for y := cy - r; y <= cy+r; y++ {
			for x := cx - r; x <= cx+r; x++ {
				if (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r {
					img.SetRGBA(x, y, color.RGBA{240, 236, 228, 255})
				}
			}
		}
	case pageImage:
		white := color.RGBA{246, 244, 240, 255}
		ink := color.RGBA{20, 20, 24, 255}
		fill(img, img.Bounds(), white)
		panels := []image.Rectangle{
			image.Rect(16, 16, w-16, ht/3-8),
			image.Rect(16, ht/3+8, w/2-8, 2*ht/3-8),
			image.Rect(w/2+8, ht/3+8, w-16, 2*ht/3-8),
			image.Rect(16, 2*ht/3+8, w-16, ht-16),
		}
		for i, p := range panels {
			fill(img, p, ink)
			inner := p.Inset(3)
			c := mix(top, bottom, float64(i)/3)
			fill(img, inner, c)
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	// Encoding an in-memory RGBA image into a buffer cannot fail.
	_ = enc.Encode(&buf, img)
	return buf.Bytes()
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

func mix(a, b color.RGBA, t float64) color.RGBA {
	l := func(x, y uint8) uint8 { return uint8(float64(x) + (float64(y)-float64(x))*t) }
	return color.RGBA{l(a.R, b.R), l(a.G, b.G), l(a.B, b.B), 255}
}

// hue is an HSL colour with h in degrees.
func hue(h, s, l float64) color.RGBA {
	c := (1 - abs(2*l-1)) * s
	hp := h / 60
	x := c * (1 - abs(mod2(hp)-1))
	var r, g, b float64
	switch {
	case hp < 1:
		r, g = c, x
	case hp < 2:
		r, g = x, c
	case hp < 3:
		g, b = c, x
	case hp < 4:
		g, b = x, c
	case hp < 5:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := l - c/2
	to := func(v float64) uint8 { return uint8((v + m) * 255) }
	return color.RGBA{to(r), to(g), to(b), 255}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func mod2(v float64) float64 {
	for v >= 2 {
		v -= 2
	}
	return v
}

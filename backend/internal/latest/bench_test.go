package latest

import (
	"bytes"
	"net/url"
	"testing"
)

// BenchmarkExtract times every series question (Title, Latest, Cover, Chapters) on
// each Site's series fixture and on the same grown to 1 MB with realistic
// noise, and Content on its chapter fixture. Each body has a sibling "ref"
// run, a bytes.Count pass over the same bytes, so results read as ratios to
// memory speed measured in the same run.
func BenchmarkExtract(b *testing.B) {
	sites := []struct{ site, series, chapter, page, chapterPage string }{
		{"asura", "series.html", "chapter.html", orv, orv + "/chapter/250"},
		{"demonic", "series.html", "chapter.html", smln, smln},
		{"comix", "series.html", "chapter.html", tged, tged + "/5551985-chapter-205"},
		{"kagane", "series.json", "chapter-manifest.json", tower, towerBk + "5"},
		{"lightnovelworld", "series.html", "chapter.html", shadow, shadow + "/chapter-2301"},
		{"novelfull", "series.html", "chapter.html", mechanic + ".html", mechanic + "/chapter-1462.html"},
		// MangaDex's series questions are answered by the feed (chapters) and
		// the record (title, Cover); the feed is the larger, growing body.
		{"mangadex", "feed.json", "chapter.json", mdFeed, mdAtHome},
		{"royalroad", "series.html", "chapter.html", lamp, lamp + "/chapter/800006"},
		{"webtoons", "series.html", "chapter.html", saltList, saltEp(6)},
	}
	for _, tc := range sites {
		site, _ := reg.Lookup(tc.site)
		page, _ := url.Parse(tc.page)
		chapterPage, _ := url.Parse(tc.chapterPage)
		series := func(body []byte) {
			if _, err := site.Title(body, page); err != nil {
				b.Fatal(err)
			}
			if _, err := site.Latest(body, page); err != nil {
				b.Fatal(err)
			}
			if _, err := site.Cover(body, page); err != nil {
				b.Fatal(err)
			}
			if _, err := site.Chapters(body, page); err != nil {
				b.Fatal(err)
			}
		}
		content := func(body []byte) {
			if _, err := site.Content(body, chapterPage); err != nil {
				b.Fatal(err)
			}
		}
		bodies := []struct {
			name string
			body []byte
			ask  func([]byte)
		}{
			{"series", readFixture(b, tc.site, tc.series), series},
			{"series-1MB", grownBody(b, tc.site, tc.series, 1<<20), series},
			{"chapter", readFixture(b, tc.site, tc.chapter), content},
		}
		for _, bb := range bodies {
			b.Run(tc.site+"/"+bb.name, func(b *testing.B) {
				b.SetBytes(int64(len(bb.body)))
				b.ReportAllocs()
				for b.Loop() {
					bb.ask(bb.body)
				}
			})
			b.Run(tc.site+"/"+bb.name+"/ref", func(b *testing.B) {
				b.SetBytes(int64(len(bb.body)))
				var n int
				for b.Loop() {
					n += bytes.Count(bb.body, []byte("<"))
				}
				if n == 0 && len(bb.body) > 0 && bytes.IndexByte(bb.body, '<') >= 0 {
					b.Fatal("the reference counted nothing")
				}
			})
		}
	}
}

// BenchmarkListing times each built-in Site's listing read on its listing
// fixture, beside the same bytes.Count reference as BenchmarkExtract.
func BenchmarkListing(b *testing.B) {
	for _, name := range []string{"asura", "demonic", "mangadex", "novelfull", "royalroad"} {
		site, _ := reg.Lookup(name)
		u, _ := site.ListingURL()
		page, _ := url.Parse(u)
		file := "listing.html"
		if name == "asura" || name == "mangadex" {
			file = "listing.json"
		}
		body := readFixture(b, name, file)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if lp, err := site.Listing.Read(body, page, listingNow); err != nil || len(lp.Updates) == 0 {
					b.Fatal(name, err)
				}
			}
		})
		b.Run(name+"/ref", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			var n int
			for b.Loop() {
				n += bytes.Count(body, []byte("<"))
			}
			_ = n
		})
	}
}

// BenchmarkResolve times the key derivation the API runs on every PUT,
// beside a url.Parse of the same URL as its reference.
func BenchmarkResolve(b *testing.B) {
	const u = "https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b/chapter/250?ref=home"
	b.Run("Resolve", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Resolve(u); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("url.Parse/ref", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := url.Parse(u); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package latest

import (
	"bytes"
	"context"
	"net/url"
	"testing"
)

// familyNoise is what a theme's pages repeat around the Series' own block:
// the sidebar's popular list and the related Series, with their Covers and
// chapters, the weight that grows a real page.
var familyNoise = map[string]string{
	"madara": `<div class="c-sidebar"><div class="widget popular-item-wrap"><div class="summary_image"><img src="https://toonhaven.test/wp-content/uploads/WP-manga/data/other-75x106.jpg"></div>` +
		`<ul><li class="wp-manga-chapter"><a href="https://toonhaven.test/manga/iron-orchard/chapter-100/">Chapter 100</a></li></ul></div></div>` + "\n",
	"mangathemesia": `<div id="sidebar"><div class="serieslist pop"><ul><li><div class="imgseries"><a class="series" href="https://inkstone.test/manga/ashen-crown/">` +
		`<div class="thumb"><img src="https://inkstone.test/wp-content/uploads/2026/02/ashen-crown-65x85.jpg"></div></a></div><div class="leftseries"><a href="https://inkstone.test/ashen-crown-chapter-12/">Chapter 12</a></div></li></ul></div></div>` + "\n",
	"lightnovelwp": `<div id="sidebar"><div class="section"><ul><li><div class="thumb"><img src="https://lanternreads.test/wp-content/uploads/2026/02/other-novel.jpg"></div>` +
		`<a href="https://lanternreads.test/glass-orchard-chapter-50/">Chapter 50</a></li></ul></div></div>` + "\n",
}

// BenchmarkExtractFamilies times every series question on each family's
// series fixture (madara's chapter list from its ajax answer too, through
// LatestOf and ChapterList), the same grown to 1 MB with the theme's own
// sidebar noise, and Content on its chapter fixture; next to a built-in
// Site's (asura) and a bytes.Count pass over the same bytes, measured in
// the same run, so each family reads as a ratio.
func BenchmarkExtractFamilies(b *testing.B) {
	cases := []struct {
		family, series, list, chapter, page, chapterPage string
		kind                                             Kind
	}{
		{"madara", "series.html", "", "chapter.html", "https://toonhaven.test/manga/the-lantern-keeper/", "https://toonhaven.test/manga/the-lantern-keeper/chapter-41/", Manga},
		{"madara", "series-ajax.html", "chapters-ajax.html", "chapter-novel.html", "https://toonhaven.test/manga/iron-orchard/", "https://toonhaven.test/novel/moonlit-ledger/chapter-7/", Novel},
		{"mangathemesia", "series.html", "", "chapter.html", "https://inkstone.test/manga/crimson-tidewalker/", "https://inkstone.test/crimson-tidewalker-chapter-86/", Manga},
		{"lightnovelwp", "series.html", "", "chapter.html", "https://lanternreads.test/series/the-salt-archivist/", "https://lanternreads.test/the-salt-archivist-chapter-212/", Novel},
	}
	for _, tc := range cases {
		host, _ := url.Parse(tc.page)
		site, err := NewFamilySite(tc.family, tc.family, []string{host.Hostname()}, tc.kind, nil)
		if err != nil {
			b.Fatal(err)
		}
		page, _ := url.Parse(tc.page)
		chapterPage, _ := url.Parse(tc.chapterPage)
		f := &fixtureFetcher{pages: map[string][]byte{}}
		if tc.list != "" {
			f.pages["POST "+tc.page+"ajax/chapters/"] = readFamilyFixture(b, tc.family, tc.list)
		}
		series := func(body []byte) {
			if _, err := site.Title(body, page); err != nil {
				b.Fatal(err)
			}
			if _, err := site.LatestChapter(context.Background(), f, tc.page, body); err != nil {
				b.Fatal(err)
			}
			if _, err := site.Cover(body, page); err != nil {
				b.Fatal(err)
			}
			if _, err := site.AllChapters(context.Background(), f, tc.page, body); err != nil {
				b.Fatal(err)
			}
		}
		content := func(body []byte) {
			if _, err := site.Content(body, chapterPage); err != nil {
				b.Fatal(err)
			}
		}
		body := readFamilyFixture(b, tc.family, tc.series)
		bodies := []struct {
			name string
			body []byte
			ask  func([]byte)
		}{
			{tc.series, body, series},
			{tc.series + "-1MB", growHTML(body, familyNoise[tc.family], 1<<20), series},
			{tc.chapter, readFamilyFixture(b, tc.family, tc.chapter), content},
		}
		for _, bb := range bodies {
			b.Run(tc.family+"/"+bb.name, func(b *testing.B) {
				b.SetBytes(int64(len(bb.body)))
				b.ReportAllocs()
				for b.Loop() {
					bb.ask(bb.body)
				}
			})
			b.Run(tc.family+"/"+bb.name+"/ref", func(b *testing.B) {
				b.SetBytes(int64(len(bb.body)))
				var n int
				for b.Loop() {
					n += bytes.Count(bb.body, []byte("<"))
				}
				if n == 0 {
					b.Fatal("the reference counted nothing")
				}
			})
		}
	}
	// The built-in reference, in the same run.
	asura, _ := reg.Lookup("asura")
	page, _ := url.Parse(orv)
	for _, bb := range []struct {
		name string
		body []byte
	}{{"series.html", readFixture(b, "asura", "series.html")}, {"series-1MB", grownBody(b, "asura", "series.html", 1<<20)}} {
		b.Run("builtin-asura/"+bb.name, func(b *testing.B) {
			b.SetBytes(int64(len(bb.body)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = asura.Title(bb.body, page)
				_, _ = asura.Latest(bb.body, page)
				_, _ = asura.Cover(bb.body, page)
				_, _ = asura.Chapters(bb.body, page)
			}
		})
	}
}

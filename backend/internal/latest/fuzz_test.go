package latest

import (
	"errors"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Fuzz targets: every input must give an answer or a named Problem, never
// a panic, and every answer must keep the rules (absolute URLs on the
// Site's hosts, no raw spaces, numbers that are numbers). Seeds are the
// fixtures plus the committed corpus under testdata/fuzz/.

func FuzzResolve(f *testing.F) {
	for _, tc := range []string{orv, orvOld + "/chapter/118", smln, tged + "/5551985-chapter-205", tower, shadow + "/chapter-2301", mechanic + ".html", mdTitle, mdFeed, mdCh + "105", lamp + "/chapter/800006/x", "https://www.royalroad.com/fiction/syndication/48112", saltList, saltEp(6)} {
		f.Add(tc)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ref, err := reg.Resolve(raw)
		if err != nil {
			if !errors.Is(err, ErrBadURL) && !errors.Is(err, ErrUnknownSite) && !errors.Is(err, ErrNotSeriesURL) {
				t.Fatalf("reg.Resolve(%q): unnamed error %v", raw, err)
			}
			return
		}
		site, slug, ok := SplitKey(ref.Key)
		if !ok || site != ref.Site || strings.ContainsAny(slug, "/?#: ") {
			t.Fatalf("reg.Resolve(%q) = %+v: malformed key", raw, ref)
		}
		again, err := reg.Resolve(ref.SeriesURL)
		if err != nil || again != ref {
			t.Fatalf("reg.Resolve(%q) = %+v, but its series URL resolves to %+v, %v", raw, ref, again, err)
		}
	})
}

func FuzzParseChapterNumber(f *testing.F) {
	for _, s := range []string{"Chapter 105", "Ch. 12.5 - Title", "Episode 3", "Vol. 2 Chapter 10", "第105话", "42", "Prologue", "Chapter 1,234"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, label string) {
		n, ok := ParseChapterNumber(label)
		if !ok {
			if n != 0 {
				t.Fatalf("%q: no number but %v", label, n)
			}
			return
		}
		if math.IsNaN(n) || n < 0 || n > maxChapterNumber {
			t.Fatalf("%q: %v is not a chapter number", label, n)
		}
	})
}

func FuzzExtractAsura(f *testing.F)           { fuzzSite(f, "asura", orv) }
func FuzzExtractDemonic(f *testing.F)         { fuzzSite(f, "demonic", smln) }
func FuzzExtractComix(f *testing.F)           { fuzzSite(f, "comix", tged) }
func FuzzExtractKagane(f *testing.F)          { fuzzSite(f, "kagane", tower) }
func FuzzExtractLightnovelworld(f *testing.F) { fuzzSite(f, "lightnovelworld", shadow) }
func FuzzExtractNovelfull(f *testing.F)       { fuzzSite(f, "novelfull", mechanic+".html") }
func FuzzExtractMangadex(f *testing.F)        { fuzzSite(f, "mangadex", mdRecord) }
func FuzzExtractRoyalroad(f *testing.F)       { fuzzSite(f, "royalroad", lamp) }
func FuzzExtractWebtoons(f *testing.F)        { fuzzSite(f, "webtoons", saltList) }

func FuzzExtractMadara(f *testing.F) {
	fuzzFamily(f, "madara", Manga, "https://toonhaven.test/manga/the-lantern-keeper/")
}
func FuzzExtractMadaraNovel(f *testing.F) {
	fuzzFamily(f, "madara", Novel, "https://toonhaven.test/novel/moonlit-ledger/")
}
func FuzzExtractMangathemesia(f *testing.F) {
	fuzzFamily(f, "mangathemesia", Manga, "https://inkstone.test/manga/crimson-tidewalker/")
}
func FuzzExtractLightnovelwp(f *testing.F) {
	fuzzFamily(f, "lightnovelwp", Novel, "https://lanternreads.test/series/the-salt-archivist/")
}

// fuzzFamily is fuzzSite for a Site of a family, seeded with its fixtures.
func fuzzFamily(f *testing.F, family string, kind Kind, pageURL string) {
	page, _ := url.Parse(pageURL)
	site, err := NewFamilySite(family, family, []string{page.Hostname()}, kind, nil)
	if err != nil {
		f.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(familyFixtureDir, family))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readFamilyFixture(f, family, e.Name()))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, p := range []*url.URL{page, nil} {
			checkAnswers(t, site, body, p)
		}
	})
}

func fuzzSite(f *testing.F, name, pageURL string) {
	site, _ := reg.Lookup(name)
	entries, err := os.ReadDir(filepath.Join(fixtureDir, name))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readFixture(f, name, e.Name()))
	}
	page, _ := url.Parse(pageURL)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, p := range []*url.URL{page, nil} {
			checkAnswers(t, site, body, p)
		}
	})
}

func checkAnswers(t *testing.T, site *Site, body []byte, page *url.URL) {
	t.Helper()
	named := func(question string, err error) bool {
		if err == nil {
			return true
		}
		var p *Problem
		if !errors.As(err, &p) || p.Code == "" {
			t.Fatalf("%s: %s gave an unnamed error: %v", site.Name, question, err)
		}
		return false
	}
	if title, err := site.Title(body, page); named("Title", err) && strings.ContainsAny(title, "\n\t") {
		t.Fatalf("%s: title %q is not folded", site.Name, title)
	}
	if latest, err := site.Latest(body, page); named("Latest", err) {
		checkChapter(t, site, latest)
	}
	if cover, err := site.Cover(body, page); named("Cover", err) && cover != "" {
		checkURL(t, site.Name+" Cover", cover)
	} else if err != nil && cover != "" {
		t.Fatalf("%s: a Cover %q beside a problem", site.Name, cover)
	}
	if chapters, err := site.Chapters(body, page); named("Chapters", err) {
		for _, c := range chapters {
			checkChapter(t, site, c)
		}
	}
	if site.Listing != nil {
		if lp, err := site.Listing.Read(body, page, time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)); named("Listing", err) {
			for _, u := range lp.Updates {
				checkChapter(t, site, u.Chapter)
				if _, err := site.ResolveOn(u.SeriesURL); err != nil {
					t.Fatalf("%s: listing entry %q is not a Series of the Site", site.Name, u.SeriesURL)
				}
			}
		}
	}
	if content, err := site.Content(body, page); named("Content", err) {
		for _, p := range content.Pages {
			checkURL(t, site.Name+" page", p)
		}
		if content.Pages == nil && content.Text == "" {
			t.Fatalf("%s: Content answered nothing without a problem", site.Name)
		}
	}
}

func checkChapter(t *testing.T, site *Site, c Chapter) {
	t.Helper()
	if c.URL == "" && c.Locked && c.Label != "" {
		// A locked chapter the page gives no link for (a family's coin
		// chapters): listed, with no URL.
		return
	}
	checkURL(t, site.Name+" chapter", c.URL)
	u, _ := url.Parse(c.URL)
	if !site.HasHost(u.Hostname()) {
		t.Fatalf("%s: chapter %q is not on the Site", site.Name, c.URL)
	}
	if c.Label == "" {
		t.Fatalf("%s: chapter %q without a label", site.Name, c.URL)
	}
	if c.Number != nil && (math.IsNaN(*c.Number) || *c.Number < 0 || *c.Number > maxChapterNumber) {
		t.Fatalf("%s: chapter number %v", site.Name, *c.Number)
	}
}

func checkURL(t *testing.T, what, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || strings.ContainsAny(raw, " \n\t") {
		t.Fatalf("%s: %q is not an absolute http(s) URL", what, raw)
	}
}

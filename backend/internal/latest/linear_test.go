package latest

import (
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Extraction must cost time linear in the body, up to the fetch cap, so a
// hostile page cannot turn a Poll into a CPU sink. A test cannot time that
// without flaking, so it measures work structurally: the allocations (count
// and bytes) all questions make on a body, at two sizes four times apart.
// Linear work allocates about four times as much on the larger body; a
// quadratic step (re-scanning the body per element, per marker, per
// ancestor) allocates or walks far more. The benchmarks time the same bodies.

type work struct{ mallocs, bytes uint64 }

// askAll asks every question of a body, as a Poll and an archive would.
func askAll(site *Site, body []byte, page *url.URL) {
	_, _ = site.Title(body, page)
	_, _ = site.Latest(body, page)
	_, _ = site.Cover(body, page)
	_, _ = site.Chapters(body, page)
	_, _ = site.Content(body, page)
}

func measure(site *Site, body []byte, page *url.URL) work {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	askAll(site, body, page)
	runtime.ReadMemStats(&after)
	return work{mallocs: after.Mallocs - before.Mallocs, bytes: after.TotalAlloc - before.TotalAlloc}
}

// The most the larger body may cost relative to the smaller (4x the size):
// linear plus slack for fixed costs, and for allocated bytes the slack of
// amortised slice and map growth, whose factor shifts with size. A quadratic
// step gives 16x.
const (
	linearRatio      = 5.0
	linearBytesRatio = 6.0
)

// skipUnderRace skips an allocation-count test under the race detector: the
// extractors start no goroutines, the detector only makes parsing ten times
// slower (minutes of make test), and scripts/test.sh runs these tests in a
// step of their own without it.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation counts; make test runs them without -race")
	}
}

func requireLinear(t *testing.T, site *Site, page *url.URL, small, large []byte, what string) {
	t.Helper()
	// Warm up once so lazily built tables are not counted against the small body.
	askAll(site, small, page)
	s := measure(site, small, page)
	l := measure(site, large, page)
	// Noise comes in blocks, so the sizes are only about 4x apart; the bound
	// scales with the real ratio.
	sizeRatio := float64(len(large)) / float64(len(small))
	require.Greater(t, sizeRatio, 3.5, what)
	mr := float64(l.mallocs) / float64(max(s.mallocs, 1))
	br := float64(l.bytes) / float64(max(s.bytes, 1))
	t.Logf("%s: %d→%d bytes of body, allocations x%.2f, allocated bytes x%.2f", what, len(small), len(large), mr, br)
	require.LessOrEqual(t, mr, linearRatio*sizeRatio/4, "%s: allocation count grows faster than the body", what)
	require.LessOrEqual(t, br, linearBytesRatio*sizeRatio/4, "%s: allocated bytes grow faster than the body", what)
}

// Not parallel: the allocation counters are process-wide.
func TestExtractionIsLinear(t *testing.T) {
	skipUnderRace(t)
	if testing.Short() {
		t.Skip("builds 1 MB bodies")
	}
	const small, large = 256 << 10, 1 << 20
	for _, tc := range []struct{ site, file, page string }{
		{"asura", "series.html", orv}, {"asura", "series-old.html", orvOld}, {"asura", "chapter.html", orv + "/chapter/250"},
		{"asura", "chapter-old.html", orvOld + "/chapter/118"},
		{"demonic", "series.html", smln}, {"demonic", "chapter.html", smln},
		{"comix", "series.html", tged}, {"comix", "chapter.html", tged + "/5551985-chapter-205"},
		{"kagane", "series.json", tower}, {"kagane", "chapter.html", towerBk + "5"},
		{"lightnovelworld", "series.html", shadow}, {"lightnovelworld", "chapter.html", shadow + "/chapter-2301"},
		{"novelfull", "series.html", mechanic + ".html"}, {"novelfull", "chapter.html", mechanic + "/chapter-1462.html"},
		{"mangadex", "series.json", mdRecord}, {"mangadex", "feed.json", mdFeed},
		{"royalroad", "series.html", lamp}, {"royalroad", "chapter.html", lamp + "/chapter/800006"},
		{"webtoons", "series.html", saltList}, {"webtoons", "chapter.html", saltEp(6)},
	} {
		site, _ := reg.Lookup(tc.site)
		page := mustParse(t, tc.page)
		requireLinear(t, site, page, grownBody(t, tc.site, tc.file, small), grownBody(t, tc.site, tc.file, large),
			tc.site+"/"+tc.file+" with realistic noise")
	}
}

// The same with noise built to hurt: deep nesting, long attributes, many
// blocks that look like the ones extractors look for, in every Site's pages.
func TestExtractionIsLinearOnHostileBodies(t *testing.T) {
	skipUnderRace(t)
	if testing.Short() {
		t.Skip("builds large bodies")
	}
	// Sized so the race detector, which slows parsing tenfold, keeps this
	// under a minute; the 4x ratio is what the test needs, not the size.
	const small, large = 64 << 10, 256 << 10
	files := map[string][]string{
		"asura": {"series.html", "chapter-old.html"}, "demonic": {"series.html", "chapter.html"},
		"comix": {"series.html"}, "kagane": {"chapter.html"},
		"lightnovelworld": {"series.html", "chapter.html"}, "novelfull": {"series.html", "chapter.html"},
		"royalroad": {"series.html", "chapter.html"}, "webtoons": {"series.html", "chapter.html"},
	}
	for site, names := range files {
		s, _ := reg.Lookup(site)
		for _, file := range names {
			for kind, noise := range hostileNoise {
				body := readFixture(t, site, file)
				// Inside the chapter container too, where text extraction walks.
				requireLinear(t, s, nil, growHTML(body, noise, small), growHTML(body, noise, large),
					filepath.Join(site, file)+" with "+kind+" noise")
			}
		}
	}
	// A text container holding the noise itself.
	s, _ := reg.Lookup("lightnovelworld")
	wrap := func(n int) []byte {
		return []byte(`<html><body><div id="chapter-container">` + strings.Repeat(`<p>A line of text, <em>emphasised</em>,<br>and broken.</p><div class="adsbox"><p>ad</p></div>`, n) + `</div></body></html>`)
	}
	requireLinear(t, s, nil, wrap(2500), wrap(10000), "lightnovelworld text container")
}

// A Series with four times the chapters costs four times the work: no step
// re-scans the page or the list per chapter.
func TestExtractionIsLinearInChapters(t *testing.T) {
	skipUnderRace(t)
	if testing.Short() {
		t.Skip("builds large bodies")
	}
	for _, site := range []string{"asura", "demonic", "comix", "kagane", "lightnovelworld", "mangadex", "novelfull", "royalroad", "webtoons"} {
		s, _ := reg.Lookup(site)
		small, page := longList(t, site, 2000)
		large, _ := longList(t, site, 8000)
		chapters, err := s.Chapters(large, mustParse(t, page))
		require.NoError(t, err, site)
		require.Len(t, chapters, 8000, site)
		requireLinear(t, s, mustParse(t, page), small, large, site+" with 2000 and 8000 chapters")
	}
}

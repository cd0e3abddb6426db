package bookmark

import (
	"errors"
	"math"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// The PUT validation alone, at the speed a fuzzer needs (the same checks
// through the router and the database are FuzzPutBookmark in package
// server): any key and fields give either an InvalidError with a message
// (the API's 422) or a Series and Progress that keep the rules the shared
// Series row and the web UI rely on.
func FuzzValidate(f *testing.F) {
	f.Add("asura:solo-leveling", "asura", "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "Chapter 5", "https://asurascans.com/comics/solo-leveling-1a2b3c4d/chapter/5", 5.0, true)
	f.Add("demonic:x", "demonic", "https://demonicscans.org/manga/X", "Ch. 1", "javascript:alert(1)", -1.0, true)
	f.Add("novelfull:the-legendary-mechanic", "novelfull", "https://novelfull.com/the-legendary-mechanic.html", "", "", 0.0, false)
	f.Add("lightnovelworld:shadow-slave", "lightnovelworld", "https://www.lightnovelworld.com/novel/shadow-slave/chapter-3", "3", "//evil.example/x", math.Inf(1), true)
	f.Add("kagane:z", "kagane", "https://user:pw@kagane.to/series/z", "\x00", "https://kagane.to/series/z/reader/1", math.NaN(), true)
	l := &Service{Registry: latest.Default()}
	f.Fuzz(func(t *testing.T, key, site, seriesURL, chapter, chapterURL string, number float64, hasNumber bool) {
		req := PutRequest{Site: site, SeriesURL: seriesURL, Chapter: chapter, ChapterURL: chapterURL}
		if hasNumber {
			req.ChapterNumber = &number
		}
		ref, prog, err := l.validate(key, req)
		if err != nil {
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Msg == "" {
				t.Fatalf("validate(%q, %+v): not a named 422: %v", key, req, err)
			}
			return
		}
		again, rerr := latest.Default().Resolve(ref.SeriesURL)
		if ref.Key != key || ref.Site != site || rerr != nil || again.Key != key {
			t.Fatalf("validate(%q, %+v) accepted %+v (series URL resolves to %+v, %v)", key, req, ref, again, rerr)
		}
		if prog == nil {
			return
		}
		if prog.Chapter == "" || !utf8.ValidString(prog.Chapter) || strings.ContainsRune(prog.Chapter, 0) {
			t.Fatalf("validate accepted chapter %q", prog.Chapter)
		}
		if n := prog.ChapterNumber; n != nil && (math.IsNaN(*n) || math.IsInf(*n, 0) || *n < 0 || *n >= 1e7) {
			t.Fatalf("validate accepted chapter number %v", *n)
		}
		if prog.ChapterURL != "" {
			u, err := url.Parse(prog.ChapterURL)
			s, _ := latest.Default().Lookup(site)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || !s.HasHost(strings.ToLower(u.Hostname())) {
				t.Fatalf("validate accepted chapter URL %q for %s", prog.ChapterURL, site)
			}
		}
	})
}

// Package latesttest builds small fake Sites for the tests of the packages
// that ask the registry (the Poll, the Archive): a Site is a registry entry
// like any other, so a test adds one to its own Registry and nothing else
// sees it.
package latesttest

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/lectern-reader/lectern/backend/internal/latest"
)

// Site is a fake manga Site named name (letters only), on the host
// <name>.example, whose series pages are https://<name>.example/s/<slug>
// and read as SeriesBody writes them. Its pace is a millisecond.
func Site(name string) *latest.Site {
	host := name + ".example"
	var s *latest.Site
	doc := func(body []byte) (*goquery.Document, error) {
		d, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
		if err != nil || d.Find("ol.chapters").Length() == 0 {
			return nil, latest.Diagnose(body, latest.ProblemNotSeriesPage, "no ol.chapters")
		}
		return d, nil
	}
	base := func(page *url.URL) *url.URL {
		if page != nil && s.HasHost(page.Hostname()) {
			return page
		}
		return &url.URL{Scheme: "https", Host: host, Path: "/"}
	}
	chapters := func(body []byte, page *url.URL) ([]latest.Chapter, error) {
		d, err := doc(body)
		if err != nil {
			return nil, err
		}
		var out []latest.Chapter
		d.Find("ol.chapters a").Each(func(_ int, a *goquery.Selection) {
			ref, err := url.Parse(a.AttrOr("href", ""))
			if err != nil {
				return
			}
			link := base(page).ResolveReference(ref)
			if !s.HasHost(link.Hostname()) {
				return
			}
			label := strings.TrimSpace(a.Text())
			c := latest.Chapter{Label: label, URL: link.String()}
			if n, ok := latest.ParseChapterNumber(label); ok {
				c.Number = &n
			}
			out = append(out, c)
		})
		return out, nil
	}
	s = &latest.Site{
		Name: name, Kind: latest.Manga, Hosts: []string{host}, Pace: time.Millisecond,
		SeriesPath: func(u *url.URL) (string, string, bool) {
			p := strings.Split(strings.Trim(u.Path, "/"), "/")
			if len(p) < 2 || p[0] != "s" || p[1] == "" || strings.ContainsAny(p[1], ".%") {
				return "", "", false
			}
			return p[1], "/s/" + p[1], true
		},
		Title: func(body []byte, _ *url.URL) (string, error) {
			d, err := doc(body)
			if err != nil {
				return "", err
			}
			return strings.TrimSpace(d.Find("h1").First().Text()), nil
		},
		Latest: func(body []byte, page *url.URL) (latest.Chapter, error) {
			all, err := chapters(body, page)
			if err != nil {
				return latest.Chapter{}, err
			}
			if len(all) == 0 {
				return latest.Chapter{}, &latest.Problem{Code: latest.ProblemNoChapters, Detail: "the series page lists no chapter"}
			}
			return all[len(all)-1], nil
		},
		Cover: func(body []byte, page *url.URL) (string, error) {
			d, err := doc(body)
			if err != nil {
				return "", err
			}
			src, ok := d.Find("img.cover").Attr("src")
			if !ok {
				return "", nil
			}
			ref, err := url.Parse(src)
			if err != nil {
				return "", nil
			}
			return base(page).ResolveReference(ref).String(), nil
		},
		Chapters: chapters,
		Content: func([]byte, *url.URL) (latest.Content, error) {
			return latest.Content{}, &latest.Problem{Code: latest.ProblemNotChapterPage, Detail: "not read"}
		},
	}
	return s
}

// SeriesBody is a fake Site's series page listing chapters 1..n, with a
// Cover when cover is not "".
func SeriesBody(title, cover string, n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<html><head><title>%s</title></head><body><h1>%s</h1>", title, title)
	if cover != "" {
		fmt.Fprintf(&b, `<img class="cover" src="%s">`, cover)
	}
	b.WriteString(`<ol class="chapters">`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `<li><a href="ch-%d">Chapter %d</a></li>`, i, i)
	}
	b.WriteString("</ol></body></html>")
	return []byte(b.String())
}

package notify

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/lectern-reader/lectern/backend/internal/store"
)

// A feed built from hostile titles, labels and URLs (every one of them comes
// from a third-party page) is well-formed XML, and the HTML inside each
// entry, once a feed reader unwraps it, holds only the paragraph, link and
// image elements the writer made: a title cannot become markup.
func FuzzWriteAtom(f *testing.F) {
	f.Add("Solo Leveling", "Chapter 179", "https://asurascans.com/comics/solo-leveling-1a2b3c4d/chapter/179", "ann")
	f.Add(`</title><script>alert(1)</script>`, `<img src=x onerror=alert(1)>`, `javascript:alert(1)"><x`, "]]>&amp;\x00\x1b")
	f.Add("\uFFFE\uD7FF", "Ch. 1\u0085\u2028", "https://a/?q=<>&\"'", "\xff\xfe")
	f.Fuzz(func(t *testing.T, title, label, link, reader string) {
		var buf bytes.Buffer
		err := WriteAtom(&buf, FeedInput{
			BaseURL: "https://lectern.example.net", ReaderID: 7, ReaderName: reader,
			Since: time.Unix(1700000000, 0),
			Events: []store.ChapterEvent{{
				HistoryID: 1, SeriesKey: "asura:x", Site: "asura", Kind: "manga",
				SeriesURL: link, Title: title, Label: label, URL: link, FirstSeenAt: time.Unix(1700000100, 0),
				CoverAddress: strings.Repeat("ab", 32), CoverType: "image/png",
			}},
		})
		if err != nil {
			t.Fatalf("WriteAtom: %v", err)
		}
		dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
		var content []string
		inContent := false
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("not well-formed XML: %v\n%s", err, buf.Bytes())
			}
			switch v := tok.(type) {
			case xml.StartElement:
				inContent = v.Name.Local == "content"
			case xml.EndElement:
				inContent = false
			case xml.CharData:
				if inContent {
					content = append(content, string(v))
				}
			}
		}
		if len(content) == 0 {
			t.Fatalf("no content element:\n%s", buf.Bytes())
		}
		z := html.NewTokenizer(strings.NewReader(strings.Join(content, "")))
		for {
			tt := z.Next()
			if tt == html.ErrorToken {
				break
			}
			if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
				name, _ := z.TagName()
				switch string(name) {
				case "p", "a", "img":
				default:
					t.Fatalf("entry content grew a <%s> element from %q / %q", name, title, label)
				}
				for {
					k, _, more := z.TagAttr()
					switch string(k) {
					case "href", "src", "alt", "width", "":
					default:
						t.Fatalf("entry content grew an attribute %q from %q / %q / %q", k, title, label, link)
					}
					if !more {
						break
					}
				}
			}
		}
	})
}

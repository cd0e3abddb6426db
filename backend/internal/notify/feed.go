// Package notify tells Readers about new Latest Chapters on the Series they
// hold: a private Atom feed per Reader, and pushes to the Reader's ntfy
// topics and JSON webhooks, sent by River jobs on the same queue as the
// Poll so a slow receiver never holds a poll up. docs/notifications.md is
// the reference for the feed URL, the push bodies and the delivery rules.
package notify

import (
	"crypto/sha1" //nolint:gosec // RFC 4122 name-based UUIDs are defined on SHA-1; nothing here is a secret
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/cover"
	"github.com/lectern-reader/lectern/backend/internal/store"
)

// FeedLimit is how many entries a feed carries.
const FeedLimit = 100

// FeedContentType is the feed's media type (RFC 4287 §7).
const FeedContentType = "application/atom+xml; charset=utf-8"

const atomNS = "http://www.w3.org/2005/Atom"

type atomFeed struct {
	XMLName   xml.Name    `xml:"feed"`
	NS        string      `xml:"xmlns,attr"`
	ID        string      `xml:"id"`
	Title     atomText    `xml:"title"`
	Subtitle  *atomText   `xml:"subtitle,omitempty"`
	Updated   string      `xml:"updated"`
	Author    atomPerson  `xml:"author"`
	Generator string      `xml:"generator"`
	Links     []atomLink  `xml:"link"`
	Entries   []atomEntry `xml:"entry"`
}

type atomText struct {
	Type string `xml:"type,attr,omitempty"`
	Text string `xml:",chardata"`
}

type atomPerson struct {
	Name string `xml:"name"`
}

type atomLink struct {
	Rel   string `xml:"rel,attr,omitempty"`
	Type  string `xml:"type,attr,omitempty"`
	Href  string `xml:"href,attr"`
	Title string `xml:"title,attr,omitempty"`
}

type atomCategory struct {
	Term string `xml:"term,attr"`
}

type atomEntry struct {
	ID         string         `xml:"id"`
	Title      atomText       `xml:"title"`
	Updated    string         `xml:"updated"`
	Published  string         `xml:"published"`
	Links      []atomLink     `xml:"link"`
	Categories []atomCategory `xml:"category"`
	Summary    atomText       `xml:"summary"`
	Content    atomText       `xml:"content"`
}

// FeedInput is what a Reader's feed is made of.
type FeedInput struct {
	// BaseURL is PUBLIC_BASE_URL: entry links to Covers and the library are
	// absolute on it, and ids are minted under it.
	BaseURL    string
	ReaderID   int64
	ReaderName string
	Events     []store.ChapterEvent // newest first
	// Since is when the feed began (its secret's creation): the feed's
	// updated time while it has no entries, so an empty feed keeps one ETag.
	Since time.Time
}

// Updated is the feed's atom:updated: its newest entry's time, or Since.
func (in FeedInput) Updated() time.Time {
	t := in.Since
	for _, e := range in.Events {
		if e.FirstSeenAt.After(t) {
			t = e.FirstSeenAt
		}
	}
	return t.UTC().Truncate(time.Second)
}

// WriteAtom writes the feed as an RFC 4287 Atom document. Every title and
// label comes from a third-party Site: encoding/xml escapes them (and
// replaces characters XML cannot carry), and the HTML content is escaped as
// HTML first, so a hostile title is text in every feed reader.
func WriteAtom(w io.Writer, in FeedInput) error {
	base := strings.TrimRight(in.BaseURL, "/")
	f := atomFeed{
		NS:        atomNS,
		ID:        nameUUID(base + "/feed/reader/" + strconv.FormatInt(in.ReaderID, 10)),
		Title:     atomText{Type: "text", Text: "New chapters for " + in.ReaderName + " · Lectern"},
		Subtitle:  &atomText{Type: "text", Text: "Latest Chapter changes on the Series you hold"},
		Updated:   in.Updated().Format(time.RFC3339),
		Author:    atomPerson{Name: "Lectern"},
		Generator: "Lectern",
		Links:     []atomLink{{Rel: "alternate", Type: "text/html", Href: base + "/library/manga"}},
	}
	for _, e := range in.Events {
		f.Entries = append(f.Entries, entryOf(base, e))
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("write feed: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func entryOf(base string, e store.ChapterEvent) atomEntry {
	seen := e.FirstSeenAt.UTC().Format(time.RFC3339)
	title := e.Title
	if title == "" {
		title = e.SeriesKey
	}
	label := e.Label
	if e.Locked {
		label += " (early access)"
	}
	link := e.URL
	if link == "" {
		link = e.SeriesURL
	}
	ent := atomEntry{
		ID:         nameUUID(base + "/history/" + strconv.FormatInt(e.HistoryID, 10)),
		Title:      atomText{Type: "text", Text: title + ": " + label},
		Updated:    seen,
		Published:  seen,
		Links:      []atomLink{{Rel: "alternate", Type: "text/html", Href: link}, {Rel: "related", Type: "text/html", Href: e.SeriesURL, Title: title}},
		Categories: []atomCategory{{Term: e.Site}, {Term: e.Kind}},
		Summary:    atomText{Type: "text", Text: label + " of " + title + " on " + e.Site + ", first seen " + seen + "."},
	}
	var content strings.Builder
	coverURL := cover.URL(base, e.CoverAddress, e.CoverType)
	if coverURL != "" {
		ent.Links = append(ent.Links, atomLink{Rel: "enclosure", Type: e.CoverType, Href: coverURL, Title: "Cover"})
		fmt.Fprintf(&content, `<p><img src="%s" alt="" width="160"></p>`, html.EscapeString(coverURL))
	}
	fmt.Fprintf(&content, `<p><a href="%s">%s</a> of <a href="%s">%s</a></p>`,
		html.EscapeString(link), html.EscapeString(label), html.EscapeString(e.SeriesURL), html.EscapeString(title))
	ent.Content = atomText{Type: "html", Text: content.String()}
	return ent
}

// nameUUID is an RFC 4122 version 5 UUID URN of name in the URL namespace:
// stable for the same deployment and row, and revealing neither.
func nameUUID(name string) string {
	ns := [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	h := sha1.New() //nolint:gosec // see the import
	h.Write(ns[:])
	h.Write([]byte(name))
	sum := h.Sum(nil)
	sum[6] = (sum[6] & 0x0f) | 0x50
	sum[8] = (sum[8] & 0x3f) | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

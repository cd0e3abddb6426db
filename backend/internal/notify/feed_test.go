package notify_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/notify"
)

// The parsed shape of an Atom document, namespace-qualified: a feed that
// does not use the Atom namespace would parse as empty and fail.
type parsedFeed struct {
	XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string   `xml:"http://www.w3.org/2005/Atom id"`
	Title   string   `xml:"http://www.w3.org/2005/Atom title"`
	Updated string   `xml:"http://www.w3.org/2005/Atom updated"`
	Author  []struct {
		Name string `xml:"http://www.w3.org/2005/Atom name"`
	} `xml:"http://www.w3.org/2005/Atom author"`
	Entries []parsedEntry `xml:"http://www.w3.org/2005/Atom entry"`
}

type parsedEntry struct {
	ID      string `xml:"http://www.w3.org/2005/Atom id"`
	Title   string `xml:"http://www.w3.org/2005/Atom title"`
	Updated string `xml:"http://www.w3.org/2005/Atom updated"`
	Links   []struct {
		Rel  string `xml:"rel,attr"`
		Type string `xml:"type,attr"`
		Href string `xml:"href,attr"`
	} `xml:"http://www.w3.org/2005/Atom link"`
	Content struct {
		Type string `xml:"type,attr"`
		Text string `xml:",chardata"`
	} `xml:"http://www.w3.org/2005/Atom content"`
}

func (e parsedEntry) link(rel string) string {
	for _, l := range e.Links {
		if l.Rel == rel {
			return l.Href
		}
	}
	return ""
}

const hostileTitle = "<script>alert(1)</script> & \"Q\" ]]> \x01"

// feedOf renders a Reader's feed through the Service, as the route does.
func feedOf(t *testing.T, svc *notify.Service, secret string) ([]byte, parsedFeed) {
	t.Helper()
	in, err := svc.Feed(context.Background(), secret)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, notify.WriteAtom(&buf, in))
	var f parsedFeed
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &f), "well-formed XML:\n%s", buf.Bytes())
	return buf.Bytes(), f
}

func TestFeedIsValidAtomWithTheReadersChanges(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	alice, bob := w.reader("alice"), w.reader("bob")
	solo := w.hold(alice, "https://asurascans.com/comics/solo-leveling-1a2b3c4d", "Chapter 3")
	peak := w.hold(alice, "https://demonicscans.org/manga/Martial-Peak", "")
	other := w.hold(bob, "https://novelfull.com/reverend-insanity.html", "")

	svc := notify.NewService(w.st, base, nil)
	secret, err := svc.NewFeedSecret(ctx, alice.ID)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(secret, notify.FeedSecretPrefix))

	_, f := feedOf(t, svc, secret)
	require.Empty(t, f.Entries, "nothing changed yet")
	require.NotEmpty(t, f.Updated, "an empty feed still has atom:updated")

	// The Acquisitions are not changes; the polls after them are.
	w.poll(solo, hostileTitle, "Chapter 10", 10, false)
	w.poll(peak, "Martial Peak", "Chapter 3800", 3800, false)
	w.poll(other, "Reverend Insanity", "Chapter 2334", 2334, false)
	_, f = feedOf(t, svc, secret)
	require.Empty(t, f.Entries)

	w.poll(solo, hostileTitle, "Chapter 11", 11, false)
	w.poll(peak, "Martial Peak", "Chapter 3801", 3801, true)
	w.poll(other, "Reverend Insanity", "Chapter 2335", 2335, false)
	_, err = w.st.Pool.Exec(ctx, `UPDATE series SET cover_address = repeat('ab', 32), cover_type = 'image/webp' WHERE key = $1`, solo)
	require.NoError(t, err)

	raw, f := feedOf(t, svc, secret)
	require.True(t, bytes.HasPrefix(raw, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)))
	require.Regexp(t, `^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, f.ID)
	require.Contains(t, f.Title, "alice")
	require.Len(t, f.Author, 1)
	require.Equal(t, "Lectern", f.Author[0].Name)
	updated, err := time.Parse(time.RFC3339, f.Updated)
	require.NoError(t, err)

	require.Len(t, f.Entries, 2, "Bob's Series is not in Alice's feed")
	ids := map[string]bool{}
	for _, e := range f.Entries {
		require.Regexp(t, `^urn:uuid:`, e.ID)
		require.False(t, ids[e.ID], "entry ids are unique")
		ids[e.ID] = true
		require.NotEmpty(t, e.Title)
		at, err := time.Parse(time.RFC3339, e.Updated)
		require.NoError(t, err)
		require.False(t, at.After(updated), "the feed's updated is its newest entry's")
		require.NotEmpty(t, e.link("alternate"))
	}
	peakEntry, soloEntry := f.Entries[0], f.Entries[1]
	require.Equal(t, "Martial Peak: Chapter 3801 (early access)", peakEntry.Title, "newest first")
	require.Equal(t, "https://demonicscans.org/title/Martial-Peak/chapter/3801/1", peakEntry.link("alternate"))
	require.Empty(t, peakEntry.link("enclosure"), "no Cover, no enclosure")

	// The hostile title is text: escaped in the bytes, intact once parsed
	// (the control character, which XML cannot carry, replaced).
	require.NotContains(t, string(raw), "<script>")
	require.Equal(t, strings.Replace(hostileTitle, "\x01", "\uFFFD", 1)+": Chapter 11", soloEntry.Title)
	require.Equal(t, "https://asurascans.com/comics/solo-leveling/chapter/11", soloEntry.link("alternate"))
	require.Equal(t, base+"/covers/"+strings.Repeat("ab", 32)+".webp", soloEntry.link("enclosure"), "the Cover is an absolute URL on PUBLIC_BASE_URL")
	require.Equal(t, "html", soloEntry.Content.Type)
	require.Contains(t, soloEntry.Content.Text, "&lt;script&gt;", "inside the HTML content the title is escaped HTML")
	require.NotContains(t, soloEntry.Content.Text, "<script>")

	// Regenerating revokes the old URL; revoking ends the new one.
	fresh, err := svc.NewFeedSecret(ctx, alice.ID)
	require.NoError(t, err)
	_, err = svc.Feed(ctx, secret)
	require.ErrorIs(t, err, notify.ErrNoFeed)
	_, f2 := feedOf(t, svc, fresh)
	require.Equal(t, f.ID, f2.ID, "the feed keeps its id across secrets")
	require.NoError(t, svc.RevokeFeed(ctx, alice.ID))
	_, err = svc.Feed(ctx, fresh)
	require.ErrorIs(t, err, notify.ErrNoFeed)
	_, err = svc.Feed(ctx, "lecf_not-a-secret")
	require.ErrorIs(t, err, notify.ErrNoFeed)

	// Only the hash is stored.
	require.Zero(t, w.count(`SELECT count(*) FROM feed_secrets WHERE position($1::bytea in secret_hash) > 0`, []byte(fresh)))
}

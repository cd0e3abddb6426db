package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const familyFixtures = "../../../testdata/families"

// `lectern probe --family` answers every family fixture: the key FAMILY:slug
// from the usual series paths, the ajax chapter list from a second --file,
// a root chapter URL accepted with key "", the whole text, and exit status 3
// for a challenge or the theme's 404 page.
func TestProbeFamilyFixtures(t *testing.T) {
	t.Parallel()
	f := func(family, file string) string { return filepath.Join(familyFixtures, family, file) }
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		key     string
		latest  string
		cover   string
		problem string
		pages   int
		text    string
	}{
		{name: "madara series", args: []string{"--family", "madara", "--url", "https://toonhaven.test/manga/the-lantern-keeper/", "--file", f("madara", "series.html")},
			key: "madara:the-lantern-keeper", latest: "Chapter 43", cover: "https://toonhaven.test/wp-content/uploads/WP-manga/data/lantern-keeper.jpg"},
		{name: "madara ajax list", args: []string{"--family", "madara", "--url", "https://toonhaven.test/manga/iron-orchard/",
			"--file", f("madara", "series-ajax.html"), "--file", f("madara", "chapters-ajax.html")},
			key: "madara:iron-orchard", latest: "Chapter 101", cover: "https://toonhaven.test/wp-content/uploads/WP-manga/data/iron-orchard.webp"},
		{name: "madara ajax page alone", args: []string{"--family", "madara", "--url", "https://toonhaven.test/manga/iron-orchard/", "--file", f("madara", "series-ajax.html")},
			key: "madara:iron-orchard", problem: "no_chapters", cover: "https://toonhaven.test/wp-content/uploads/WP-manga/data/iron-orchard.webp"},
		{name: "madara no cover", args: []string{"--family", "madara", "--url", "https://toonhaven.test/manga/quiet-harbor/", "--file", f("madara", "series-nocover.html")},
			key: "madara:quiet-harbor", latest: "Chapter 1"},
		{name: "madara 404", args: []string{"--family", "madara", "--url", "https://toonhaven.test/manga/gone/", "--file", f("madara", "error404.html")},
			code: 3, key: "madara:gone", problem: "not_series_page"},
		{name: "madara challenge", args: []string{"--family", "madara", "--url", "https://toonhaven.test/manga/gone/", "--file", f("madara", "challenge.html")},
			code: 3, key: "madara:gone", problem: "challenge"},
		{name: "madara chapter", args: []string{"--family", "madara", "--page", "chapter", "--url", "https://toonhaven.test/manga/the-lantern-keeper/chapter-41/",
			"--file", f("madara", "chapter.html")}, key: "madara:the-lantern-keeper", pages: 3},
		{name: "madara novel chapter", args: []string{"--family", "madara", "--kind", "novel", "--page", "chapter",
			"--url", "https://lanternnovels.test/novel/moonlit-ledger/chapter-7/", "--file", f("madara", "chapter-novel.html")},
			key: "madara:moonlit-ledger", text: "Chapter 7: The Ledger Opens\n\nThe clerk turned the first page.\n\nInk had dried in the shape of a name.\n\nTranslator's note: the name is a pun on \"moon\" in the original."},
		{name: "mangathemesia series", args: []string{"--family", "mangathemesia", "--url", "https://inkstone.test/manga/crimson-tidewalker/", "--file", f("mangathemesia", "series.html")},
			key: "mangathemesia:crimson-tidewalker", latest: "Chapter 88", cover: "https://inkstone.test/wp-content/uploads/2026/03/crimson-tidewalker.jpg"},
		{name: "mangathemesia no cover", args: []string{"--family", "mangathemesia", "--url", "https://inkstone.test/manga/paper-lanterns/", "--file", f("mangathemesia", "series-nocover.html")},
			key: "mangathemesia:paper-lanterns", latest: "Chapter 1"},
		{name: "mangathemesia 404", args: []string{"--family", "mangathemesia", "--url", "https://inkstone.test/manga/gone/", "--file", f("mangathemesia", "error404.html")},
			code: 3, key: "mangathemesia:gone", problem: "not_series_page"},
		{name: "mangathemesia challenge", args: []string{"--family", "mangathemesia", "--url", "https://inkstone.test/manga/gone/", "--file", f("mangathemesia", "challenge.html")},
			code: 3, key: "mangathemesia:gone", problem: "challenge"},
		{name: "mangathemesia root chapter", args: []string{"--family", "mangathemesia", "--page", "chapter", "--url", "https://inkstone.test/crimson-tidewalker-chapter-86/",
			"--file", f("mangathemesia", "chapter.html")}, key: "", pages: 2},
		{name: "lightnovelwp series", args: []string{"--family", "lightnovelwp", "--url", "https://lanternreads.test/series/the-salt-archivist/", "--file", f("lightnovelwp", "series.html")},
			key: "lightnovelwp:the-salt-archivist", latest: "Chapter 214 - Brine and Bone", cover: "https://lanternreads.test/wp-content/uploads/2026/05/salt-archivist.jpg"},
		{name: "lightnovelwp no cover", args: []string{"--family", "lightnovelwp", "--url", "https://lanternreads.test/series/glass-orchard/", "--file", f("lightnovelwp", "series-nocover.html")},
			key: "lightnovelwp:glass-orchard", latest: "Chapter 1"},
		{name: "lightnovelwp 404", args: []string{"--family", "lightnovelwp", "--url", "https://lanternreads.test/series/gone/", "--file", f("lightnovelwp", "error404.html")},
			code: 3, key: "lightnovelwp:gone", problem: "not_series_page"},
		{name: "lightnovelwp challenge", args: []string{"--family", "lightnovelwp", "--url", "https://lanternreads.test/series/gone/", "--file", f("lightnovelwp", "challenge.html")},
			code: 3, key: "lightnovelwp:gone", problem: "challenge"},
		{name: "lightnovelwp root chapter", args: []string{"--family", "lightnovelwp", "--page", "chapter", "--url", "https://lanternreads.test/the-salt-archivist-chapter-212/",
			"--file", f("lightnovelwp", "chapter.html")}, key: "",
			text: "The archivist counted the jars twice.\n\nSalt does not forget, she said, and neither do I.\n\nTL note: \"jars\" here is the same word as \"memories\"."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, r, errOut := probeJSON(t, "", tc.args...)
			require.Equal(t, tc.code, code, errOut)
			require.Equal(t, tc.key, r["key"])
			require.Equal(t, tc.problem, r["problem"], "%v", r["detail"])
			if tc.latest != "" {
				require.Equal(t, tc.latest, r["latest_chapter"].(map[string]any)["label"])
			}
			if r["page"] == "series" && tc.code == 0 {
				require.Equal(t, tc.cover, r["cover"])
			}
			require.Len(t, r["pages"], tc.pages)
			require.Equal(t, tc.text, r["text"])
		})
	}

	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--family", "madara", "--file", f("madara", "series.html")}, "--family needs --url"},
		{[]string{"--family", "joomla", "--url", "https://a.test/manga/x/", "--file", f("madara", "series.html")}, "unknown family"},
		{[]string{"--family", "madara", "--option", "chapters=graphql", "--url", "https://a.test/manga/x/", "--file", f("madara", "series.html")}, "not one of"},
		{[]string{"--family", "madara", "--url", "https://a.test/manga/iron-orchard/", "--file", f("madara", "series-ajax.html"), "--file", f("madara", "nothing.html")}, "read body"},
	} {
		code, _, errOut := runCmd(t, nil, "", append([]string{"probe"}, tc.args...)...)
		require.NotZero(t, code, "%v", tc.args)
		require.Contains(t, errOut, tc.says, "%v", tc.args)
	}
}

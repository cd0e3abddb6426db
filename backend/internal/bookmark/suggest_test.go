package bookmark

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

func TestNormalTitle(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Omniscient Reader's Viewpoint":  "omniscient readers viewpoint",
		"Omniscient Reader’s Viewpoint":  "omniscient readers viewpoint",
		"  OMNISCIENT READERS VIEWPOINT": "omniscient readers viewpoint",
		"Solo Max-Level Newbie":          "solo max level newbie",
		"The Legendary Mechanic":         "legendary mechanic",
		"Pokémon: Adventures!":           "pokemon adventures",
		"灯籠の弟子":                          "灯籠の弟子",
		"":                               "",
	} {
		require.Equal(t, want, NormalTitle(in), in)
	}
}

// labelled is one Bookmark of the suggestion-quality set: its facts and
// the story it is (the label).
type labelled struct {
	facts store.StoryFacts
	story string
}

// fixtureSeries reads a series fixture's title (and alternative titles)
// through the real registry, as the poll stores them.
func fixtureSeries(t *testing.T, site *latest.Site, dir, file, slug, story string) labelled {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", dir, file))
	require.NoError(t, err)
	title, err := site.Title(body, nil)
	require.NoError(t, err)
	require.NotEmpty(t, title, "%s/%s", dir, file)
	var alts []string
	if site.AltTitles != nil {
		alts = site.AltTitles(body, nil)
	}
	return labelled{facts: store.StoryFacts{Key: site.Name + ":" + slug, Site: site.Name, Kind: string(site.Kind), Title: title, AltTitles: alts}, story: story}
}

// The figure for the closing note: suggestions over a labelled set of
// Bookmarks. Sixteen Series are read by the real registry from the Site
// and family fixtures (titles, and MangaDex's alternative titles); six
// more are the same stories held on a second Site, titled as that Site
// spells them (written here: no fixture holds one story on two Sites).
// Among the fixtures are near misses that are not one story: "The Lantern
// Keeper" (madara) against "The Lantern Keeper's Apprentice" (MangaDex),
// "The Salt Archivist" against "The Salt Cartographer", "Glass Orchard"
// against "Iron Orchard".
func TestSuggestionQualityOnTheFixtures(t *testing.T) {
	t.Parallel()
	reg := latest.Default()
	site := func(name string) *latest.Site {
		s, ok := reg.Lookup(name)
		require.True(t, ok, name)
		return s
	}
	family := func(name, fam string, kind latest.Kind) *latest.Site {
		s, err := latest.NewFamilySite(name, fam, []string{name + ".test"}, kind, nil)
		require.NoError(t, err)
		return s
	}
	madara := family("toonhaven", "madara", latest.Manga)
	themesia := family("tidescans", "mangathemesia", latest.Manga)
	lnwp := family("lanternreads", "lightnovelwp", latest.Novel)

	set := []labelled{
		fixtureSeries(t, site("asura"), "sites/asura", "series.html", "omniscient-readers-viewpoint", "orv"),
		fixtureSeries(t, site("comix"), "sites/comix", "series.html", "r8k2m", "tged"),
		fixtureSeries(t, site("demonic"), "sites/demonic", "series.html", "Solo-Max-Level-Newbie", "smln"),
		fixtureSeries(t, site("kagane"), "sites/kagane", "series.json", "0199a4c2", "tower"),
		fixtureSeries(t, site("mangadex"), "sites/mangadex", "series.json", "8f3c6b2e", "lantern-apprentice"),
		fixtureSeries(t, site("webtoons"), "sites/webtoons", "series.html", "7710", "salt-cartographer"),
		fixtureSeries(t, site("royalroad"), "sites/royalroad", "series.html", "48112", "lamplighter"),
		fixtureSeries(t, site("lightnovelworld"), "sites/lightnovelworld", "series.html", "shadow-slave", "shadow-slave"),
		fixtureSeries(t, site("novelfull"), "sites/novelfull", "series.html", "the-legendary-mechanic", "mechanic"),
		fixtureSeries(t, madara, "families/madara", "series-ajax.html", "iron-orchard", "iron-orchard"),
		fixtureSeries(t, madara, "families/madara", "series-nocover.html", "quiet-harbor", "quiet-harbor"),
		fixtureSeries(t, madara, "families/madara", "series.html", "the-lantern-keeper", "lantern-keeper"),
		fixtureSeries(t, themesia, "families/mangathemesia", "series-nocover.html", "paper-lanterns", "paper-lanterns"),
		fixtureSeries(t, themesia, "families/mangathemesia", "series.html", "crimson-tidewalker", "crimson"),
		fixtureSeries(t, lnwp, "families/lightnovelwp", "series-nocover.html", "glass-orchard", "glass-orchard"),
		fixtureSeries(t, lnwp, "families/lightnovelwp", "series.html", "the-salt-archivist", "salt-archivist"),
	}
	second := func(site, kind, slug, title, story string) labelled {
		return labelled{facts: store.StoryFacts{Key: site + ":" + slug, Site: site, Kind: kind, Title: title}, story: story}
	}
	set = append(set,
		second("demonic", "manga", "Omniscient-Readers-Viewpoint", "Omniscient Reader’s Viewpoint", "orv"),
		second("asura", "manga", "the-greatest-estate-developer", "The Greatest Estate Developer", "tged"),
		second("asura", "manga", "solo-max-level-newbie", "Solo Max Level Newbie", "smln"),
		second("toonhaven", "manga", "tourou-no-deshi", "Tourou no Deshi", "lantern-apprentice"),
		second("novelfull", "novel", "shadow-slave", "Shadow Slave", "shadow-slave"),
		second("lightnovelworld", "novel", "legendary-mechanic", "Legendary Mechanic", "mechanic"),
	)
	facts := make([]store.StoryFacts, len(set))
	story := map[string]string{}
	for i, l := range set {
		facts[i] = l.facts
		story[l.facts.Key] = l.story
	}
	truePairs := 0
	for i := range set {
		for j := i + 1; j < len(set); j++ {
			if set[i].story == set[j].story {
				truePairs++
			}
		}
	}

	measure := func(facts []store.StoryFacts) (found, same, false_ int) {
		for _, s := range SuggestFrom(sortedByKey(facts), nil) {
			found++
			if story[s.Keys[0]] == story[s.Keys[1]] {
				same++
			} else {
				false_++
				t.Logf("false pair: %v %v %v", s.Keys, s.Titles, s.Evidence)
			}
		}
		return
	}
	found, same, falsePairs := measure(facts)
	noAlt := make([]store.StoryFacts, len(facts))
	for i, f := range facts {
		f.AltTitles = nil
		noAlt[i] = f
	}
	f0, s0, x0 := measure(noAlt)
	t.Logf("suggestion quality: %d Bookmarks, %d same-story pairs; suggested %d, same story %d, false %d (without alternative titles: %d/%d/%d)",
		len(set), truePairs, found, same, falsePairs, f0, s0, x0)
	require.Equal(t, 6, truePairs)
	require.Zero(t, falsePairs)
	require.Equal(t, truePairs, same, "every same-story pair is suggested")
	require.Less(t, s0, same, "the alternative titles find a pair the titles alone miss")

	// A dismissed pair is not suggested again; a pair already linked is
	// not suggested; pairs across Libraries never are.
	dismissed := map[string]bool{store.PairKey("asura:omniscient-readers-viewpoint", "demonic:Omniscient-Readers-Viewpoint"): true}
	for _, s := range SuggestFrom(sortedByKey(facts), dismissed) {
		require.NotEqual(t, []string{"asura:omniscient-readers-viewpoint", "demonic:Omniscient-Readers-Viewpoint"}, s.Keys)
	}
}

// A title many Series share is no evidence, and costs nothing.
func TestAGenericTitleSuggestsNothing(t *testing.T) {
	t.Parallel()
	var facts []store.StoryFacts
	for i := range 2000 {
		facts = append(facts, store.StoryFacts{Key: fmt.Sprintf("asura:s%05d", i), Site: "asura", Kind: "manga", Title: "Untitled"})
	}
	require.Empty(t, SuggestFrom(facts, nil))
	require.Len(t, SuggestFrom(facts[:2], nil), 1, "two alike are a pair")
}

func sortedByKey(in []store.StoryFacts) []store.StoryFacts {
	out := append([]store.StoryFacts(nil), in...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Key < out[j-1].Key; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// A Work's Progress and Latest Chapter (ADR 0026).
func TestWorkView(t *testing.T) {
	t.Parallel()
	at := func(m int) *time.Time { v := time.Date(2026, 12, 1, 0, m, 0, 0, time.UTC); return &v }
	members := []store.Bookmark{
		{Site: "asura", Chapter: "Chapter 120", ChapterNumber: num(120), ProgressAt: at(1), LatestLabel: "Chapter 121", LatestNumber: num(121), LatestAt: at(5)},
		{Site: "demonic", Chapter: "Chapter 119", ChapterNumber: num(119), ProgressAt: at(9), LatestLabel: "Chapter 121", LatestNumber: num(121), LatestAt: at(3)},
		{Site: "comix", Chapter: "Extra", ProgressAt: at(20), LatestLabel: "Side story", LatestAt: at(30)},
	}
	v := viewOf(members)
	require.Equal(t, "asura", v.progress.Site, "the furthest number, not the most recent record")
	require.Equal(t, "demonic", v.latest.Site, "121 on both: the Site that had it first")

	v = viewOf([]store.Bookmark{
		{Site: "royalroad", Chapter: "Prologue", ProgressAt: at(1), LatestLabel: "Interlude", LatestAt: at(1)},
		{Site: "novelfull", Chapter: "Epilogue", ProgressAt: at(2), LatestLabel: "Afterword", LatestAt: at(2)},
	})
	require.Equal(t, "novelfull", v.progress.Site, "no numbers: the most recent record")
	require.Equal(t, "Afterword", v.latest.LatestLabel)
	require.Nil(t, viewOf(nil).progress)

	w := withWork(Bookmark{}, store.Bookmark{WorkID: 7, LatestNumber: num(120)}, viewOf(members))
	require.Equal(t, "7", w.Work)
	require.False(t, w.Unread, "120 read on asura")
	require.Equal(t, fmt.Sprint(121.0), fmt.Sprint(*w.WorkLatestChapterNumber))
}

// BenchmarkRender: rendering 1,000 Bookmarks, all in 300 Works, against
// the same 1,000 without Works (the part of GET /api/bookmarks that Works
// add to; BenchmarkListWithWorks in package api measures the request).
func BenchmarkRender(b *testing.B) {
	rows := make([]store.Bookmark, 1000)
	at := time.Now()
	for i := range rows {
		rows[i] = store.Bookmark{SeriesKey: fmt.Sprintf("asura:s-%d", i), Site: "asura", Kind: "manga", Title: "A title",
			Chapter: "Chapter 99", ChapterNumber: num(float64(98 + i%5)), ProgressAt: &at,
			LatestLabel: "Chapter 100", LatestNumber: num(float64(100 + i%7)), LatestURL: "https://asurascans.com/x", LatestAt: &at,
			CreatedAt: at, UpdatedAt: at}
	}
	linked := make([]store.Bookmark, len(rows))
	copy(linked, rows)
	for i := range linked {
		w := i / 3
		if i >= 600 {
			w = 200 + (i-600)/4
		}
		linked[i].WorkID = int64(w + 1)
	}
	l := &Service{BaseURL: "https://lectern.example.net"}
	b.Run("without_works", func(b *testing.B) {
		for b.Loop() {
			_ = l.Render(rows)
		}
	})
	b.Run("with_works", func(b *testing.B) {
		for b.Loop() {
			_ = l.Render(linked)
		}
	})
}

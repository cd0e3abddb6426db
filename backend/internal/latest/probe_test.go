package latest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProbeSeries(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("comix")
	body := readFixture(t, "comix", "series.html")
	r := Probe(site, PageSeries, tged, body)
	require.True(t, r.Answered)
	require.Equal(t, "comix:r8k2m", r.Key)
	require.Equal(t, "The Greatest Estate Developer", r.Title)
	require.Equal(t, comixChapterRows[5], row(*r.LatestChapter))
	require.Equal(t, "https://static.comix.to/r8k2m/poster-medium.webp", r.Cover)
	require.Equal(t, comixChapterRows, rows(r.Chapters))
	require.Empty(t, r.Problem)
	require.Equal(t, len(body), r.BodyBytes)

	var wire map[string]any
	raw, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &wire))
	for _, k := range []string{"site", "key", "page", "title", "latest_chapter", "cover", "chapters", "pages", "text_chars", "problem"} {
		require.Contains(t, wire, k)
	}
	latest := wire["latest_chapter"].(map[string]any)
	require.Equal(t, map[string]any{"label": "Chapter 206", "number": 206.0, "url": tged + "/5552210-chapter-206", "locked": false}, latest)
	require.Equal(t, []any{}, wire["pages"], "an empty list, not null")
}

func TestProbeChapterAndProblems(t *testing.T) {
	t.Parallel()
	lnw, _ := reg.Lookup("lightnovelworld")
	r := Probe(lnw, PageChapter, shadow+"/chapter-2301", readFixture(t, "lightnovelworld", "chapter.html"))
	require.True(t, r.Answered)
	require.Equal(t, "lightnovelworld:shadow-slave", r.Key)
	require.Equal(t, 166, r.TextChars, "runes, not bytes: the quotes are multi-byte")
	require.Nil(t, r.LatestChapter)

	r = Probe(lnw, PageSeries, "", readFixture(t, "lightnovelworld", "challenge.html"))
	require.False(t, r.Answered)
	require.Equal(t, ProblemChallenge, r.Problem)
	require.Nil(t, r.LatestChapter)
	require.Empty(t, r.Cover)
	require.Empty(t, r.Chapters)

	// A Series page without its latest chapter still answered: exit 0 with the problem named.
	nf, _ := reg.Lookup("novelfull")
	r = Probe(nf, PageSeries, mechanic+".html", readFixture(t, "novelfull", "series-nolatest.html"))
	require.True(t, r.Answered)
	require.Equal(t, ProblemNoChapters, r.Problem)
	require.NotEmpty(t, r.Cover)
	require.Len(t, r.Chapters, 6)

	// A locked chapter is a chapter page that answered "locked".
	asura, _ := reg.Lookup("asura")
	r = Probe(asura, PageChapter, orv+"/chapter/252", readFixture(t, "asura", "chapter-locked.html"))
	require.True(t, r.Answered)
	require.Equal(t, ProblemLocked, r.Problem)
	require.Empty(t, r.Pages)

	// A chapter page probed as a series page is not one.
	r = Probe(asura, PageSeries, orv, readFixture(t, "asura", "chapter.html"))
	require.False(t, r.Answered)
	require.Equal(t, ProblemNotSeriesPage, r.Problem)
}

func TestProblemHelpers(t *testing.T) {
	t.Parallel()
	asura, _ := reg.Lookup("asura")
	_, err := asura.Latest(readFixture(t, "asura", "challenge.html"), nil)
	require.True(t, IsBackoffProblem(err))
	var p *Problem
	require.ErrorAs(t, err, &p)
	require.True(t, p.NotPage())
	require.Contains(t, err.Error(), "challenge: ")

	nf, _ := reg.Lookup("novelfull")
	_, err = nf.Cover(readFixture(t, "novelfull", "access-denied.html"), nil)
	require.True(t, IsBackoffProblem(err))

	_, err = asura.Content(readFixture(t, "asura", "chapter-locked.html"), nil)
	require.False(t, IsBackoffProblem(err), "a locked chapter is not the Site refusing us")
	require.Equal(t, ProblemLocked, ProblemCode(err))
	require.False(t, (&Problem{Code: ProblemLocked}).NotPage())

	_, err = asura.Latest([]byte(" \n\t "), nil)
	require.Equal(t, ProblemEmptyBody, ProblemCode(err))
	require.Empty(t, ProblemCode(nil))
}

package latest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fixtureFetcher is the PageFetcher seam: it answers URLs with fixture
// bodies and records every URL asked for, which is what would reach the
// Site.
type fixtureFetcher struct {
	mu     sync.Mutex
	pages  map[string][]byte
	asked  []string
	failed error
}

var errNoSuchPage = errors.New("404 from the fixture Site")

func (f *fixtureFetcher) FetchPage(ctx context.Context, rawURL string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, rawURL)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.failed != nil {
		return nil, f.failed
	}
	body, ok := f.pages[rawURL]
	if !ok {
		return nil, fmt.Errorf("%s: %w", rawURL, errNoSuchPage)
	}
	return body, nil
}

func (f *fixtureFetcher) PostForm(ctx context.Context, rawURL string, form url.Values) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, "POST "+rawURL+" "+form.Encode())
	if f.failed != nil {
		return nil, f.failed
	}
	body, ok := f.pages["POST "+rawURL]
	if !ok {
		return nil, fmt.Errorf("POST %s: %w", rawURL, errNoSuchPage)
	}
	return body, nil
}

func TestAllChaptersLightnovelworldWalksListPages(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("lightnovelworld")
	f := &fixtureFetcher{pages: map[string][]byte{
		"https://lightnovelworld.com/novel/shadow-slave/chapters/page-1": readFixture(t, "lightnovelworld", "chapters-page-1.html"),
		"https://lightnovelworld.com/novel/shadow-slave/chapters/page-2": readFixture(t, "lightnovelworld", "chapters-page-2.html"),
	}}
	chapters, err := site.AllChapters(context.Background(), f, shadow, readFixture(t, "lightnovelworld", "series.html"))
	require.NoError(t, err)
	var want []string
	for i := 1; i <= 3; i++ {
		want = append(want, fmt.Sprintf("Chapter %d: Part %d|%d|https://lightnovelworld.com/novel/shadow-slave/chapter-%d|false", i, i, i, i))
	}
	// The last page ends at the series page's Latest Chapter.
	want = append(want,
		"Chapter 2299 - Forgotten Shore|2299|https://lightnovelworld.com/novel/shadow-slave/chapter-2299|false",
		"Chapter 2300: Dawn of Ash|2300|https://lightnovelworld.com/novel/shadow-slave/chapter-2300|false",
		"Chapter 2301: The Long Night|2301|https://lightnovelworld.com/novel/shadow-slave/chapter-2301|false")
	require.Equal(t, want, rows(chapters), "both pages, oldest first, without the sidebar's other novel")
	require.Equal(t, []string{
		"https://lightnovelworld.com/novel/shadow-slave/chapters/page-1",
		"https://lightnovelworld.com/novel/shadow-slave/chapters/page-2",
	}, f.asked, "the walk stops at the page that links no next page")
}

func TestAllChaptersLightnovelworldCoListForm(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("lightnovelworld")
	f := &fixtureFetcher{pages: map[string][]byte{
		"https://lightnovelworld.co/novel/shadow-slave/chapters?page=1": readFixture(t, "lightnovelworld", "chapters-page-1.html"),
	}}
	chapters, err := site.AllChapters(context.Background(), f, "https://lightnovelworld.co/novel/shadow-slave", readFixture(t, "lightnovelworld", "series.html"))
	require.NoError(t, err)
	require.Len(t, chapters, 3)
	require.Equal(t, []string{"https://lightnovelworld.co/novel/shadow-slave/chapters?page=1"}, f.asked)
}

func TestAllChaptersLightnovelworldProblems(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("lightnovelworld")
	series := readFixture(t, "lightnovelworld", "series.html")

	f := &fixtureFetcher{pages: map[string][]byte{}}
	_, err := site.AllChapters(context.Background(), f, shadow, series)
	require.ErrorIs(t, err, errNoSuchPage, "a failed fetch is the caller's error, wrapped")
	require.Contains(t, err.Error(), "chapters/page-1")

	f = &fixtureFetcher{pages: map[string][]byte{
		"https://lightnovelworld.com/novel/shadow-slave/chapters/page-1": readFixture(t, "lightnovelworld", "challenge.html"),
	}}
	_, err = site.AllChapters(context.Background(), f, shadow, series)
	require.True(t, IsBackoffProblem(err), "a challenge on a list page backs the Site off: %v", err)

	f = &fixtureFetcher{}
	_, err = site.AllChapters(context.Background(), f, shadow, readFixture(t, "lightnovelworld", "challenge.html"))
	require.Equal(t, ProblemChallenge, ProblemCode(err))
	require.Empty(t, f.asked, "no list page is fetched for a series body that is not one")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = site.AllChapters(ctx, &fixtureFetcher{}, shadow, series)
	require.ErrorIs(t, err, context.Canceled)
}

func TestAllChaptersNovelfullAsksTheOptionEndpoint(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("novelfull")
	f := &fixtureFetcher{pages: map[string][]byte{
		"https://novelfull.com/ajax-chapter-option?novelId=1207": readFixture(t, "novelfull", "ajax-chapter-option.html"),
	}}
	chapters, err := site.AllChapters(context.Background(), f, mechanic+".html", readFixture(t, "novelfull", "series.html"))
	require.NoError(t, err)
	want := append(novelfullRows(1, 5),
		"Chapter 1462 - Farewell|1462|"+mechanic+"/chapter-1462.html|false",
		"Chapter 1463 - The End|1463|"+mechanic+"/chapter-1463-end.html|false")
	require.Equal(t, want, rows(chapters))
	require.Equal(t, []string{"https://novelfull.com/ajax-chapter-option?novelId=1207"}, f.asked)
}

func TestAllChaptersNovelfullFallsBackToPages(t *testing.T) {
	t.Parallel()
	site, _ := reg.Lookup("novelfull")
	// The list as two pages: the fixture's pagination ends at page 2.
	first := bytes.ReplaceAll(readFixture(t, "novelfull", "series.html"),
		[]byte(`?page=30&amp;per-page=50" data-page="29"`), []byte(`?page=2&amp;per-page=50" data-page="1"`))
	f := &fixtureFetcher{pages: map[string][]byte{
		"https://novelfull.com/the-legendary-mechanic.html?page=1&per-page=50": first,
		"https://novelfull.com/the-legendary-mechanic.html?page=2&per-page=50": readFixture(t, "novelfull", "series-page-2.html"),
		// The endpoint answers, but with a challenge.
		"https://novelfull.com/ajax-chapter-option?novelId=1207": readFixture(t, "novelfull", "challenge.html"),
	}}
	chapters, err := site.AllChapters(context.Background(), f, mechanic+".html", first)
	require.NoError(t, err)
	require.Equal(t, novelfullRows(1, 9), rows(chapters))
	require.Equal(t, []string{
		"https://novelfull.com/ajax-chapter-option?novelId=1207",
		"https://novelfull.com/ajax/chapter-option?novelId=1207",
		"https://novelfull.com/the-legendary-mechanic.html?page=1&per-page=50",
		"https://novelfull.com/the-legendary-mechanic.html?page=2&per-page=50",
	}, f.asked)

	// Nothing answers: the error names both ways tried.
	f = &fixtureFetcher{failed: errNoSuchPage}
	_, err = site.AllChapters(context.Background(), f, mechanic+".html", first)
	require.ErrorIs(t, err, errNoSuchPage)
	require.Contains(t, err.Error(), "chapter options")
	require.Contains(t, err.Error(), "page=1")
}

func TestAllChaptersWithoutOverrideReadsTheBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ site, file, url string }{
		{"asura", "series.html", orv},
		{"demonic", "series.html", smln},
		{"comix", "series.html", tged},
		{"kagane", "series.json", tower},
	} {
		site, _ := reg.Lookup(tc.site)
		require.Nil(t, site.ChapterList, tc.site)
		body := readFixture(t, tc.site, tc.file)
		f := &fixtureFetcher{}
		all, err := site.AllChapters(context.Background(), f, tc.url, body)
		require.NoError(t, err)
		page, err := reg.Resolve(tc.url)
		require.NoError(t, err)
		direct, err := site.Chapters(body, mustParse(t, tc.url))
		require.NoError(t, err)
		require.Equal(t, rows(direct), rows(all), tc.site)
		require.NotEmpty(t, all)
		require.Empty(t, f.asked, "%s: no fetch beyond the series page", page.Key)
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const siteFixtures = "../../../testdata/sites"

// probeJSON runs lectern probe in-process and decodes what it printed.
func probeJSON(t *testing.T, stdin string, args ...string) (int, map[string]any, string) {
	t.Helper()
	code, out, errOut := runCmd(t, nil, stdin, append([]string{"probe"}, args...)...)
	var result map[string]any
	if out != "" {
		require.NoError(t, json.Unmarshal([]byte(out), &result), out)
	}
	return code, result, errOut
}

func TestProbeSeriesFile(t *testing.T) {
	t.Parallel()
	code, r, _ := probeJSON(t, "", "--site", "comix", "--file", filepath.Join(siteFixtures, "comix", "series.html"),
		"--url", "https://comix.to/title/r8k2m-the-greatest-estate-developer")
	require.Equal(t, 0, code)
	require.Equal(t, "comix", r["site"])
	require.Equal(t, "comix:r8k2m", r["key"])
	require.Equal(t, "series", r["page"])
	require.Equal(t, "The Greatest Estate Developer", r["title"])
	require.Equal(t, "", r["problem"])
	require.Equal(t, map[string]any{
		"label": "Chapter 206", "number": 206.0, "locked": false,
		"url": "https://comix.to/title/r8k2m-the-greatest-estate-developer/5552210-chapter-206",
	}, r["latest_chapter"])
	require.Equal(t, "https://static.comix.to/r8k2m/poster-medium.webp", r["cover"])
	require.Len(t, r["chapters"], 6)
	require.Equal(t, []any{}, r["pages"])
	require.Equal(t, 0.0, r["text_chars"])
}

func TestProbeChapterFromStdin(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile(filepath.Join(siteFixtures, "demonic", "chapter.html"))
	require.NoError(t, err)
	code, r, _ := probeJSON(t, string(body), "--site", "demonic", "--file", "-", "--page", "chapter")
	require.Equal(t, 0, code)
	require.Equal(t, "chapter", r["page"])
	require.Len(t, r["pages"], 4)
	require.Equal(t, "https://cdn.demoniclibs.com/mangas/Solo%20Max-Level%20Newbie/0180/01.jpg?v=3", r["pages"].([]any)[0])
	require.Nil(t, r["latest_chapter"])

	code, r, _ = probeJSON(t, "", "--site", "novelfull", "--file", filepath.Join(siteFixtures, "novelfull", "chapter.html"), "--page", "chapter")
	require.Equal(t, 0, code)
	require.Equal(t, 123.0, r["text_chars"])
}

func TestProbeNotAPage(t *testing.T) {
	t.Parallel()
	code, r, _ := probeJSON(t, "", "--site", "asura", "--file", filepath.Join(siteFixtures, "asura", "challenge.html"))
	require.Equal(t, 3, code)
	require.Equal(t, "challenge", r["problem"])
	require.Nil(t, r["latest_chapter"])
	require.Equal(t, "", r["cover"])
	require.Equal(t, []any{}, r["chapters"])

	code, r, _ = probeJSON(t, "", "--site", "kagane", "--file", filepath.Join(siteFixtures, "kagane", "error.json"))
	require.Equal(t, 3, code)
	require.Equal(t, "not_found", r["problem"], "the API's own 404, read without a status")

	// A locked chapter is a chapter page: it answered, with the problem named.
	code, r, _ = probeJSON(t, "", "--site", "asura", "--file", filepath.Join(siteFixtures, "asura", "chapter-locked.html"), "--page", "chapter")
	require.Equal(t, 0, code)
	require.Equal(t, "locked", r["problem"])
}

func TestProbeUsage(t *testing.T) {
	t.Parallel()
	fixture := filepath.Join(siteFixtures, "asura", "series.html")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no flags", nil, "--site and --file are required"},
		{"no file", []string{"--site", "asura"}, "--site and --file are required"},
		{"unknown site", []string{"--site", "tapas", "--file", fixture}, `unknown site "tapas"`},
		{"bad page", []string{"--site", "asura", "--file", fixture, "--page", "cover"}, "--page must be series or chapter"},
		{"url of another site", []string{"--site", "asura", "--file", fixture, "--url", "https://comix.to/title/r8k2m-x"}, "--url"},
		{"unknown flag", []string{"--site", "asura", "--file", fixture, "--fetch"}, "flag provided but not defined"},
		{"url mode without a database", []string{"https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b"}, "DATABASE_URL is required"},
		{"url of no site", []string{"https://example.com/x"}, "not a page of a supported Site"},
		{"url and flags", []string{"--site", "asura", "https://asurascans.com/comics/x-7f3k9a2b"}, "give either a URL or --site and --file"},
	} {
		code, out, errOut := runCmd(t, nil, "", append([]string{"probe"}, tc.args...)...)
		require.Equal(t, 2, code, tc.name)
		require.Empty(t, out, tc.name)
		require.Contains(t, errOut, tc.want, tc.name)
	}

	code, out, _ := runCmd(t, nil, "", "probe", "-h")
	require.Equal(t, 0, code)
	for _, s := range []string{"lectern probe --site SITE --file PATH", "asura, comix, demonic, kagane, lightnovelworld, mangadex, novelfull, royalroad, webtoons", "Exit status", "3 when"} {
		require.Contains(t, out, s)
	}

	code, _, errOut := runCmd(t, nil, "", "probe", "--site", "asura", "--file", filepath.Join(t.TempDir(), "missing.html"))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "missing.html")
}

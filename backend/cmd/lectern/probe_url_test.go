package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/fakenet"
	"github.com/lectern-reader/lectern/backend/internal/pgtest"
	"github.com/lectern-reader/lectern/backend/internal/server"
)

// probe URL fetches through the Poll's own fetcher: pinned to the Site's
// hosts, through the destination gate's dial (here onto the fake network,
// answering for asurascans.com) and paced through DATABASE_URL's gate.
func TestProbeURLFetchesThroughThePollsFetcher(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(siteFixtures, "asura", "series.html"))
	require.NoError(t, err)
	n := fakenet.New(t)
	n.Set("https://asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b", http.StatusOK, "text/html; charset=utf-8", body)
	ua := func() string { return n.Requests()[0].Header.Get("User-Agent") }
	probeSeams = &server.Seams{Resolver: n, Dial: n.DialContext, RootCAs: n.RootCAs()}
	t.Cleanup(func() { probeSeams = nil })
	dbURL := pgtest.NewURL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "USER_AGENT": "ProbeTest/1", "LOG_FORMAT": "text"}

	code, out, errOut := runCmd(t, env, "", "probe", "https://www.asurascans.com/comics/omniscient-readers-viewpoint-7f3k9a2b/")
	require.Equal(t, 0, code, errOut)
	var r map[string]any
	require.NoError(t, jsonUnmarshal(out, &r), out)
	require.Equal(t, "asura:omniscient-readers-viewpoint", r["key"])
	require.Equal(t, "series", r["page"])
	require.Equal(t, "Omniscient Reader's Viewpoint", r["title"])
	require.Equal(t, "Chapter 252 - The Last Reader", r["latest_chapter"].(map[string]any)["label"])
	require.Equal(t, float64(len(body)), r["body_bytes"])
	require.Equal(t, "ProbeTest/1", ua())

	// The request went through the shared pacing gate.
	st, err := openPool(dbURL)
	require.NoError(t, err)
	defer st.Close()
	var hosts int
	require.NoError(t, st.QueryRow(context.Background(), `SELECT count(*) FROM pacing_hosts WHERE host = 'asurascans.com'`).Scan(&hosts))
	require.Equal(t, 1, hosts)

	// A page the Site does not have: the fetch fails, exit 1.
	code, _, errOut = runCmd(t, env, "", "probe", "https://asurascans.com/comics/unknown-1a2b3c4d")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "404")
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func openPool(dbURL string) (*pgxpool.Pool, error) { return pgxpool.New(context.Background(), dbURL) }

// A MangaDex title URL is probed as the Poll reads it: the manga record on
// api.mangadex.org, then its chapter feed, with an identifying User-Agent.
func TestProbeURLReadsMangadexThroughItsAPI(t *testing.T) {
	read := func(name string) []byte {
		body, err := os.ReadFile(filepath.Join(siteFixtures, "mangadex", name))
		require.NoError(t, err)
		return body
	}
	const id = "8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f"
	n := fakenet.New(t)
	n.Set("https://api.mangadex.org/manga/"+id, http.StatusOK, "application/json", read("series.json"))
	n.Set("https://api.mangadex.org/manga/"+id+"/feed", http.StatusOK, "application/json", read("feed.json"))
	probeSeams = &server.Seams{Resolver: n, Dial: n.DialContext, RootCAs: n.RootCAs()}
	t.Cleanup(func() { probeSeams = nil })
	env := map[string]string{"DATABASE_URL": pgtest.NewURL(t), "USER_AGENT": "ProbeTest/1 (+https://example.org)", "LOG_FORMAT": "text", "SITE_PACE": "mangadex=0"}

	code, out, errOut := runCmd(t, env, "", "probe", "https://mangadex.org/title/"+id+"/tourou-no-deshi")
	require.Equal(t, 0, code, errOut)
	var r map[string]any
	require.NoError(t, jsonUnmarshal(out, &r), out)
	require.Equal(t, "mangadex:"+id, r["key"])
	require.Equal(t, "The Lantern Keeper's Apprentice", r["title"])
	require.Equal(t, "Chapter 10.5 - Side Story", r["latest_chapter"].(map[string]any)["label"])
	require.Empty(t, r["problem"])
	require.NotEmpty(t, r["chapters"], "the chapters answer walks the feed")
	// The record, then the feed: once for the Latest Chapter as the Poll reads
	// it, and again (another page of it) for the whole chapter list.
	var hosts []string
	for _, req := range n.Requests() {
		if len(hosts) == 0 || hosts[len(hosts)-1] != req.Host+req.Path {
			hosts = append(hosts, req.Host+req.Path)
		}
		require.Equal(t, "ProbeTest/1 (+https://example.org)", req.Header.Get("User-Agent"))
	}
	require.Equal(t, []string{"api.mangadex.org/manga/" + id, "api.mangadex.org/manga/" + id + "/feed"}, hosts, "the API, never the title page")
}

// The poll's bodies saved as files, in the order the Poll reads them (the
// MangaDex record, then its feed), give the same answers: the feed read
// again with another query for the chapter list is the same file.
func TestProbeFilesReadMangadexAsThePollDoes(t *testing.T) {
	t.Parallel()
	const id = "8f3c6b2e-4d1a-4e7b-9c2d-5a6b7c8d9e0f"
	f := func(name string) string { return filepath.Join(siteFixtures, "mangadex", name) }
	code, out, errOut := runCmd(t, nil, "", "probe", "--site", "mangadex", "--url", "https://api.mangadex.org/manga/"+id,
		"--file", f("series.json"), "--file", f("feed.json"), "--page", "series")
	require.Equal(t, 0, code, errOut)
	var r map[string]any
	require.NoError(t, jsonUnmarshal(out, &r), out)
	require.Equal(t, "mangadex:"+id, r["key"])
	require.Equal(t, "Chapter 10.5 - Side Story", r["latest_chapter"].(map[string]any)["label"])
	require.NotEmpty(t, r["chapters"])
	require.Empty(t, r["problem"], r["detail"])

	// The record alone answers what it holds and names the body it lacks.
	code, out, _ = runCmd(t, nil, "", "probe", "--site", "mangadex", "--url", "https://api.mangadex.org/manga/"+id, "--file", f("series.json"))
	require.Equal(t, 0, code)
	require.NoError(t, jsonUnmarshal(out, &r), out)
	require.Equal(t, "The Lantern Keeper's Apprentice", r["title"])
}

package config

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) Lookup {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// Load touches the process environment (envconfig reads nothing else), so
// these tests do not run in parallel.

func TestServeNamesEveryMissingVariable(t *testing.T) {
	_, err := Load(env(nil), "serve")
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"DATABASE_URL is required",
		"PUBLIC_BASE_URL is required: the absolute URL clients reach this server at",
		"DATA_DIR is required",
	} {
		require.Contains(t, msg, want)
	}
}

func TestMalformedValuesAreAllNamed(t *testing.T) {
	_, err := Load(env(map[string]string{
		"DATABASE_URL":    "mysql://x",
		"PUBLIC_BASE_URL": "lectern.local",
		"POLL_INTERVAL":   "often",
		"WORKERS":         "many",
		"LOG_FORMAT":      "xml",
		"SITE_PACE":       "asura",
		"TRUSTED_PROXIES": "10.0.0.0/8,proxy.lan",
	}), "serve")
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"DATABASE_URL is malformed",
		"PUBLIC_BASE_URL is malformed",
		`POLL_INTERVAL is malformed: "often"`,
		`WORKERS is malformed: "many"`,
		"LOG_FORMAT is malformed",
		"SITE_PACE is malformed",
		`TRUSTED_PROXIES is malformed: "proxy.lan"`,
		"DATA_DIR is required",
	} {
		require.Contains(t, msg, want)
	}
}

func TestBaseURLWithQuotesIsRefused(t *testing.T) {
	_, err := Load(env(map[string]string{"DATABASE_URL": "postgres://u@db/l", "DATA_DIR": "/d",
		"PUBLIC_BASE_URL": "https://lectern.example.net/a'b"}), "serve")
	require.ErrorContains(t, err, "PUBLIC_BASE_URL is malformed")
}

func TestDefaultsAndDerivedDirs(t *testing.T) {
	c, err := Load(env(map[string]string{
		"DATABASE_URL":    "postgres://u@db/lectern",
		"PUBLIC_BASE_URL": "https://lectern.example.net/",
		"DATA_DIR":        "/data",
		"SITE_PACE":       "asura=1s, demonic=500ms",
	}), "serve")
	require.NoError(t, err)
	require.Equal(t, ":8080", c.ListenAddr)
	require.Equal(t, time.Hour, c.PollInterval)
	require.Equal(t, "https://lectern.example.net", c.PublicBaseURL, "trailing slash trimmed once, here")
	require.Equal(t, "/data/covers", c.CoverDir)
	require.Equal(t, "/data/archive", c.ArchiveDir)
	require.Equal(t, int64(5<<20), c.FetchMaxBytes)
	require.True(t, c.Secure())
	p, err := c.Paces()
	require.NoError(t, err)
	require.Equal(t, map[string]time.Duration{"asura": time.Second, "demonic": 500 * time.Millisecond}, p)

	c, err = Load(env(map[string]string{
		"DATABASE_URL": "postgres://u@db/lectern", "PUBLIC_BASE_URL": "http://localhost:8080",
		"DATA_DIR": "/data", "COVER_DIR": "/covers",
	}), "serve")
	require.NoError(t, err)
	require.Equal(t, "/covers", c.CoverDir)
	require.False(t, c.Secure())
}

func TestOtherCommandsNeedLess(t *testing.T) {
	_, err := Load(env(nil), "migrate")
	require.NoError(t, err)
}

func TestPrintListsEveryVariable(t *testing.T) {
	var buf bytes.Buffer
	Print(&buf)
	for _, n := range Names() {
		require.Contains(t, buf.String(), n)
	}
	require.Contains(t, buf.String(), "(required for serve)")
	require.ElementsMatch(t, []string{"DATABASE_URL", "PUBLIC_BASE_URL", "DATA_DIR"}, Required("serve"))
	buf.Reset()
	Markdown(&buf)
	require.Equal(t, len(Names())+2, strings.Count(buf.String(), "\n"))
}

func TestDefaultListCacheBytesIsTheTagsDefault(t *testing.T) {
	c, err := Load(func(string) (string, bool) { return "", false }, "")
	require.NoError(t, err)
	require.EqualValues(t, DefaultListCacheBytes, c.ListCacheBytes)
}

// Loads at once each read their own lookup: envconfig reads the process
// environment, which Load fills from the lookup, so without a lock one
// Load's values (or their absence) leaked into another's (seen as a verify
// test failing "DATA_DIR is required" beside a parallel test).
func TestConcurrentLoadsReadTheirOwnLookup(t *testing.T) {
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			m := map[string]string{"DATABASE_URL": "postgres://h/db" + strconv.Itoa(i)}
			if i%2 == 0 {
				m["DATA_DIR"] = "/data/" + strconv.Itoa(i)
			} else {
				m["COVER_DIR"], m["ARCHIVE_DIR"] = "/c/"+strconv.Itoa(i), "/a/"+strconv.Itoa(i)
			}
			for range 50 {
				c, err := Load(env(m), "verify")
				switch {
				case err != nil:
					errs <- err
					return
				case c.DatabaseURL != m["DATABASE_URL"]:
					errs <- fmt.Errorf("load %d read DATABASE_URL %q", i, c.DatabaseURL)
					return
				case i%2 == 0 && c.CoverDir != m["DATA_DIR"]+"/covers", i%2 == 1 && c.CoverDir != m["COVER_DIR"]:
					errs <- fmt.Errorf("load %d read the Cover directory %q", i, c.CoverDir)
					return
				}
			}
			errs <- nil
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
}

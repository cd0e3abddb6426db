package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"
)

// docRoute is a row of docs/api.md: "| `GET, HEAD /covers/{address}` | ...".
var docRoute = regexp.MustCompile("^\\|\\s*`((?:[A-Z]+,\\s*)*[A-Z]+) (/[^`]*)`")

// docs/api.md and the router agree: every route the composed router serves,
// apart from the web UI's pages, has a row, with the same methods, and every
// row names a route that exists. A feature that adds an endpoint documents
// it, and a documented endpoint cannot quietly disappear.
func TestAPIDocMatchesTheRouter(t *testing.T) {
	t.Parallel()
	b := setup(t)

	served := map[string][]string{}
	err := chi.Walk(b.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		// The web UI is mounted whole at "/": its pages are HTML for a
		// browser, not the wire.
		if route != "/*" {
			served[route] = append(served[route], method)
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, served, "/api/bookmarks/{key}", "the walk reaches the mounted API")

	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "api.md"))
	require.NoError(t, err)
	documented := map[string][]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		m := docRoute.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		require.NotContains(t, documented, m[2], "docs/api.md has two rows for %s", m[2])
		for _, meth := range strings.Split(m[1], ",") {
			documented[m[2]] = append(documented[m[2]], strings.TrimSpace(meth))
		}
	}
	require.NotEmpty(t, documented)

	for route, methods := range served {
		doc, ok := documented[route]
		require.True(t, ok, "docs/api.md does not document %s %s", strings.Join(methods, ", "), route)
		sort.Strings(methods)
		sort.Strings(doc)
		// A route mounted with Handle answers every method at the router
		// and refuses the others itself; the row names the ones it serves.
		if slices.Contains(methods, "CONNECT") && slices.Contains(methods, "TRACE") {
			for _, m := range doc {
				require.Contains(t, methods, m, "%s", route)
			}
			continue
		}
		require.Equal(t, methods, doc, "docs/api.md lists other methods for %s", route)
	}
	for route := range documented {
		require.Contains(t, served, route, "docs/api.md documents %s, which the router does not serve", route)
	}
}

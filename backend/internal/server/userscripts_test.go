package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUserscriptsCarryTheDeploymentURL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, name := range []string{"lectern-manga.user.js", "lectern-novel.user.js"} {
		r := b.Do("GET", "/userscripts/"+name, "", nil)
		require.Equal(t, http.StatusOK, r.Code, name)
		require.Equal(t, "text/javascript; charset=utf-8", r.Header.Get("Content-Type"))
		body := string(r.Body)
		require.NotContains(t, body, "__LECTERN_", "every placeholder is replaced")
		require.Contains(t, body, "// @connect      lectern.example.net")
		require.Contains(t, body, "// @downloadURL  "+testBase+"/userscripts/"+name)
		require.Contains(t, body, `'`+testBase+`'`)
	}
	require.Equal(t, http.StatusNotFound, b.Do("GET", "/userscripts/evil.user.js", "", nil).Code)
	require.Equal(t, http.StatusNotFound, b.Do("GET", "/userscripts/..%2Fuserscripts.go", "", nil).Code)
}

package server_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	// `TestX` or `FuzzX` in docs/security.md.
	docGoTest = regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`")
	// userscripts/test/x.test.mjs "title" in docs/security.md.
	docJSTest  = regexp.MustCompile(`(userscripts/test/[a-z]+\.test\.mjs) "([^"]+)"`)
	goTestFunc = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
)

// docs/security.md proves each control with a named test; every name must
// be a test that exists, so the threat model cannot point at a test that was
// renamed or deleted.
func TestSecurityDocNamesRealTests(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	require.NoError(t, err)

	have := map[string]bool{}
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "backend"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range goTestFunc.FindAllSubmatch(b, -1) {
			have[string(m[1])] = true
		}
		return nil
	}))

	named := docGoTest.FindAllStringSubmatch(string(doc), -1)
	require.Greater(t, len(named), 40, "the threat model names its tests")
	for _, m := range named {
		require.True(t, have[m[1]], "docs/security.md names %s, which is no test under backend/", m[1])
	}

	js := docJSTest.FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, js, "the threat model names the userscripts' tests")
	for _, m := range js {
		b, err := os.ReadFile(filepath.Join(root, m[1]))
		require.NoError(t, err, "docs/security.md names %s", m[1])
		require.Contains(t, string(b), "test('"+m[2], "docs/security.md names a test %q in %s that is not there", m[2], m[1])
	}
}

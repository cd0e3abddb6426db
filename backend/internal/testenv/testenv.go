// Package testenv finds what tests need from the machine: the repository's
// root and its Site fixtures, a Chromium, a place for screenshots, the files
// a test left in a directory. A missing browser fails the test rather than
// skipping it: the browser tests are the only proof the browser fetcher and
// the UI work, and a silent skip would hide that they never ran.
package testenv

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// RepoRoot is the directory holding go.mod, above the test's directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test directory")
		dir = parent
	}
}

// ChromiumPath finds Chromium the way scripts/ensure-chromium.sh does:
// $BROWSER_PATH, then chromium, chromium-browser or google-chrome on PATH,
// then /usr/bin/chromium.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("BROWSER_PATH"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	t.Fatalf("no Chromium found (BROWSER_PATH, chromium, chromium-browser, google-chrome, /usr/bin/chromium): run %s to install it (make test does)",
		filepath.Join(RepoRoot(t), "scripts", "ensure-chromium.sh"))
	return ""
}

// ScreenshotDir is where a test leaves its screenshots: the directory
// $LECTERN_SCREENSHOT_DIR names (made if missing), else a temporary one
// removed with the test, so no test writes inside the repository.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("LECTERN_SCREENSHOT_DIR")
	if dir == "" {
		return t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// SiteFixture is the page testdata/sites/<site>/<file> of the repository.
func SiteFixture(t testing.TB, site, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(t), "testdata", "sites", site, file))
	require.NoError(t, err)
	return b
}

// FilesUnder lists every non-directory under dir, relative to it.
func FilesUnder(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// FamilyFixture reads a family's fixture from testdata/families/<family>/.
func FamilyFixture(t testing.TB, family, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(t), "testdata", "families", family, file))
	require.NoError(t, err)
	return b
}

// Package testenv finds what tests need from the machine: the repository's
// root, a Chromium, the files a test left in a directory. A missing browser fails the test rather than skipping
// it: the browser tests are the only proof the browser fetcher and the UI
// work, and a silent skip would hide that they never ran.
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

// ScreenshotDir is $ARTIFACTS_DIR/screenshots, else artifacts/screenshots
// at the repository root (gitignored); it exists on return.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "artifacts", "screenshots")
	if a := os.Getenv("ARTIFACTS_DIR"); a != "" {
		dir = filepath.Join(a, "screenshots")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
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

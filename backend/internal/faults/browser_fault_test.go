package faults

import (
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/fixturesites"
	"github.com/lectern-reader/lectern/backend/internal/latest"
	"github.com/lectern-reader/lectern/backend/internal/store"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// sidecar is a headless Chromium run as the Compose sidecar is: a DevTools
// port, no proxy flag (Lectern gives each browser context its proxy).
type sidecar struct {
	t    *testing.T
	path string
	port string
	cmd  *exec.Cmd
	once *sync.Once
}

func startSidecar(t *testing.T, path, port string) *sidecar {
	t.Helper()
	cmd := exec.Command(path,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--ignore-certificate-errors",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port="+port,
		"--user-data-dir="+t.TempDir(), "about:blank")
	// Its renderer and helper processes share its process group, so a
	// kill of the group is the sidecar dying whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	s := &sidecar{t: t, path: path, port: port, cmd: cmd, once: &sync.Once{}}
	t.Cleanup(s.kill)
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/version")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "the sidecar never opened its DevTools port")
	return s
}

func (s *sidecar) kill() {
	s.once.Do(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		_ = s.cmd.Wait()
	})
}

// The browser sidecar dies in the middle of a poll's read (kagane is read
// only in a browser; its page is still loading). The poll is recorded as
// failed with the lost browser named, kagane is not backed off (a dead
// browser is no refusal by the Site), and once the sidecar is back (as
// Compose restarts it) the retried poll reconnects and records the Latest
// Chapter.
func TestBrowserKilledMidReadRecovers(t *testing.T) {
	t.Parallel()
	path := testenv.ChromiumPath(t)
	sites := startSites(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, ln.Close())
	side := startSidecar(t, path, port)

	sites.SetMode("kagane.to", fixturesites.Hang)
	l := startLectern(t, sites, func(c *config.Config) {
		c.BrowserURL = "http://127.0.0.1:" + port
	})
	token := newReader(t, l.st, "ann", false)
	ref, err := latest.Default().Resolve(fixturesites.KaganeSeries)
	require.NoError(t, err)
	put(t, l.base, token, ref.Key, fixturesites.KaganeSeries, "Chapter 1")

	// Mid-read: the tab asked for the page, which does not come.
	require.Eventually(t, func() bool { return sites.Hits(fixturesites.KaganeSeries) > 0 }, time.Minute, 20*time.Millisecond,
		"the browser never asked for the page: %+v", l.poll(t, ref.Key))
	side.kill()

	require.Eventually(t, func() bool { return l.poll(t, ref.Key).status == store.PollFailed }, time.Minute, 50*time.Millisecond,
		"the poll did not end when the browser died: %+v", l.poll(t, ref.Key))
	p := l.poll(t, ref.Key)
	require.Contains(t, p.problem, "lost the browser")
	require.Empty(t, p.latest)
	require.False(t, l.paused(t, "kagane"), "a dead browser backed the Site off")

	// Compose restarts the sidecar; the Site is well again.
	sites.SetMode("kagane.to", fixturesites.Normal)
	startSidecar(t, path, port)
	require.Eventually(t, func() bool { return l.poll(t, ref.Key).status == store.PollOK }, 2*time.Minute, 100*time.Millisecond,
		"the retried poll did not recover with the new browser: %+v; jobs: %s", l.poll(t, ref.Key), l.jobs(t, ref.Key))
	require.NotEmpty(t, l.poll(t, ref.Key).latest)
	require.False(t, l.paused(t, "kagane"))
	require.Equal(t, 1, count(t, l.pool, `SELECT count(*) FROM latest_chapter_history WHERE series_key = $1`, ref.Key))
	require.False(t, strings.Contains(l.poll(t, ref.Key).problem, "lost"), "the problem is cleared by the success")
}

package browser

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Chromium this Browser launched is closed after Idle without a read (the
// process is gone, its whole tree with it) and the next read launches a new
// one that works. The log of the teardown names it. The figure is the RSS of
// this process's tree with Chromium idle, before and after.
func TestIdleBrowserIsClosedAndRelaunched(t *testing.T) {
	e := newEnv(t, Options{Idle: 300 * time.Millisecond})
	s := newSite(t, e.net, "idle")

	payload, err := e.b.Read(deadline(t, 30*time.Second), s.url("/plain"), []string{s.host}, htmlRead, realArrived)
	require.NoError(t, err)
	require.Contains(t, payload, realMarker)
	first := e.b.launchedPID()
	require.NotZero(t, first)
	require.Contains(t, descendants(os.Getpid()), first, "the launched Chromium is this process's child")
	// Its tree only: the package's shared browser of other tests may run too.
	tree := append(descendants(first), first)
	self := os.Getpid()
	before, beforePSS := rss(append(tree, self), "status", "VmRSS:"), rss(append(tree, self), "smaps_rollup", "Pss:")

	require.Eventually(t, func() bool {
		return errors.Is(syscall.Kill(first, 0), syscall.ESRCH) && e.b.launchedPID() == 0
	}, 30*time.Second, 20*time.Millisecond, "the idle Chromium (pid %d) is still running; log:\n%s", first, e.log)
	// Its children go with it (a renderer notices its parent's end a moment
	// later).
	require.Eventually(t, func() bool { return len(alive(tree)) == 0 }, 30*time.Second, 20*time.Millisecond,
		"processes of Chromium's tree are left: %v", alive(tree))
	require.Contains(t, e.log.String(), "browser closed after idle")
	after, afterPSS := rss([]int{self}, "status", "VmRSS:"), rss([]int{self}, "smaps_rollup", "Pss:")
	// RSS counts the pages Chromium's processes share once per process;
	// PSS splits them, so its sum is the tree's real share of memory.
	t.Logf("this process and its idle Chromium (%d processes): RSS %d MiB before teardown, %d MiB after (%.3f); PSS %d MiB before, %d MiB after (%.3f)",
		len(tree), before>>20, after>>20, float64(after)/float64(before), beforePSS>>20, afterPSS>>20, float64(afterPSS)/float64(beforePSS))

	payload, err = e.b.Read(deadline(t, 30*time.Second), s.url("/plain"), []string{s.host}, htmlRead, realArrived)
	require.NoError(t, err, "the next read launches the browser again")
	require.Contains(t, payload, realMarker)
	second := e.b.launchedPID()
	require.NotZero(t, second)
	require.NotEqual(t, first, second)
}

// Idle 0 keeps a launched browser, and a remote browser (BROWSER_URL) is
// never torn down: the timer is not even armed.
func TestIdleTeardownOnlyForALaunchedBrowser(t *testing.T) {
	for _, o := range []Options{{}, {URL: "http://127.0.0.1:9", Idle: time.Millisecond}} {
		b := New(o)
		b.cur = &conn{}
		require.NoError(t, b.acquire(t.Context()))
		b.release()
		require.Nil(t, b.idle, "%+v", o)
	}
}

// alive is what of pids still runs, with its command line.
func alive(pids []int) []string {
	var out []string
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			out = append(out, strconv.Itoa(pid)+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if i < 0 || len(f) < 2 || f[0] == "Z" {
			continue
		}
		id, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		parent[id], _ = strconv.Atoi(f[1])
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for id, pp := range parent {
			if pp == p {
				out = append(out, id)
				walk(id)
			}
		}
	}
	walk(pid)
	return out
}

// rss sums a kB field of pids' /proc/<pid>/<file> (VmRSS of status, Pss
// of smaps_rollup), in bytes.
func rss(pids []int, file, field string) int64 {
	var total int64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, field); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				total += kb << 10
			}
		}
	}
	return total
}

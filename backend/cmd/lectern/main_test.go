package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lectern-reader/lectern/backend/internal/pgtest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lectern-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "lectern")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build lectern: %v\n%s", err, out)
		os.Exit(1)
	}
	code := pgtest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// runCmd runs a command in-process with its own streams and environment.
func runCmd(t *testing.T, envVars map[string]string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	env := &cmdEnv{
		stdin: strings.NewReader(stdin), stdout: &o, stderr: &e,
		getenv: func(k string) (string, bool) { v, ok := envVars[k]; return v, ok },
	}
	code = run(context.Background(), env, args)
	return code, o.String(), e.String()
}

func TestHelpExplainsEveryCommand(t *testing.T) {
	code, out, _ := runCmd(t, nil, "", "help")
	require.Equal(t, 0, code)
	for _, c := range []string{"serve", "migrate", "reader", "token", "version", "config"} {
		require.Contains(t, out, c)
	}
	// Every summary starts in one column, the longest name's included.
	col := -1
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if !strings.HasPrefix(line, "  ") || len(f) < 2 || commands[f[0]].summary == "" {
			continue
		}
		at := strings.Index(line, commands[f[0]].summary)
		if col < 0 {
			col = at
		}
		require.Equal(t, col, at, "the summary of %s is out of line:\n%s", f[0], out)
	}
	require.Positive(t, col)
	for name := range commands {
		code, stdout, stderr := runCmd(t, nil, "", name, "-h")
		require.Equal(t, 0, code, name)
		require.Contains(t, stdout+stderr, "lectern "+name, name)
	}
	code, _, errOut := runCmd(t, nil, "", "frobnicate")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unknown command "frobnicate"`)
}

func TestServeNamesEveryMissingVariable(t *testing.T) {
	cmd := exec.Command(binary, "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Equal(t, 1, cmd.ProcessState.ExitCode())
	for _, v := range []string{"DATABASE_URL is required", "PUBLIC_BASE_URL is required: the absolute URL clients reach this server at", "DATA_DIR is required"} {
		require.Contains(t, string(out), v)
	}
	require.Equal(t, 1, strings.Count(strings.TrimSpace(string(out)), "\n")+1, "one message names every problem: %s", out)
}

func TestReaderAndTokenCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.NewURL(t)
	env := map[string]string{"DATABASE_URL": db}

	code, out, errOut := runCmd(t, env, "correct horse battery\n", "reader", "add", "olive", "--owner")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `created Owner "olive"`)

	code, _, errOut = runCmd(t, env, "correct horse battery\n", "reader", "add", "olive")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "already exists")

	code, _, errOut = runCmd(t, env, "short\n", "reader", "add", "ray")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "at least 8 characters")

	code, out, errOut = runCmd(t, env, "", "token", "new", "olive", "--name", "laptop")
	require.Equal(t, 0, code, errOut)
	token := strings.TrimSpace(out)
	require.True(t, strings.HasPrefix(token, "lec_"), out)
	require.Contains(t, errOut, "shown only this once")

	code, _, errOut = runCmd(t, env, "", "token", "new", "nobody")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `no Reader named "nobody"`)

	code, _, _ = runCmd(t, env, "", "token")
	require.Equal(t, 2, code)

	code, out, _ = runCmd(t, env, "", "migrate", "version")
	require.Equal(t, 0, code)
	require.Regexp(t, `database at migration (\d+) of (\d+)`, out)
}

// Two replicas starting together against one empty database both migrate
// safely and serve.
func TestTwoServesOnOneEmptyDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmptyURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var addrs []string
	for i := range 2 {
		addr := freeAddr(t)
		addrs = append(addrs, addr)
		cmd := exec.CommandContext(ctx, binary, "serve")
		cmd.Env = []string{
			"PATH=" + os.Getenv("PATH"),
			"DATABASE_URL=" + db,
			"PUBLIC_BASE_URL=http://" + addr,
			"DATA_DIR=" + t.TempDir(),
			"LISTEN_ADDR=" + addr,
			"LOG_FORMAT=text",
		}
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start(), "replica %d", i)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				t.Logf("replica %d: %s", i, sc.Text())
			}
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		})
	}
	for _, addr := range addrs {
		require.Eventually(t, func() bool {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 60*time.Second, 100*time.Millisecond, "replica on %s never became ready", addr)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

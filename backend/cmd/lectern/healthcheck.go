package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/lectern-reader/lectern/backend/internal/config"
)

func init() {
	commands["healthcheck"] = command{summary: "ask the local server whether it is ready (for a container HEALTHCHECK)", run: cmdHealthcheck}
}

func cmdHealthcheck(ctx context.Context, env *cmdEnv, args []string) int {
	fs := newFlags("healthcheck", env,
		"Asks the server running in this container or machine for /readyz on LISTEN_ADDR\n"+
			"(the database answers and is migrated to this binary's version). The image has\n"+
			"no curl; Compose and the Dockerfile run this instead.\n\n"+
			"Exit status: 0 ready, 1 not ready or not answering.")
	target := fs.String("url", "", "URL to ask instead (default http://127.0.0.1:<LISTEN_ADDR port>/readyz)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if code, done := parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	u := *target
	if u == "" {
		cfg, err := config.Load(config.Lookup(env.getenv), "healthcheck")
		if err != nil {
			fmt.Fprintln(env.stderr, "lectern:", err)
			return 1
		}
		if u, err = readyURL(cfg.ListenAddr); err != nil {
			fmt.Fprintln(env.stderr, "lectern:", err)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern: healthcheck:", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(env.stderr, "lectern: healthcheck:", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(env.stderr, "lectern: healthcheck: %s answered %d: %s\n", u, resp.StatusCode, msg)
		return 1
	}
	fmt.Fprintln(env.stdout, msg)
	return 0
}

// readyURL turns a listen address into a URL of the same server seen from
// this machine: a wildcard or empty host becomes loopback.
func readyURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("LISTEN_ADDR %q: %w", listen, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::", "[::]":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}

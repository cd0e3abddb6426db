package main

// Docker is not available where these tests run, so they check the facts
// the deployment files must hold without it: the image build is replayed
// from the Dockerfile's own build line over exactly the files its COPY
// lines and .dockerignore let through, and compose.yaml's environment, with
// the values of .env.example, must be a configuration `lectern serve`
// accepts.

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lectern-reader/lectern/backend/internal/config"
	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), name))
	require.NoError(t, err)
	return string(b)
}

// --- Dockerfile -------------------------------------------------------------

type instruction struct {
	cmd  string // upper case
	args string
}

type stage struct {
	from, name string
	ins        []instruction
}

// parseDockerfile joins continuation lines, drops comments and groups the
// instructions by stage.
func parseDockerfile(t *testing.T, src string) (args map[string]string, stages []*stage) {
	t.Helper()
	args = map[string]string{}
	var logical []string
	var cur strings.Builder
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		logical = append(logical, cur.String())
		cur.Reset()
	}
	require.Zero(t, cur.Len(), "Dockerfile ends inside a continued line")
	for _, l := range logical {
		cmd, rest, _ := strings.Cut(l, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(rest)}
		switch {
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			st := &stage{}
			for i := 0; i < len(f); i++ {
				switch {
				case strings.HasPrefix(f[i], "--"):
				case strings.EqualFold(f[i], "AS") && i+1 < len(f):
					st.name = f[i+1]
					i++
				default:
					st.from = f[i]
				}
			}
			stages = append(stages, st)
		case len(stages) == 0 && in.cmd == "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			args[k] = v
		default:
			require.NotEmpty(t, stages, "instruction before FROM: %s", l)
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		}
	}
	return args, stages
}

func (s *stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// dockerignore is the subset of .dockerignore semantics the file uses:
// patterns in order, the last match wins, a "!" pattern re-includes, a
// pattern matching a directory matches everything under it, "**" spans
// directories.
type dockerignore []struct {
	re     *regexp.Regexp
	negate bool
}

func parseDockerignore(t *testing.T, src string) dockerignore {
	t.Helper()
	var out dockerignore
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		neg := strings.HasPrefix(line, "!")
		p := strings.Trim(strings.TrimPrefix(line, "!"), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(p); i++ {
			switch {
			case strings.HasPrefix(p[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(p[i:], "**"):
				re.WriteString(".*")
				i++
			case p[i] == '*':
				re.WriteString("[^/]*")
			case p[i] == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		}
		re.WriteString("(/.*)?$")
		out = append(out, struct {
			re     *regexp.Regexp
			negate bool
		}{regexp.MustCompile(re.String()), neg})
	}
	return out
}

func (d dockerignore) excluded(rel string) bool {
	ex := false
	for _, p := range d {
		if p.re.MatchString(rel) {
			ex = !p.negate
		}
	}
	return ex
}

// buildContext lists the repository files .dockerignore sends to the builder.
func buildContext(t *testing.T, root string, ign dockerignore) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			// .git and excluded top-level trees (the local database, built
			// binaries) are never read; nothing in the file re-includes
			// below them.
			if rel == ".git" || !strings.Contains(rel, "/") && ign.excluded(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && !ign.excluded(rel) {
			files = append(files, rel)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

// The build stage's instructions are replayed over the build context: COPY
// places what .dockerignore lets through, and the RUN with the go build runs
// as written. The result must be a static binary that reports the version
// given as the build argument.
func TestDockerfileBuildsAStaticNonRootImage(t *testing.T) {
	t.Parallel()
	root := testenv.RepoRoot(t)
	args, stages := parseDockerfile(t, readRepoFile(t, "Dockerfile"))
	require.GreaterOrEqual(t, len(stages), 2, "a multi-stage build")
	build, final := stages[0], stages[len(stages)-1]

	// The builder's Go is the module's.
	gomod := readRepoFile(t, "go.mod")
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+(?:\.\d+)?)\s*$`).FindStringSubmatch(gomod)
	require.NotNil(t, goLine)
	require.Equal(t, "golang:${GO_VERSION}-alpine", build.from)
	require.Equal(t, goLine[1], args["GO_VERSION"], "the builder image's Go is go.mod's")

	// The final image: minimal base, unprivileged user, the binary as
	// entrypoint, serving by default, a healthcheck that needs no curl.
	require.True(t, strings.HasPrefix(final.from, "gcr.io/distroless/static") || strings.HasPrefix(final.from, "alpine:"), final.from)
	users := final.all("USER")
	require.Len(t, users, 1)
	uid, _, _ := strings.Cut(users[0].args, ":")
	require.NotContains(t, []string{"root", "0", ""}, uid)
	require.Equal(t, `["/usr/local/bin/lectern"]`, final.all("ENTRYPOINT")[0].args)
	require.Equal(t, `["serve"]`, final.all("CMD")[0].args)
	hc := final.all("HEALTHCHECK")
	require.Len(t, hc, 1)
	require.Contains(t, hc[0].args, `CMD ["/usr/local/bin/lectern", "healthcheck"]`)
	env := strings.Join(func() []string {
		var s []string
		for _, in := range final.all("ENV") {
			s = append(s, in.args)
		}
		return s
	}(), " ")
	require.Contains(t, env, "DATA_DIR=/data")
	var volumeOwned bool
	for _, in := range final.all("COPY") {
		if strings.Contains(in.args, "--chown=65532:65532") && strings.HasSuffix(in.args, " /data") {
			volumeOwned = true
		}
	}
	require.True(t, volumeOwned, "the data directory belongs to the unprivileged user")

	// The build line itself.
	var buildRun string
	for _, in := range build.all("RUN") {
		if strings.Contains(in.args, "go build") {
			buildRun = in.args
		}
	}
	require.NotEmpty(t, buildRun)
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-X main.version=${VERSION}`, "./backend/cmd/lectern", "-o /out/lectern"} {
		require.Contains(t, buildRun, want)
	}
	require.True(t, slices.ContainsFunc(build.all("ARG"), func(in instruction) bool { return strings.HasPrefix(in.args, "VERSION") }))

	// Stage the context the way the builder would see it.
	ign := parseDockerignore(t, readRepoFile(t, ".dockerignore"))
	files := buildContext(t, root, ign)
	require.NotContains(t, files, ".env.example")
	for _, f := range files {
		require.False(t, strings.HasSuffix(f, "_test.go"), "tests reach the builder: %s", f)
	}
	work := t.TempDir()
	src := filepath.Join(work, "src")
	require.Equal(t, "/src", build.all("WORKDIR")[0].args)
	for _, in := range build.all("COPY") {
		parts := strings.Fields(in.args)
		require.False(t, strings.HasPrefix(parts[0], "--from"), "the build stage copies only from the context")
		dest := parts[len(parts)-1]
		for _, from := range parts[:len(parts)-1] {
			// Docker's rules: a file goes into a directory destination (one
			// ending in "/") under its own name, else to the destination; a
			// directory's contents go under the destination.
			copied := map[string]string{}
			for _, f := range files {
				switch {
				case f == from && strings.HasSuffix(dest, "/"):
					copied[f] = filepath.Join(src, dest, filepath.Base(f))
				case f == from:
					copied[f] = filepath.Join(src, dest)
				case strings.HasPrefix(f, from+"/"):
					copied[f] = filepath.Join(src, dest, strings.TrimPrefix(f, from+"/"))
				}
			}
			require.NotEmpty(t, copied, "COPY %s: .dockerignore leaves nothing of it in the context", from)
			for f, target := range copied {
				require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
				b, err := os.ReadFile(filepath.Join(root, f))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(target, b, 0o644))
			}
		}
	}

	cmdline := buildRun
	for strings.HasPrefix(cmdline, "--") {
		_, cmdline, _ = strings.Cut(cmdline, " ")
		cmdline = strings.TrimSpace(cmdline)
	}
	out := filepath.Join(work, "out")
	cmdline = strings.ReplaceAll(cmdline, "/out/", out+"/")
	sh := exec.Command("sh", "-c", cmdline)
	sh.Dir = src
	goenv := func(k string) string {
		v, err := exec.Command("go", "env", k).Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(v))
	}
	sh.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"GOCACHE=" + goenv("GOCACHE"), "GOMODCACHE=" + goenv("GOMODCACHE"),
		"GOPROXY=off", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local",
		"VERSION=v1.2.3-image", "TARGETOS=" + runtime.GOOS, "TARGETARCH=" + runtime.GOARCH,
	}
	b, err := sh.CombinedOutput()
	require.NoError(t, err, "the Dockerfile's build line fails on its context:\n%s", b)

	bin := filepath.Join(out, "lectern")
	v, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	require.Equal(t, "lectern v1.2.3-image\n", string(v))
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "the binary is dynamically linked")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs)
	// Built with -trimpath: no path of the build machine inside.
	raw, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.False(t, bytes.Contains(raw, []byte(src)), "the build directory is in the binary")
}

// --- compose.yaml and .env.example ------------------------------------------

type composeFile struct {
	Services map[string]map[string]any `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
	Networks map[string]map[string]any `yaml:"networks"`
}

// composeVariants is compose.yaml as written, and with the commented
// second replica uncommented: both must hold the same facts.
func composeVariants(t *testing.T) map[string]string {
	t.Helper()
	src := readRepoFile(t, "compose.yaml")
	lines := strings.Split(src, "\n")
	var withReplica []string
	in := false
	for _, l := range lines {
		if strings.HasPrefix(l, "  # lectern-2:") {
			in = true
		}
		if in && !strings.HasPrefix(l, "  #") {
			in = false
		}
		if in {
			l = "  " + strings.TrimPrefix(l, "  # ")
		}
		withReplica = append(withReplica, l)
	}
	return map[string]string{"compose.yaml": src, "compose.yaml with the second replica": strings.Join(withReplica, "\n")}
}

// envExample reads .env.example's NAME=value lines.
func envExample(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(readRepoFile(t, ".env.example"), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		require.True(t, ok, ".env.example: %q is not NAME=value", l)
		out[k] = v
	}
	return out
}

var interpolation = regexp.MustCompile(`\$\{([A-Z0-9_]+)(?:(:?[-?])([^}]*))?\}`)

// interpolate resolves ${VAR}, ${VAR:-default} and ${VAR:?message} the way
// Compose does, from vars.
func interpolate(t *testing.T, s string, vars map[string]string) string {
	return interpolation.ReplaceAllStringFunc(s, func(m string) string {
		g := interpolation.FindStringSubmatch(m)
		v, ok := vars[g[1]]
		switch g[2] {
		case ":-":
			if v == "" {
				return g[3]
			}
		case ":?":
			if v == "" {
				t.Errorf("%s is required by compose.yaml: %s", g[1], g[3])
			}
		}
		if !ok && g[2] == "" {
			t.Errorf("%s is used by compose.yaml without a default and .env.example does not set it", g[1])
		}
		return v
	})
}

// configDefaults reads the default of every variable from the table
// `lectern config --markdown` prints.
func configDefaults(t *testing.T) map[string]string {
	t.Helper()
	var b bytes.Buffer
	config.Markdown(&b)
	out := map[string]string{}
	row := regexp.MustCompile("^\\| `([A-Z0-9_]+)` \\| [^|]+ \\| ([^|]+) \\|")
	for _, l := range strings.Split(b.String(), "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		def := strings.TrimSpace(m[2])
		switch def {
		case "empty", "required":
			def = ""
		default:
			def = strings.Trim(def, "`")
		}
		out[m[1]] = def
	}
	require.Len(t, out, len(config.Names()))
	return out
}

func stringMap(t *testing.T, v any, what string) map[string]string {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok, "%s is not a mapping: %#v", what, v)
	out := map[string]string{}
	for k, x := range m {
		out[k] = fmt.Sprint(x)
	}
	return out
}

func TestComposeFileHoldsTheDeploymentsFacts(t *testing.T) {
	t.Parallel()
	names := config.Names()
	defaults := configDefaults(t)
	example := envExample(t)

	for variant, src := range composeVariants(t) {
		var cf composeFile
		require.NoError(t, yaml.Unmarshal([]byte(src), &cf), variant)
		internal := func(net string) bool {
			n, ok := cf.Networks[net]
			return ok && n["internal"] == true
		}
		networksOf := func(svc map[string]any) []string {
			var out []string
			for _, n := range svc["networks"].([]any) {
				out = append(out, n.(string))
			}
			return out
		}

		db := cf.Services["db"]
		require.NotNil(t, db, variant)
		require.True(t, strings.HasPrefix(db["image"].(string), "postgres:16"), db["image"])
		require.NotContains(t, db, "ports", "Postgres is published to nobody")
		require.Contains(t, fmt.Sprint(db["healthcheck"].(map[string]any)["test"]), "pg_isready")
		dbVolume, _, _ := strings.Cut(db["volumes"].([]any)[0].(string), ":")
		require.Contains(t, cf.Volumes, dbVolume, "the database lives on a named volume")
		for _, n := range networksOf(db) {
			require.True(t, internal(n), "Postgres is on internal networks only")
		}

		browser := cf.Services["browser"]
		require.NotNil(t, browser, variant)
		require.Contains(t, browser["image"], "headless-shell")
		require.NotContains(t, browser, "ports", "DevTools is never published")
		require.NotContains(t, browser, "network_mode")
		for _, n := range networksOf(browser) {
			require.True(t, internal(n), "the browser's only way out is lectern's proxy")
		}
		var flags []string
		for _, f := range browser["command"].([]any) {
			flags = append(flags, f.(string))
		}
		for _, want := range []string{"--disable-quic", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
			"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"} {
			require.Contains(t, flags, want, "the flags backend/internal/fetch/browser asks of a sidecar")
		}
		for _, f := range flags {
			require.False(t, strings.HasPrefix(f, "--remote-debugging-port") || strings.HasPrefix(f, "--proxy-server"),
				"%s: the image opens DevTools itself, and the proxy is set per browser context", f)
		}

		replicas := 0
		for name, svc := range cf.Services {
			if name != "lectern" && !strings.HasPrefix(name, "lectern-") {
				continue
			}
			replicas++
			what := variant + ": service " + name
			env := stringMap(t, svc["environment"], what+" environment")
			for k, v := range env {
				require.Contains(t, names, k, "%s passes %s, which Lectern does not read", what, k)
				for _, m := range interpolation.FindAllStringSubmatch(v, -1) {
					require.Contains(t, example, m[1], "%s: .env.example does not document %s", what, m[1])
					if _, isConfig := defaults[m[1]]; isConfig && m[2] == ":-" {
						require.Equal(t, defaults[m[1]], m[3], "%s: the default of %s differs from Lectern's", what, m[1])
					}
				}
			}
			for _, k := range config.Required("serve") {
				require.Contains(t, env, k, "%s does not pass %s, which serve requires", what, k)
			}

			// With .env.example's values, the environment is one serve accepts.
			resolved := map[string]string{}
			for k, v := range env {
				resolved[k] = interpolate(t, v, example)
			}
			cfg, err := config.Load(func(k string) (string, bool) { v, ok := resolved[k]; return v, ok }, "serve")
			require.NoError(t, err, "%s: serve refuses the environment", what)

			// The browser is the sidecar, and it is told this replica's own
			// name for the proxy, on the port the proxy listens on.
			require.Equal(t, "http://browser:9222", cfg.BrowserURL)
			host, port, err := net.SplitHostPort(cfg.BrowserProxyAddr)
			require.NoError(t, err)
			require.Equal(t, name, host, "%s: the browser must reach this replica's proxy", what)
			_, listenPort, err := net.SplitHostPort(cfg.BrowserProxyListen)
			require.NoError(t, err)
			require.Equal(t, listenPort, port)
			require.Contains(t, networksOf(svc), "browser")

			deps := svc["depends_on"].(map[string]any)
			require.Equal(t, "service_healthy", deps["db"].(map[string]any)["condition"], "%s waits for a healthy database", what)
			hc := fmt.Sprint(svc["healthcheck"].(map[string]any)["test"])
			require.Contains(t, hc, "/usr/local/bin/lectern healthcheck", "%s: the health check asks /readyz with the binary", what)
			var dataMounted bool
			for _, v := range svc["volumes"].([]any) {
				vol, target, _ := strings.Cut(v.(string), ":")
				if target == cfg.DataDir {
					require.Contains(t, cf.Volumes, vol)
					dataMounted = true
				}
			}
			require.True(t, dataMounted, "%s: DATA_DIR %s is on a volume", what, cfg.DataDir)
			grace, err := time.ParseDuration(svc["stop_grace_period"].(string))
			require.NoError(t, err)
			require.GreaterOrEqual(t, grace, 60*time.Second, "%s: a stop must outlast the graceful shutdown", what)
		}
		if strings.Contains(variant, "second replica") {
			require.Equal(t, 2, replicas)
		} else {
			require.Equal(t, 1, replicas)
		}
	}
}

// .env.example documents what compose.yaml reads from it, nothing else, and
// shows Lectern's defaults as they are.
func TestEnvExampleMatchesCompose(t *testing.T) {
	t.Parallel()
	example := envExample(t)
	defaults := configDefaults(t)
	src := readRepoFile(t, "compose.yaml")
	used := map[string]bool{}
	for _, m := range interpolation.FindAllStringSubmatch(src, -1) {
		used[m[1]] = true
	}
	for k := range used {
		require.Contains(t, example, k, ".env.example does not document %s", k)
	}
	for k, v := range example {
		require.True(t, used[k], ".env.example sets %s, which compose.yaml never reads", k)
		if def, isConfig := defaults[k]; isConfig && k != "PUBLIC_BASE_URL" {
			require.Equal(t, def, v, ".env.example shows %s with a value other than Lectern's default", k)
		}
	}
	require.Contains(t, example, "PUBLIC_BASE_URL")
	require.Contains(t, example, "POSTGRES_PASSWORD")
}

// --- docs/configuration.md --------------------------------------------------

const (
	configBegin = "<!-- BEGIN lectern config --markdown -->"
	configEnd   = "<!-- END lectern config --markdown -->"
)

// The committed table is what the configuration struct prints today. With
// UPDATE_DOCS=1 the test rewrites it instead.
func TestConfigurationDocMatchesTheStruct(t *testing.T) {
	path := filepath.Join(testenv.RepoRoot(t), "docs", "configuration.md")
	doc := readRepoFile(t, "docs/configuration.md")
	begin, end := strings.Index(doc, configBegin), strings.Index(doc, configEnd)
	require.True(t, begin >= 0 && end > begin, "docs/configuration.md has no generated section")
	var want bytes.Buffer
	code, out, _ := runCmd(t, nil, "", "config", "--markdown")
	require.Equal(t, 0, code)
	want.WriteString(out)
	got := doc[begin+len(configBegin)+1 : end]
	if os.Getenv("UPDATE_DOCS") == "1" {
		doc = doc[:begin+len(configBegin)+1] + want.String() + doc[end:]
		require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
		return
	}
	require.Equal(t, want.String(), got, "docs/configuration.md is stale: run UPDATE_DOCS=1 go test -run TestConfigurationDocMatchesTheStruct ./backend/cmd/lectern")
	for _, name := range config.Names() {
		require.Contains(t, got, "`"+name+"`")
	}
}

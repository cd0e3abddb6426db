// Package archtest holds the architecture test: the import rules between
// Lectern's packages (docs/architecture.md), checked on the import graph
// that `go list -deps -json` reports, and the package table of that page
// checked against the packages that exist.
//
// The graph comes from the go command rather than from
// golang.org/x/tools/go/packages: go list already knows every build rule
// (tags, test files, the module graph), the test needs nothing it does not
// print, and it adds no dependency to the module.
package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lectern-reader/lectern/backend/internal/testenv"
)

// module is the module path; own names a package under backend/internal.
const module = "github.com/lectern-reader/lectern"

const internalPrefix = module + "/backend/internal/"

func own(rel string) string { return internalPrefix + rel }

// A pattern names packages: an import path, or a path ending in "/..."
// for it and every package below it.
func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchesAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, path) })
}

// rule forbids the packages From names (minus Except) to reach the
// packages Forbid names.
type rule struct {
	Name   string
	From   []string
	Except []string
	Forbid []string
	// ViaOwn limits the rule to imports made by the bound packages or by
	// our own packages they reach: a third-party library may use net/http
	// (chromedp does), our code on that side may not.
	ViaOwn bool
	// Direct limits the rule to the bound packages' own imports: for a rule
	// that binds every package, each bad import is then reported once,
	// where it is made.
	Direct bool
	// Tests binds the packages' _test.go files too; TestAllow lifts single
	// forbidden packages for one package's test files.
	Tests     bool
	TestAllow map[string][]string
	Why       string
}

// testSupport are the packages only _test.go files import.
var testSupport = []string{
	own("latest/latesttest"), own("imagetype/imagetest"), own("metrics/metricstest"), own("pgtest"), own("testenv"), own("apptest"),
	own("tracker/trackertest"), own("s3test"),
}

// rules are the allowed arrows of docs/architecture.md, stated as what
// each side must never reach.
var rules = []rule{
	{
		Name:   "latest is the Site registry only",
		From:   []string{own("latest/...")},
		Except: []string{own("latest/latesttest")},
		Forbid: []string{own("store"), "github.com/riverqueue/...", own("poll"), own("schedule"), "github.com/jackc/...", own("fetch/...")},
		Why:    "a Site's answers are pure functions of a body: the registry knows no database, queue, plan or fetcher (docs/adr/0004)",
	},
	{
		Name:   "latest makes no request of its own",
		From:   []string{own("latest/...")},
		Except: []string{own("latest/latesttest")},
		Forbid: []string{"net/http"},
		ViaOwn: true,
		Why:    "an override fetches only through the PageFetcher it is handed, pinned and paced by fetch; chromedp's own use of net/http is allowed",
	},
	{
		Name:   "store is SQL only",
		From:   []string{own("store")},
		Forbid: []string{"net/http", "html/template"},
		ViaOwn: true,
		Why:    "the store answers queries; serving and rendering belong to api, web and cover",
	},
	{
		Name:   "api does not reach web",
		From:   []string{own("api")},
		Forbid: []string{own("web")},
		Why:    "the JSON API and the web UI are two surfaces over the same services; server composes them",
	},
	{
		Name:   "web does not reach api",
		From:   []string{own("web")},
		Forbid: []string{own("api")},
		Why:    "the JSON API and the web UI are two surfaces over the same services; server composes them",
	},
	{
		Name:   "fetch knows no store and no Cover",
		From:   []string{own("fetch/...")},
		Forbid: []string{own("store"), own("cover")},
		Tests:  true,
		// The pacing gate's tests run it over the store's Slots on a real
		// Postgres: the store implements the interface pacing declares.
		TestAllow: map[string][]string{own("fetch/pacing"): {own("store")}},
		Why:       "the fetch tree reads back-off and slots through interfaces it declares; the store and the Cover job depend on it, never the reverse",
	},
	{
		Name:   "test support stays in tests",
		From:   []string{module + "/..."},
		Except: testSupport,
		Forbid: testSupport,
		Direct: true,
		Why:    "fakes, fresh databases and fixture finders are for _test.go files only",
	},
}

// edge is one import: From imports To.
type edge struct{ From, To string }

// knownViolations are imports that break a rule today. Each is skipped by
// the rules, says why it exists, and fails the test once it is gone, so
// the entry is deleted with the import.
var knownViolations = map[edge]string{}

// pkg is what the test reads of `go list -json`.
type pkg struct {
	ImportPath   string
	Dir          string
	Standard     bool
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

func (p *pkg) own() bool { return matches(module+"/...", p.ImportPath) }

// graph is the import graph of the module and everything it depends on.
type graph map[string]*pkg

var listFields = "ImportPath,Dir,Standard,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,Imports,TestImports,XTestImports,Error"

// loadGraph runs go list over the whole module from the repository root.
func loadGraph(t *testing.T) graph {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the architecture test needs the go command on PATH: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-deps", "-json="+listFields, "./...")
	cmd.Dir = testenv.RepoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -json ./...: %v\n%s", err, stderr.String())
	}
	g, err := decodeGraph(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func decodeGraph(r io.Reader) (graph, error) {
	g := graph{}
	dec := json.NewDecoder(r)
	for {
		var p pkg
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return g, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		g[p.ImportPath] = &p
	}
}

func (g graph) paths() []string {
	out := make([]string, 0, len(g))
	for path := range g {
		out = append(out, path)
	}
	slices.Sort(out)
	return out
}

// violation is a forbidden package reached from a bound package, with the
// shortest import path that leads there.
type violation struct {
	rule rule
	path []string
	test bool // the first import is made by a _test.go file
}

// check returns every forbidden package r lets a bound package reach,
// each by its shortest path. The search does not go past a forbidden
// package, so one bad import is reported once, not with all it brings; and
// the search from test files only reports what production code does not
// already reach.
func (g graph) check(r rule, known map[edge]string) []violation {
	var out []violation
	for _, from := range g.paths() {
		if !matchesAny(r.From, from) || matchesAny(r.Except, from) {
			continue
		}
		p := g[from]
		vs, seen := g.reach(r, from, p.Imports, nil, nil, known)
		out = append(out, vs...)
		if r.Tests {
			testImports := append(slices.Clone(p.TestImports), p.XTestImports...)
			vs, _ := g.reach(r, from, testImports, r.TestAllow[from], seen, known)
			for i := range vs {
				vs[i].test = true
			}
			out = append(out, vs...)
		}
	}
	return out
}

// reach searches breadth first from from's first imports, past the
// packages already seen, and returns what it found and every package it
// reached.
func (g graph) reach(r rule, from string, first, allowed []string, seen map[string]string, known map[edge]string) ([]violation, map[string]string) {
	forbidden := func(path string) bool {
		return matchesAny(r.Forbid, path) && !matchesAny(allowed, path)
	}
	parent := map[string]string{from: ""}
	var queue []string
	var out []violation
	visit := func(by, path string) {
		if _, ok := parent[path]; ok {
			return
		}
		if _, ok := seen[path]; ok {
			return
		}
		if _, ok := known[edge{by, path}]; ok {
			return
		}
		parent[path] = by
		if forbidden(path) {
			out = append(out, violation{rule: r, path: trail(parent, path)})
			return
		}
		if p := g[path]; p != nil && !r.Direct && (!r.ViaOwn || p.own()) {
			queue = append(queue, path)
		}
	}
	for _, imp := range first {
		visit(from, imp)
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, imp := range g[cur].Imports {
			visit(cur, imp)
		}
	}
	return out, parent
}

func trail(parent map[string]string, last string) []string {
	var out []string
	for p := last; p != ""; p = parent[p] {
		out = append(out, p)
	}
	slices.Reverse(out)
	return out
}

// describe names the importer, the forbidden package, why, and each import
// on the way with the file that makes it.
func (g graph) describe(v violation) string {
	var b strings.Builder
	from, to := v.path[0], v.path[len(v.path)-1]
	fmt.Fprintf(&b, "%s: %s must not ", v.rule.Name, short(from))
	switch {
	case v.rule.Direct:
		fmt.Fprintf(&b, "import %s", short(to))
	case v.rule.ViaOwn:
		fmt.Fprintf(&b, "import %s, itself or through our own packages", short(to))
	default:
		fmt.Fprintf(&b, "depend on %s", short(to))
	}
	if v.test {
		b.WriteString(", not even in its _test.go files")
	}
	fmt.Fprintf(&b, ".\n  Why: %s.\n  Import path:\n", v.rule.Why)
	for i := 0; i+1 < len(v.path); i++ {
		fmt.Fprintf(&b, "    %s imports %s", short(v.path[i]), short(v.path[i+1]))
		if file := g.fileImporting(v.path[i], v.path[i+1], v.test && i == 0); file != "" {
			fmt.Fprintf(&b, " (%s)", file)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (g graph) describeAll(vs []violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = g.describe(v)
	}
	return out
}

// short drops the module prefix of our own packages.
func short(path string) string {
	if rel, ok := strings.CutPrefix(path, module+"/"); ok {
		return rel
	}
	return path
}

// fileImporting names the first file of importer that imports path,
// relative to the repository; "" for a package outside the module.
func (g graph) fileImporting(importer, path string, test bool) string {
	p := g[importer]
	if p == nil || !p.own() {
		return ""
	}
	files := append(slices.Clone(p.GoFiles), p.CgoFiles...)
	if test {
		files = append(slices.Clone(p.TestGoFiles), p.XTestGoFiles...)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for _, imp := range f.Imports {
			if v, err := strconv.Unquote(imp.Path.Value); err == nil && v == path {
				return short(importer) + "/" + name
			}
		}
	}
	return ""
}

func TestImportRules(t *testing.T) {
	g := loadGraph(t)
	for _, r := range rules {
		for _, pat := range append(slices.Clone(r.From), r.Forbid...) {
			if !matches(module+"/...", strings.TrimSuffix(pat, "/...")) {
				continue
			}
			if !slices.ContainsFunc(g.paths(), func(p string) bool { return matches(pat, p) }) {
				t.Errorf("rule %q names %s, which matches no package: a package was renamed; update the rule and docs/architecture.md", r.Name, short(pat))
			}
		}
		for _, v := range g.check(r, knownViolations) {
			t.Error(g.describe(v))
		}
	}
	for e, why := range knownViolations {
		if p := g[e.From]; p == nil || !slices.Contains(p.Imports, e.To) {
			t.Errorf("known violation %s → %s (%s) is gone: delete its entry from knownViolations", short(e.From), short(e.To), why)
		}
	}
}

// TestRulesCatchAForbiddenImport runs the rules over a made-up graph, so
// the checker itself is known to fail on a forbidden import, to name the
// whole path, and to skip only a known edge.
func TestRulesCatchAForbiddenImport(t *testing.T) {
	g := graph{}
	add := func(path string, imports ...string) {
		g[path] = &pkg{ImportPath: path, Imports: imports}
	}
	add(own("latest"), own("middle"), "github.com/chromedp/chromedp")
	add(own("middle"), own("fetch"))
	add(own("fetch"), own("store"))
	add(own("store"), "github.com/jackc/pgx/v5")
	add("github.com/chromedp/chromedp", "net/http")
	add("github.com/jackc/pgx/v5")
	add("net/http")
	add(own("web"), own("api"), own("bookmark"))
	add(own("bookmark"), own("api"))
	add(own("api"))

	got := g.check(ruleNamed(t, "latest is the Site registry only"), nil)
	if len(got) != 1 {
		t.Fatalf("want one violation (fetch; store and pgx lie behind it), got %d: %v", len(got), g.describeAll(got))
	}
	want := []string{own("latest"), own("middle"), own("fetch")}
	if !slices.Equal(got[0].path, want) {
		t.Errorf("path %v, want %v", got[0].path, want)
	}
	msg := g.describe(got[0])
	for _, s := range []string{"backend/internal/latest must not depend on backend/internal/fetch",
		"backend/internal/latest imports backend/internal/middle", "backend/internal/middle imports backend/internal/fetch"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message does not say %q:\n%s", s, msg)
		}
	}

	if got := g.check(ruleNamed(t, "latest makes no request of its own"), nil); len(got) != 0 {
		t.Errorf("net/http behind chromedp is allowed, got %v", g.describeAll(got))
	}

	known := map[edge]string{{own("web"), own("api")}: "test"}
	got = g.check(ruleNamed(t, "web does not reach api"), known)
	if len(got) != 1 || !slices.Equal(got[0].path, []string{own("web"), own("bookmark"), own("api")}) {
		t.Errorf("a known edge hides only itself: want web → bookmark → api, got %v", g.describeAll(got))
	}
}

func ruleNamed(t *testing.T, name string) rule {
	t.Helper()
	i := slices.IndexFunc(rules, func(r rule) bool { return r.Name == name })
	if i < 0 {
		t.Fatalf("no rule %q", name)
	}
	return rules[i]
}

// packageRow is a row of the package table in docs/architecture.md: the
// package's path under backend/internal in backticks, first in the row.
var packageRow = regexp.MustCompile("^\\| `([a-z0-9/]+)` \\|")

// TestArchitectureDocNamesEveryPackage keeps docs/architecture.md from going
// stale: its package table has one row per package under backend/internal,
// and no row for a package that is gone.
func TestArchitectureDocNamesEveryPackage(t *testing.T) {
	g := loadGraph(t)
	doc := filepath.Join(testenv.RepoRoot(t), "docs", "architecture.md")
	f, err := os.Open(doc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := packageRow.FindStringSubmatch(sc.Text()); m != nil {
			rows[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, path := range g.paths() {
		if rel, ok := strings.CutPrefix(path, internalPrefix); ok && !rows[rel] {
			t.Errorf("docs/architecture.md has no row for backend/internal/%s: add it to the package table (| `%s` | what it owns |)", rel, rel)
		}
	}
	for rel := range rows {
		if g[own(rel)] == nil {
			t.Errorf("docs/architecture.md has a row for %s, which is no package under backend/internal: remove or rename it", rel)
		}
	}
}

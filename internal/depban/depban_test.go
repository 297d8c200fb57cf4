// Package depban_test holds the module's house rules that the compiler
// cannot state by itself: which packages may not reach which others, even
// indirectly (the bans are data, one row each with its reason), and that
// every package opens with a doc comment. It has no code of its own and
// nothing imports it; it lists the module once with `go list` and checks the
// table against what it finds.
package depban_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const mod = "github.com/relay-llm/relay"

// Import paths a ban may name. Module packages are written relative to the
// module; a path with a dot in its first element is outside it.
const (
	pgx = "github.com/jackc/pgx/v5"

	proxy        = "internal/proxy"
	routing      = "internal/routing"
	keypool      = "internal/keypool"
	wire         = "internal/wire"
	objects      = "internal/objects"
	respstore    = "internal/respstore"
	store        = "internal/store"
	loader       = "internal/loader"
	usage        = "internal/usage"
	capture      = "internal/capture"
	ratelimit    = "internal/ratelimit"
	translator   = "internal/translator"
	canonical    = "internal/canonical"
	controlapi   = "internal/controlapi"
	mcpgw        = "internal/mcpgw"
	configfile   = "internal/configfile"
	mockupstream = "internal/mockupstream"
	upstream     = "internal/upstream"
	profile      = "internal/profile"
	ui           = "ui"
	relay        = "cmd/relay"
)

// ban says that none of the packages may depend on any of forbidden, directly
// or not, and that their non-test files name none of uses. A forbidden path
// covers the packages below it too. A use is an import path and an
// identifier of it, "net/http.Transport", or "path.*" for any of them:
// what a dependency ban cannot say when the package itself must stay (the
// proxy serves HTTP, so it links net/http and all net/http links).
type ban struct {
	packages  []string
	forbidden []string
	uses      []string
	why       string
}

// bans is the table: one row per rule, with its reason.
func bans() []ban {
	// hotPath is what runs on every inference request.
	hotPath := []string{proxy, routing, keypool, wire, objects, respstore, mcpgw}
	return []ban{
		{
			packages:  hotPath,
			forbidden: []string{pgx, store, loader, usage},
			why:       "the inference plane serves from the in-memory snapshot and must keep serving while Postgres is down; records leave it through event and the writers cmd/relay wires in",
		},
		{
			packages:  []string{ratelimit},
			forbidden: []string{pgx, store, loader, usage},
			why:       "the limiter runs on the request path and counts in Redis or in memory, never in Postgres",
		},
		{
			packages:  []string{ratelimit},
			forbidden: []string{proxy, translator, canonical, upstream, mcpgw},
			why:       "the limiter does not reach into the handler: it sees a request through internal/admission, the seam the proxy calls",
		},
		{
			packages:  hotPath,
			forbidden: []string{controlapi, ui, configfile},
			why:       "the inference plane does not link the control plane or its console: both read the same snapshot, and cmd/relay wires them side by side",
		},
		{
			packages:  []string{translator, canonical},
			forbidden: []string{pgx, store, loader, proxy},
			why:       "translation is pure: bytes in one shape to bytes in another, with no database and no knowledge of how the request is forwarded",
		},
		{
			packages:  []string{canonical},
			forbidden: []string{mod},
			why:       "the canonical protocol is the leaf every shape translates through; it imports no Relay package",
		},
		{
			packages:  []string{controlapi, ui},
			forbidden: []string{proxy, translator, canonical, routing, keypool, ratelimit, mockupstream},
			why:       "the control plane and its console do not link the inference plane: they take the route explain and the breakers as values, which cmd/relay builds with internal/bridge from the router and the key pool",
		},
		{
			packages:  []string{usage, capture},
			forbidden: []string{proxy},
			why:       "the writers take event records from the proxy; they do not import the proxy",
		},
		{
			packages:  []string{configfile},
			forbidden: []string{pgx, store, controlapi},
			why:       "relay apply reaches Relay through the generated API client alone (its test helper configfiletest may start a server)",
		},
		{
			packages: slices.Concat(hotPath, []string{translator, canonical, ratelimit, profile}),
			uses: []string{
				"net/http.Transport", "net/http.DefaultTransport", "net/http.Client", "net/http.DefaultClient",
				"net/http.Get", "net/http.Post", "net/http.Head", "net/http.PostForm",
				"net/http/httptrace.*", "golang.org/x/net/http2.*",
			},
			why: "upstream requests go through internal/upstream's one Transport (each host's connect timeout, the egress guard at the dial, both clients under the behaviour suite); a client built beside it would skip all three (profile's token requests to Entra and Google included)",
		},
		{
			packages:  []string{upstream},
			forbidden: []string{proxy, routing, keypool, ratelimit, translator, canonical, profile, pgx, store, loader, usage},
			why:       "the transport carries bytes: it knows no routes, keys, shapes or credentials, so the proxy's decisions cannot leak into it and it can be tested alone",
		},
		{
			packages:  []string{relay},
			forbidden: []string{"internal/poll", "internal/pgtest", "internal/redistest", "internal/clienttest", "internal/configfile/configfiletest"},
			why:       "the test helpers stay out of the binary",
		},
	}
}

// pkg is what `go list -json` says of one package, the fields used here.
type pkg struct {
	ImportPath   string
	Dir          string
	Doc          string
	Deps         []string
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// list runs `go list` once over the whole module.
func list(t *testing.T) []pkg {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,Doc,Deps,GoFiles,TestGoFiles,XTestGoFiles,Imports,TestImports,XTestImports", mod+"/...")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("implausible package list: %d packages", len(pkgs))
	}
	return pkgs
}

// full turns a path of the table into an import path.
func full(path string) string {
	if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
		return path
	}
	return mod + "/" + path
}

// covers reports whether the forbidden path forbids the import path.
func covers(forbidden, path string) bool {
	return path == forbidden || strings.HasPrefix(path, forbidden+"/")
}

func TestDeps_Bans(t *testing.T) {
	t.Parallel()
	pkgs := list(t)
	deps := make(map[string][]string, len(pkgs))
	dirs := make(map[string]pkg, len(pkgs))
	var everything []string
	for _, p := range pkgs {
		deps[p.ImportPath] = p.Deps
		dirs[p.ImportPath] = p
		everything = append(everything, p.ImportPath)
		everything = append(everything, p.Deps...)
	}
	for _, b := range bans() {
		for _, f := range b.forbidden {
			// A ban on a path nothing in the module imports or is proves
			// nothing: the package was renamed and the row went stale.
			if !slices.ContainsFunc(everything, func(p string) bool { return covers(full(f), p) }) {
				t.Errorf("ban on %s: no such package in the module's build (renamed?)", f)
			}
		}
		for _, p := range b.packages {
			if len(b.uses) > 0 {
				checkUses(t, dirs[full(p)], p, b)
			}
			ds, ok := deps[full(p)]
			if !ok {
				t.Errorf("ban on %s: no such package in the module", p)
				continue
			}
			for _, d := range ds {
				for _, f := range b.forbidden {
					if covers(full(f), d) {
						t.Errorf("%s imports %s, even if indirectly: %s", p, d, b.why)
					}
				}
			}
		}
	}
}

// checkUses fails for each identifier of b.uses that a non-test file of p
// names, through whatever name the file imports its package under.
func checkUses(t *testing.T, p pkg, rel string, b ban) {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		local := map[string]string{} // the name a file uses → import path
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			n := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				n = imp.Name.Name
			}
			local[n] = path
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok || local[x.Name] == "" {
				return true
			}
			if used(b.uses, local[x.Name], sel.Sel.Name) {
				t.Errorf("%s/%s:%d uses %s.%s: %s", rel, name, fset.Position(sel.Pos()).Line, local[x.Name], sel.Sel.Name, b.why)
			}
			return true
		})
	}
}

// used reports whether uses forbids the identifier name of the package path.
func used(uses []string, path, name string) bool {
	for _, u := range uses {
		if u == path+"."+name || u == path+".*" {
			return true
		}
	}
	return false
}

// One module for each job: no package of the module, tests included,
// imports the others directly (dependencies may still link them).
func TestImports_OneModuleEach(t *testing.T) {
	t.Parallel()
	banned := map[string]string{
		"gopkg.in/yaml.v3":   "YAML is go.yaml.in/yaml/v3",
		"go.yaml.in/yaml/v4": "YAML is go.yaml.in/yaml/v3 (v4 reads anchors and words type errors differently: relay apply's documents and messages would change)",
		"gopkg.in/yaml.v2":   "YAML is go.yaml.in/yaml/v3",
		"sigs.k8s.io/yaml":   "YAML is go.yaml.in/yaml/v3",
	}
	for _, p := range list(t) {
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			for b, why := range banned {
				if covers(b, imp) {
					t.Errorf("%s imports %s: %s", strings.TrimPrefix(p.ImportPath, mod+"/"), imp, why)
				}
			}
		}
	}
}

// The matcher must see what it is meant to see, or every ban passes.
func TestDeps_CoversSubpackages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		forbidden, path string
		want            bool
	}{
		{full(store), mod + "/internal/store", true},
		{full(store), mod + "/internal/store/internal/dbsqlc", true},
		{full(store), mod + "/internal/storefront", false},
		{full(pgx), "github.com/jackc/pgx/v5/pgxpool", true},
		{full(mod), mod + "/internal/wire", true},
		{full(ui), mod + "/ui", true},
		{full(ui), mod + "/uikit", false},
	} {
		if got := covers(c.forbidden, c.path); got != c.want {
			t.Errorf("covers(%q, %q) = %v, want %v", c.forbidden, c.path, got, c.want)
		}
	}
}

// The use matcher too: a ban on net/http's Transport must not catch the
// handler types every server names, and "path.*" takes the whole package.
func TestUses_Matcher(t *testing.T) {
	t.Parallel()
	uses := []string{"net/http.Transport", "net/http/httptrace.*"}
	for _, c := range []struct {
		path, name string
		want       bool
	}{
		{"net/http", "Transport", true},
		{"net/http", "Handler", false},
		{"net/http/httptrace", "WithClientTrace", true},
		{"net/http/httptest", "NewServer", false},
		{"net/httpx", "Transport", false},
	} {
		if got := used(uses, c.path, c.name); got != c.want {
			t.Errorf("used(%q, %q) = %v, want %v", c.path, c.name, got, c.want)
		}
	}
}

// Every package says what it owns in a doc comment. A package of test files
// only (a suite such as openapi/ts, or this one) says it in one of them.
func TestPackageDocs(t *testing.T) {
	t.Parallel()
	for _, p := range list(t) {
		files := p.GoFiles
		if len(files) == 0 {
			files = append(slices.Clone(p.TestGoFiles), p.XTestGoFiles...)
		}
		if !hasDoc(t, p.Dir, files) {
			t.Errorf("%s has no package doc comment", strings.TrimPrefix(p.ImportPath, mod+"/"))
		}
	}
}

func hasDoc(t *testing.T, dir string, files []string) bool {
	t.Helper()
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			return true
		}
	}
	return false
}

// The README's map names every package of the module, and names nothing that
// is not there: a package added without its row, or a row left behind by a
// move, fails here.
func TestREADME_MapsEveryPackage(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	mapped := map[string]bool{}
	inMap := false
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| where | what |") {
			inMap = true
			continue
		}
		if inMap && !strings.HasPrefix(line, "|") {
			break
		}
		if !inMap {
			continue
		}
		where, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, f := range strings.Split(where, "`")[1:] {
			f = strings.TrimSuffix(strings.TrimSpace(strings.Trim(f, ", ")), "/")
			if f == "" || strings.HasPrefix(f, "-") {
				continue
			}
			mapped[f] = true
		}
	}
	if len(mapped) < 10 {
		t.Fatalf("README: no package map found (a table headed | where | what |): %d entries", len(mapped))
	}
	for f := range mapped {
		if _, err := os.Stat(filepath.Join("../..", f)); err != nil {
			t.Errorf("README's map names %s, which is not in the repository", f)
		}
	}
	for _, p := range list(t) {
		rel := strings.TrimPrefix(p.ImportPath, mod+"/")
		if !mapped[rel] {
			t.Errorf("README's map has no row for %s (%s)", rel, firstSentence(p.Doc))
		}
	}
}

func firstSentence(doc string) string {
	if i := strings.Index(doc, ". "); i > 0 {
		return doc[:i+1]
	}
	return doc
}

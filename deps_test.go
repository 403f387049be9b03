// Tests that keep dsh's design honest: imports point down the layers of
// ARCHITECTURE.md, and every package documents itself exactly once.
package dsh_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/dsh-dev/dsh"

// rule forbids packages matching from to import packages matching to.
type rule struct {
	from, to string // patterns: exact path, or a prefix ending in "/..."
	why      string
}

// rules are the "may not import" rules of ARCHITECTURE.md. Test files are
// not checked: driver tests may run the conformance suite of execworld.
var rules = []rule{
	{"execworld/...", "sandbox/docker/...", "execworld never imports a driver"},
	{"execworld/...", "sandbox/native/...", "execworld never imports a driver"},
	{"execworld/...", "sandbox/host/...", "execworld never imports a driver"},
	{"web/...", "sandbox/...", "surfaces depend on execworld, never on a driver"},
	{"lsp/...", "sandbox/...", "surfaces depend on execworld, never on a driver"},
	{"mcp/bridge/...", "sandbox/...", "surfaces depend on execworld, never on a driver"},
	{"sandbox/...", "execworld/...", "imports point down: drivers sit below execworld"},
	{"netpolicy/...", "execworld/...", "netpolicy is the bottom layer"},
	{"netpolicy/...", "sandbox/...", "netpolicy is the bottom layer"},
	{"internal/config/...", "github.com/spf13/viper/...", "only cmd/dsh imports viper"},
}

// exceptions are imports the rules allow on purpose.
var exceptions = map[string]string{
	// The shipped fake backend runs local processes, which is exactly what
	// the unconfined host driver does.
	"execworld/execworldtest -> sandbox/host": "",
}

func excepted(from, imp string) bool {
	_, ok := exceptions[strings.TrimPrefix(from, module+"/")+" -> "+strings.TrimPrefix(imp, module+"/")]
	return ok
}

// allowedExternal lists, per package pattern, the only non-standard imports
// it may have. netpolicy imports only the standard library and metrics.
var allowedExternal = map[string][]string{
	"netpolicy/...": {"github.com/prometheus/..."},
}

type pkgInfo struct {
	ImportPath string
	Name       string
	Imports    []string
	Standard   bool
}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Name,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// match reports whether path matches pattern; module-relative patterns are
// resolved against the module path.
func match(pattern, path string) bool {
	if !strings.HasPrefix(pattern, "github.com/") && !strings.HasPrefix(pattern, "golang.org/") {
		pattern = module + "/" + pattern
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// violations applies the rules to an import graph.
func violations(graph map[string][]string) []string {
	var bad []string
	for from, imports := range graph {
		for _, imp := range imports {
			for _, r := range rules {
				if match(r.from, from) && match(r.to, imp) && !excepted(from, imp) {
					bad = append(bad, fmt.Sprintf("%s imports %s: %s", from, imp, r.why))
				}
			}
			if !viperAllowed(from) && match("github.com/spf13/viper/...", imp) {
				bad = append(bad, fmt.Sprintf("%s imports %s: only cmd/dsh imports viper", from, imp))
			}
			for pat, allowed := range allowedExternal {
				if !match(pat, from) || isStandard(imp) || match(pat, imp) {
					continue
				}
				ok := false
				for _, a := range allowed {
					ok = ok || match(a, imp)
				}
				if !ok {
					bad = append(bad, fmt.Sprintf("%s imports %s: only the standard library and %v are allowed", from, imp, allowed))
				}
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func viperAllowed(pkg string) bool { return match("cmd/dsh", pkg) }

func TestImportRules(t *testing.T) {
	graph := map[string][]string{}
	for _, p := range listPackages(t) {
		graph[p.ImportPath] = p.Imports
		if p.Name == "mcp" && p.ImportPath != module+"/mcp" {
			t.Errorf("package %s is named mcp, shadowing the go-sdk's mcp package", p.ImportPath)
		}
	}
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

// TestImportRulesCatchViolations proves the checker fails on a broken graph.
func TestImportRulesCatchViolations(t *testing.T) {
	graph := map[string][]string{
		module + "/execworld":       {module + "/sandbox/docker"},
		module + "/netpolicy":       {"net", "github.com/prometheus/client_golang/prometheus", "golang.org/x/net/idna"},
		module + "/web":             {module + "/sandbox/native", module + "/execworld"},
		module + "/internal/config": {"github.com/spf13/viper"},
		module + "/cmd/dsh":         {"github.com/spf13/viper", module + "/sandbox/docker"},
	}
	got := violations(graph)
	want := []string{
		module + "/execworld imports " + module + "/sandbox/docker: execworld never imports a driver",
		module + "/internal/config imports github.com/spf13/viper: only cmd/dsh imports viper",
		module + "/internal/config imports github.com/spf13/viper: only cmd/dsh imports viper",
		module + "/netpolicy imports golang.org/x/net/idna: only the standard library and [github.com/prometheus/...] are allowed",
		module + "/web imports " + module + "/sandbox/native: surfaces depend on execworld, never on a driver",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

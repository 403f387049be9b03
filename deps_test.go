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
	// Patterns: an exact path, "p/..." for p and every package below it,
	// or "p/*" for every package below p but not p itself.
	from, to string
	why      string
}

// faces are execworld and the surfaces above it. They may import sandbox
// (the Spec and the types of the driver contract), nothing below it: no
// driver and no code of one, so a new driver is covered without an edit.
var faces = []string{"execworld/...", "web/...", "lsp/...", "mcp/bridge/...", "mcp/gateway/..."}

// rules are the "may not import" rules of ARCHITECTURE.md. Test files are
// not checked: driver tests may run the conformance suite of execworld.
var rules = append(facesRules(), []rule{
	{"sandbox/...", "execworld/...", "imports point down: drivers sit below execworld"},
	{"sandbox/native/nsinit/...", "sandbox/native", "the code inside the namespaces does not import the driver's host side"},
	{"netpolicy/...", "execworld/...", "netpolicy is the bottom layer"},
	{"netpolicy/...", "sandbox/...", "netpolicy is the bottom layer"},
	{"internal/config/...", "github.com/spf13/viper/...", "only cmd/dsh imports viper"},
}...)

func facesRules() []rule {
	var rs []rule
	for _, f := range faces {
		rs = append(rs, rule{f, "sandbox/*", "execworld and the surfaces may import sandbox, nothing below it"})
	}
	return rs
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

// allowedImports lists, per package pattern, the only imports beside the
// standard library it may have (packages matching the pattern itself
// aside). The policy core imports only the standard library; its proxy
// adds the core and metrics.
var allowedImports = map[string][]string{
	"netpolicy":       nil,
	"netpolicy/proxy": {"netpolicy", "github.com/prometheus/..."},
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
	if base, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(path, base+"/")
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
			for pat, allowed := range allowedImports {
				if !match(pat, from) || isStandard(imp) || match(pat, imp) {
					continue
				}
				ok := false
				for _, a := range allowed {
					ok = ok || match(a, imp)
				}
				if !ok {
					bad = append(bad, fmt.Sprintf("%s imports %s: %s imports only %s", from, imp, pat, allowedText(allowed)))
				}
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func allowedText(allowed []string) string {
	if len(allowed) == 0 {
		return "the standard library"
	}
	return "the standard library and " + strings.Join(allowed, ", ")
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

// TestImportRulesCatchViolations proves the checker fails on a broken graph
// and passes the imports the layers allow.
func TestImportRulesCatchViolations(t *testing.T) {
	graph := map[string][]string{
		module + "/execworld":             {module + "/sandbox", module + "/sandbox/docker", module + "/netpolicy/proxy"},
		module + "/execworld/conformance": {module + "/sandbox/pid1"},
		// A driver the rules have never heard of is still below sandbox.
		module + "/execworld/execworldtest": {module + "/sandbox/host", module + "/sandbox/firecracker"},
		module + "/netpolicy":               {"net", "github.com/prometheus/client_golang/prometheus", module + "/netpolicy/proxy"},
		module + "/netpolicy/proxy":         {"net", module + "/netpolicy", "github.com/prometheus/client_golang/prometheus", "golang.org/x/net/idna", module + "/sandbox"},
		module + "/web":                     {module + "/sandbox", module + "/sandbox/native", module + "/execworld"},
		module + "/mcp/bridge":              {module + "/sandbox/native/nsinit"},
		module + "/internal/config":         {"github.com/spf13/viper"},
		module + "/sandbox/native/nsinit":   {module + "/sandbox", module + "/sandbox/pid1", module + "/sandbox/native"},
		module + "/cmd/dsh":                 {"github.com/spf13/viper", module + "/sandbox/docker"},
	}
	got := violations(graph)
	face := "execworld and the surfaces may import sandbox, nothing below it"
	want := []string{
		module + "/execworld imports " + module + "/sandbox/docker: " + face,
		module + "/execworld/conformance imports " + module + "/sandbox/pid1: " + face,
		module + "/execworld/execworldtest imports " + module + "/sandbox/firecracker: " + face,
		module + "/internal/config imports github.com/spf13/viper: only cmd/dsh imports viper",
		module + "/internal/config imports github.com/spf13/viper: only cmd/dsh imports viper",
		module + "/mcp/bridge imports " + module + "/sandbox/native/nsinit: " + face,
		module + "/netpolicy imports " + module + "/netpolicy/proxy: netpolicy imports only the standard library",
		module + "/netpolicy imports github.com/prometheus/client_golang/prometheus: netpolicy imports only the standard library",
		module + "/netpolicy/proxy imports " + module + "/sandbox: netpolicy is the bottom layer",
		module + "/netpolicy/proxy imports " + module + "/sandbox: netpolicy/proxy imports only the standard library and netpolicy, github.com/prometheus/...",
		module + "/netpolicy/proxy imports golang.org/x/net/idna: netpolicy/proxy imports only the standard library and netpolicy, github.com/prometheus/...",
		module + "/sandbox/native/nsinit imports " + module + "/sandbox/native: the code inside the namespaces does not import the driver's host side",
		module + "/web imports " + module + "/sandbox/native: " + face,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

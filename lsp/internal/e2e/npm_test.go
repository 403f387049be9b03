package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/lsp"
)

// npmServer returns the preset id with its command from
// make peers's install (node is the host's, which a
// native world sees).
func npmServer(t *testing.T, id, bin string) lsp.ServerConfig {
	t.Helper()
	dir := os.Getenv("DSH_PEERS_DIR")
	if dir == "" {
		dir = "../../../.cache/peers"
	}
	p, _ := filepath.Abs(filepath.Join(dir, "lsp-npm", "node_modules", ".bin", bin))
	if _, err := os.Stat(p); err != nil {
		why := bin + " is not installed in " + dir + "/lsp-npm; run make peers (make test does)"
		if os.Getenv("DSH_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s, and DSH_REQUIRE_TOOLS=1 requires it", why)
		}
		t.Skip(why)
	}
	for _, s := range lsp.Presets() {
		if s.ID == id {
			s.Command = p
			return s
		}
	}
	t.Fatalf("no preset %s", id)
	return lsp.ServerConfig{}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func query(t *testing.T, c *lsp.Client, q lsp.Query) *lsp.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Past its readiness cap a server answers LSP_INDEXING: ask again,
	// as the error says.
	for {
		res, err := c.Query(ctx, q)
		if lsp.CodeOf(err) == lsp.CodeIndexing && ctx.Err() == nil {
			t.Logf("%v", err)
			continue
		}
		if err != nil {
			t.Fatalf("%s %s:%d:%d: %v", q.Op, q.File, q.Line, q.Column, err)
		}
		return res
	}
}

func TestTypeScriptNative(t *testing.T) {
	server := npmServer(t, "typescript", "typescript-language-server")
	g := openNative(t, []lsp.ServerConfig{server})
	writeFiles(t, g.ws, map[string]string{
		"tsconfig.json": `{"compilerOptions": {"strict": true, "module": "commonjs", "target": "es2020"}}`,
		"greet.ts":      "export function greet(name: string): string {\n  return \"hi \" + name;\n}\n",
		"main.ts":       "import { greet } from \"./greet\";\n\nconst s = \"é😀\"; greet(s);\n",
	})
	col := len([]rune(`const s = "é😀"; `)) + 1
	got := rendered(query(t, g.c, lsp.Query{Op: lsp.Definition, File: "main.ts", Line: 3, Column: col}))
	// tsserver answers a definition asked before its project loads with
	// the import binding (main.ts:1:10): the readiness gate must wait.
	if got != "greet.ts:1:17" {
		t.Errorf("definition of greet = %q, want greet.ts:1:17", got)
	}
	refs := rendered(query(t, g.c, lsp.Query{Op: lsp.References, File: "main.ts", Line: 3, Column: col}))
	if !strings.Contains(refs, "main.ts:3:"+itoa(col)) || !strings.Contains(refs, "greet.ts:1:17") {
		t.Errorf("references of greet = %q, want greet.ts:1:17 and main.ts:3:%d", refs, col)
	}
}

// TestTypeScriptDocker: the preset as it is, in the image it names
// (dsh/node, which make peers builds).
func TestTypeScriptDocker(t *testing.T) {
	var preset lsp.ServerConfig
	for _, s := range lsp.Presets() {
		if s.ID == "typescript" {
			preset = s
		}
	}
	g := openDockerImage(t, preset.Image, []lsp.ServerConfig{preset}, map[string]string{
		"tsconfig.json": `{"compilerOptions": {"strict": true, "module": "commonjs", "target": "es2020"}}`,
		"greet.ts":      "export function greet(name: string): string {\n  return \"hi \" + name;\n}\n",
		"main.ts":       "import { greet } from \"./greet\";\n\nconst s = \"é😀\"; greet(s);\n",
	})
	col := len([]rune(`const s = "é😀"; `)) + 1
	if got := rendered(query(t, g.c, lsp.Query{Op: lsp.Definition, File: "main.ts", Line: 3, Column: col})); got != "greet.ts:1:17" {
		t.Errorf("definition of greet = %q, want greet.ts:1:17", got)
	}
}

func TestPyrightNative(t *testing.T) {
	server := npmServer(t, "pyright", "pyright-langserver")
	g := openNative(t, []lsp.ServerConfig{server})
	writeFiles(t, g.ws, map[string]string{
		"shapes.py": "def area(r: float) -> float:\n    \"\"\"Area of a circle.\"\"\"\n    return 3.14 * r * r\n\n\nx = \"é😀\"; area(2.0)\n",
	})
	col := len([]rune(`x = "é😀"; `)) + 1
	got := rendered(query(t, g.c, lsp.Query{Op: lsp.Hover, File: "shapes.py", Line: 6, Column: col}))
	if !strings.Contains(got, "def area(r: float) -> float") || !strings.Contains(got, "Area of a circle.") {
		t.Errorf("hover of area = %q, want its signature and docstring", got)
	}
	def := rendered(query(t, g.c, lsp.Query{Op: lsp.Definition, File: "shapes.py", Line: 6, Column: col}))
	if def != "shapes.py:1:5" {
		t.Errorf("definition of area = %q, want shapes.py:1:5", def)
	}
}

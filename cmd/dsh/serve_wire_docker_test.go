package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/mcp/gateway"
)

// dsh serve's lsp tool in a docker world: the gopls preset, resolved in
// the image dsh/go (make images), answers a definition.
func TestServeLSPWithGoplsDocker(t *testing.T) {
	testenv.RequireDocker(t)
	const image = "dsh/go:latest"
	if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
		if os.Getenv("DSH_REQUIRE_TOOLS") == "1" {
			t.Fatalf("image %s is missing; run make images, and DSH_REQUIRE_TOOLS=1 requires it", image)
		}
		t.Skipf("image %s is missing; run make images (set DSH_REQUIRE_TOOLS=1 to make this a failure)", image)
	}
	ws := t.TempDir()
	// The image's user reads the workspace and gopls writes nothing there.
	os.Chmod(ws, 0o755)
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n",
		"a.go":   "package m\n\n// Hello greets.\nfunc Hello() string { return \"hi\" }\n",
		"b.go":   "package m\n\nfunc Use() string { s := \"é😀\"; return s + Hello() }\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs, _, stderr := startServeStdio(t, ws, "--driver", "docker", "--image", image)
	r := callTool(t, cs, "lsp", map[string]any{"operation": "definition", "file": "b.go", "line": 3, "column": 43})
	if r.IsError {
		t.Fatalf("lsp definition in a docker world: %s\n%s", resultText(r), stderr)
	}
	def := decode[gateway.LSPOutput](t, r)
	want := gateway.LSPLocation{Path: "a.go", Line: 4, Column: 6, EndLine: 4, EndColumn: 11}
	if len(def.Locations) != 1 || def.Locations[0] != want {
		t.Errorf("lsp definition in a docker world = %+v; want %+v", def, want)
	}
}

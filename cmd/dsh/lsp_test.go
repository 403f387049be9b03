package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/lsp"
)

func TestParsePosition(t *testing.T) {
	for _, tc := range []struct {
		in        string
		file      string
		line, col int
		ok        bool
	}{
		{"main.go:12:9", "main.go", 12, 9, true},
		{"c:/x/a b.go:1:1", "c:/x/a b.go", 1, 1, true},
		{"main.go:12", "", 0, 0, false},
		{"main.go:0:1", "", 0, 0, false},
		{"main.go:1:x", "", 0, 0, false},
		{":1:1", "", 0, 0, false},
	} {
		f, l, c, err := parsePosition(tc.in)
		if (err == nil) != tc.ok || f != tc.file || l != tc.line || c != tc.col {
			t.Errorf("parsePosition(%q) = %q, %d, %d, %v; want %q, %d, %d, ok %v", tc.in, f, l, c, err, tc.file, tc.line, tc.col, tc.ok)
		}
	}
}

func TestLSPServersFromConfig(t *testing.T) {
	got, err := lspServers(config.LSP{Servers: []config.LSPServer{{
		ID: "gopls", Command: "/opt/gopls", Env: []string{"GOPROXY=off"}, Extensions: map[string]string{".go": "go"},
		Settings: `{"gopls":{"usePlaceholders":true}}`, Readiness: "progress", RequestTimeout: "5s",
	}}})
	if err != nil {
		t.Fatal(err)
	}
	var mine *lsp.ServerConfig
	for i := range got {
		if got[i].ID == "gopls" {
			if mine != nil {
				t.Fatalf("two gopls servers: the configured one must replace the preset")
			}
			mine = &got[i]
		}
	}
	if mine == nil || mine.Command != "/opt/gopls" || mine.Readiness.Kind != lsp.ReadyProgress || mine.RequestTimeout.String() != "5s" {
		t.Fatalf("gopls = %+v", mine)
	}
	if b, _ := json.Marshal(mine.Settings); string(b) != `{"gopls":{"usePlaceholders":true}}` {
		t.Errorf("settings = %s: the keys' case must survive", b)
	}
}

// peerGopls is the gopls scripts/ensure-gopls.sh installed.
func peerGopls(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DSH_PEERS_DIR")
	if dir == "" {
		dir = "../../.cache/peers"
	}
	p, _ := filepath.Abs(filepath.Join(dir, "bin", "gopls"))
	if _, err := os.Stat(p); err != nil {
		why := "gopls is not installed in " + dir + "/bin; run scripts/ensure-gopls.sh (make test does)"
		if os.Getenv("DSH_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s, and DSH_REQUIRE_TOOLS=1 requires it", why)
		}
		t.Skip(why)
	}
	return p
}

func TestLSPCommand(t *testing.T) {
	testenv.RequireUserNS(t)
	gopls := peerGopls(t)
	bin := staticDsh(t)
	ws := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n",
		"a.go":   "package m\n\n// Hello greets.\nfunc Hello() string { return \"hi\" }\n",
		"b.go":   "package m\n\nfunc Use() string { s := \"é😀\"; return s + Hello() }\n",
		"dsh.yaml": `lsp:
  servers:
    - id: go
      command: ` + gopls + `
      extensions: {".go": go}
      env: [PATH=/usr/local/go/bin:/usr/bin:/bin, GOPROXY=off, GOFLAGS=, GOTOOLCHAIN=local, GOCACHE=/tmp/c, GOPATH=/tmp/p]
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--config", filepath.Join(ws, "dsh.yaml"), "lsp"}, args...)...)
		cmd.Dir = ws
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"definition", "--json", "b.go:3:43"},
			`{"kind":"locations","locations":[{"path":"a.go","line":4,"column":6,"end_line":4,"end_column":11}]}`, 0},
		{[]string{"references", "--json", "--workspace", ws, filepath.Join(ws, "b.go") + ":3:43"},
			`{"kind":"locations","locations":[{"path":"a.go","line":4,"column":6,"end_line":4,"end_column":11},{"path":"b.go","line":3,"column":43,"end_line":3,"end_column":48}]}`, 0},
		{[]string{"references", "b.go:3:43"}, "a.go:4:6\nb.go:3:43", 0},
		{[]string{"hover", "b.go:3:43"}, "func Hello() string", 0},
		{[]string{"definition", "--json", "notes.txt:1:1"}, `"code":"LSP_UNAVAILABLE"`, 1},
		{[]string{"definition", "--json", "b.go:9:1"}, `"code":"LSP_INVALID_POSITION"`, 1},
		{[]string{"definition", "b.go:9"}, "", 2},
	} {
		out, errOut, code := run(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("dsh lsp %s = exit %d, %q (stderr %q); want exit %d and %q", strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.want)
		}
	}
}

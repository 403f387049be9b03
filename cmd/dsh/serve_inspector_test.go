package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// inspectorEnv names the MCP Inspector's CLI (npm's
// @modelcontextprotocol/inspector, bin mcp-inspector-cli), installed
// before the tests outside any world; if unset, the one
// make peers installed (make test runs it).
const inspectorEnv = "DSH_INSPECTOR_CLI"

// inspectorCLI finds the Inspector's CLI; missing, the test skips, or
// fails under DSH_REQUIRE_TOOLS=1.
func inspectorCLI(t *testing.T) string {
	t.Helper()
	if cli := os.Getenv(inspectorEnv); cli != "" {
		return cli
	}
	dir := os.Getenv("DSH_PEERS_DIR")
	if dir == "" {
		dir = "../../.cache/peers"
	}
	cli, _ := filepath.Abs(filepath.Join(dir, "mcp-npm", "node_modules", ".bin", "mcp-inspector-cli"))
	if _, err := os.Stat(cli); err != nil {
		why := "the MCP Inspector is not installed in " + dir + "/mcp-npm; run make peers (make test does), or set $" + inspectorEnv
		if os.Getenv("DSH_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s, and DSH_REQUIRE_TOOLS=1 requires it", why)
		}
		t.Skip(why)
	}
	return cli
}

// inspector runs the MCP Inspector CLI with args and returns its JSON
// answer.
func inspector(t *testing.T, args ...string) map[string]any {
	t.Helper()
	cli := inspectorCLI(t)
	cmd := exec.Command(cli, append([]string{"--cli"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the inspector hung: %v", args)
	}
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("inspector %v: %v\n%s\n%s", args, err, out, stderr)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspector answer %s: %v", out, err)
	}
	return v
}

// inspectorText is the text content of a tools/call answer.
func inspectorText(v map[string]any) string {
	var b strings.Builder
	cs, _ := v["content"].([]any)
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// checkWithInspector lists the tools of one dsh serve and makes the
// acceptance calls, target being the inspector's way to reach it.
func checkWithInspector(t *testing.T, ws string, target []string) {
	t.Helper()
	list := inspector(t, append(target, "--method", "tools/list")...)
	tools, _ := list["tools"].([]any)
	var names []string
	for _, tool := range tools {
		m, _ := tool.(map[string]any)
		name, _ := m["name"].(string)
		names = append(names, name)
	}
	for _, want := range []string{"exec", "read_file", "write_file", "edit_file", "list_dir", "web_fetch", "web_search", "status"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	call := func(args ...string) map[string]any {
		return inspector(t, append(append(target, "--method", "tools/call"), args...)...)
	}
	ex := inspectorText(call("--tool-name", "exec", "--tool-arg", "command=id; cat /proc/self/status"))
	if !regexp.MustCompile(`(?m)^CapEff:\s+0+$`).MatchString(ex) || !regexp.MustCompile(`(?m)^NoNewPrivs:\s+1$`).MatchString(ex) {
		t.Errorf("exec through the inspector:\n%s", ex)
	}
	call("--tool-name", "write_file", "--tool-arg", "path=inspected.txt", "--tool-arg", "content=written by the inspector")
	if b, err := os.ReadFile(filepath.Join(ws, "inspected.txt")); err != nil || string(b) != "written by the inspector" {
		t.Errorf("write_file through the inspector: %q, %v", b, err)
	}
	rd := call("--tool-name", "read_file", "--tool-arg", "path=inspected.txt")
	if inspectorText(rd) != "written by the inspector" {
		t.Errorf("read_file through the inspector: %v", rd)
	}
	f := call("--tool-name", "web_fetch", "--tool-arg", "url=http://127.0.0.1:1/")
	if f["isError"] != true || !strings.Contains(inspectorText(f), "NET_DENIED") || !strings.Contains(inspectorText(f), "loopback address") {
		t.Errorf("web_fetch of a loopback address through the inspector: %v", f)
	}
}

func TestServeInspectorStdio(t *testing.T) {
	requireNativeServe(t)
	ws := t.TempDir()
	checkWithInspector(t, ws, []string{staticDsh(t), "serve", "--workspace", ws, "--audit", "off"})
}

func TestServeInspectorHTTP(t *testing.T) {
	requireNativeServe(t)
	inspectorCLI(t)
	ws := t.TempDir()
	// Loopback: the inspector has no header option, so no token.
	url, _ := startServeHTTP(t, ws, nil)
	checkWithInspector(t, ws, []string{url, "--transport", "http"})
}

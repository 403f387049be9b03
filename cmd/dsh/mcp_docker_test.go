package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/testenv"
)

// The filesystem server in docker worlds (image dsh/node, built by
// scripts/ensure-npm-peers.sh): told it may read /, it still cannot read
// the host credential, sees no workspace with workspace none, and
// reads and writes it with rw.
func TestMCPFilesystemServerDocker(t *testing.T) {
	testenv.RequireDocker(t)
	const image = "dsh/node:latest"
	if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
		if os.Getenv("DSH_REQUIRE_TOOLS") == "1" {
			t.Fatalf("image %s is missing; run scripts/ensure-npm-peers.sh, and DSH_REQUIRE_TOOLS=1 requires it", image)
		}
		t.Skipf("image %s is missing; run scripts/ensure-npm-peers.sh (set DSH_REQUIRE_TOOLS=1 to make this a failure)", image)
	}
	cred, err := os.CreateTemp("/var/tmp", "dsh-bridge-cred-")
	if err != nil {
		t.Fatal(err)
	}
	cred.WriteString("TOP-SECRET")
	cred.Close()
	t.Cleanup(func() { os.Remove(cred.Name()) })
	ws, err := os.MkdirTemp("/var/tmp", "dsh-bridge-ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ws) })
	// The image's user must be able to write it: this is about the
	// mount, not about identities.
	os.Chmod(ws, 0o777)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("workspace file"), 0o644)
	t.Chdir(ws)
	script := "/opt/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
	server := func(name, workspace string) config.MCPServer {
		return config.MCPServer{Name: name, Command: "node", Args: []string{script, "/"},
			World: config.MCPWorld{Driver: "docker", Image: image, Workspace: workspace}}
	}
	b := nativeBridge(t, nil, server("none", "none"), server("rw", "rw"))

	for _, name := range []string{"none", "rw"} {
		res, err := mcpCall(t, b, "mcp__"+name+"__read_text_file", `{"path":"`+cred.Name()+`"}`)
		if err == nil || strings.Contains(res.Text, "TOP-SECRET") {
			t.Errorf("%s: the host credential was read: %+v, %v", name, res, err)
		}
	}
	notes := filepath.Join(ws, "notes.txt")
	if res, err := mcpCall(t, b, "mcp__none__read_text_file", `{"path":"`+notes+`"}`); err == nil || strings.Contains(res.Text, "workspace file") {
		t.Errorf("workspace none: the workspace was readable: %+v, %v", res, err)
	}
	if res, err := mcpCall(t, b, "mcp__rw__read_text_file", `{"path":"`+notes+`"}`); err != nil || res.Text != "workspace file" {
		t.Errorf("workspace rw: reading the workspace = %+v, %v", res, err)
	}
	out := filepath.Join(ws, "written.txt")
	if _, err := mcpCall(t, b, "mcp__rw__write_file", `{"path":"`+out+`","content":"from the server"}`); err != nil {
		t.Errorf("workspace rw: writing = %v", err)
	}
	if got, _ := os.ReadFile(out); string(got) != "from the server" {
		t.Errorf("workspace rw: the file written holds %q", got)
	}
}

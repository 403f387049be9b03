package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func TestImportMCP(t *testing.T) {
	claude := `{"mcpServers": {
	  "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_TOKEN": "ghp_literal"}},
	  "my.files": {"command": "node", "args": ["fs.js", "/"], "env": {"ROOT": "${HOME}"}},
	  "web": {"type": "http", "url": "http://127.0.0.1:3000/mcp", "headers": {"Authorization": "Bearer x"}},
	  "off": {"command": "x", "disabled": true}
	}}`
	codex := `
[mcp_servers.weather]
command = "weather-mcp"
args = ["--units", "si"]
env = { API_KEY = "k" }
`
	for _, tt := range []struct {
		file, data string
		want       []MCPServer
	}{
		{"claude_desktop_config.json", claude, []MCPServer{
			{Name: "github", Transport: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}, Env: SecretEnv{"GITHUB_TOKEN=${GITHUB_TOKEN}"}, World: MCPWorld{Workspace: "none"}},
			{Name: "my-files", Transport: "stdio", Command: "node", Args: []string{"fs.js", "/"}, Env: SecretEnv{"ROOT=${HOME}"}, World: MCPWorld{Workspace: "none"}},
			{Name: "web", Transport: "http", URL: "http://127.0.0.1:3000/mcp", Headers: SecretHeaders{"Authorization": "${WEB_AUTHORIZATION}"}, World: MCPWorld{Workspace: "none"}},
		}},
		{"config.toml", codex, []MCPServer{
			{Name: "weather", Transport: "stdio", Command: "weather-mcp", Args: []string{"--units", "si"}, Env: SecretEnv{"API_KEY=${API_KEY}"}, World: MCPWorld{Workspace: "none"}},
		}},
	} {
		got, notes, err := ImportMCP(tt.file, []byte(tt.data))
		if err != nil {
			t.Fatalf("ImportMCP(%s): %v", tt.file, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ImportMCP(%s) (-want +got):\n%s", tt.file, diff)
		}
		all := strings.Join(notes, "\n")
		for _, secret := range []string{"ghp_literal", "Bearer x", `"k"`} {
			if strings.Contains(all, secret) {
				t.Errorf("a note shows the secret %s: %s", secret, all)
			}
		}
		// What is imported validates.
		c := Default()
		c.MCP.Servers = got
		if err := c.Validate([]string{"native"}); err != nil {
			t.Errorf("imported servers do not validate: %v", err)
		}
	}
	if _, _, err := ImportMCP("x.json", []byte(`{"other":1}`)); err == nil || !strings.Contains(err.Error(), "has no MCP servers") {
		t.Errorf("ImportMCP without servers = %v", err)
	}
}

func TestImportYAMLIsAValidConfiguration(t *testing.T) {
	servers, _, err := ImportMCP("mcp.json", []byte(`{"mcpServers":{"gh":{"command":"x","args":["a"],"env":{"T":"secret-value"}},"web":{"url":"https://example.com/mcp","headers":{"X-Key":"k"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := ImportYAML(servers)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "secret-value") || strings.Contains(string(out), ": k") {
		t.Errorf("the fragment holds a secret:\n%s", out)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	if errs := CheckKeys(raw); len(errs) > 0 {
		t.Errorf("the fragment has unknown keys: %v\n%s", errs, out)
	}
}

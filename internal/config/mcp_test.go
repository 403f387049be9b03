package config

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestValidateMCPReportsEveryProblem(t *testing.T) {
	c := Default()
	c.MCP.Servers = []MCPServer{
		{Name: "ok", Command: "srv"},
		{Name: "bad.name", Command: "srv"},
		{Name: "ok", Command: "srv"},
		{Name: "h", Transport: "http", URL: "ftp://x"},
		{Name: "w", Command: "srv", Env: SecretEnv{"1BAD=x", "TOKEN=${not a ref}"},
			World: MCPWorld{Driver: "vm", Workspace: "rox", Allow: []string{"exa mple.com"}, Limits: MCPLimits{Memory: "1k"}},
			Tools: MCPTools{Deny: []string{"["}}, CallTimeout: "soon", Start: "later", Reconnect: MCPReconnect{MaxAttempts: -1}},
		{Name: "s"},
	}
	err := c.Validate([]string{"native", "docker"})
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("Validate = %v, want Errors", err)
	}
	var keys []string
	for _, e := range es {
		var ke *KeyError
		if errors.As(e, &ke) {
			keys = append(keys, ke.Key)
		}
	}
	want := []string{
		"mcp.servers[1].name", "mcp.servers[2].name", "mcp.servers[3].url",
		"mcp.servers[4].env[0]", "mcp.servers[4].env[1]", "mcp.servers[4].world.driver", "mcp.servers[4].world.workspace",
		"mcp.servers[4].world.allow[0]", "mcp.servers[4].world.limits.memory", "mcp.servers[4].tools.deny[0]",
		"mcp.servers[4].call_timeout", "mcp.servers[4].reconnect.max_attempts", "mcp.servers[4].start",
		"mcp.servers[5].command",
	}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Errorf("problem keys:\n got %q\nwant %q\n%v", keys, want, err)
	}
	if strings.Contains(err.Error(), "not a ref") && !strings.Contains(err.Error(), "${not a ref}") {
		t.Errorf("unexpected: %v", err)
	}
}

func TestCheckKeysInsideMCPServers(t *testing.T) {
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(`
mcp:
  servers:
    - name: a
      command: x
      wrold: {}
      world: {alow: []}
    - 3
`), &raw); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range CheckKeys(raw) {
		got = append(got, e.Error())
	}
	want := []string{
		`mcp.servers[0].world.alow: is not a known setting; did you mean "allow"?`,
		`mcp.servers[0].wrold: is not a known setting; did you mean "world"?`,
		`mcp.servers[1]: is not a mapping of keys`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CheckKeys:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSecretsArePrintedRedacted(t *testing.T) {
	s := MCPServer{Name: "gh", Command: "x", Env: SecretEnv{"GITHUB_TOKEN=ghp_secret", "PLAIN=${HOME}"}, Headers: SecretHeaders{"Authorization": "Bearer ghp_secret"}}
	j, _ := json.Marshal(s)
	y, _ := yaml.Marshal(s)
	for name, out := range map[string]string{"json": string(j), "yaml": string(y)} {
		if strings.Contains(out, "ghp_secret") || strings.Contains(out, "${HOME}") {
			t.Errorf("%s shows a secret: %s", name, out)
		}
		if !strings.Contains(out, "GITHUB_TOKEN=***") || !strings.Contains(out, "Authorization") {
			t.Errorf("%s lost the names: %s", name, out)
		}
	}
}

func TestExpandSecret(t *testing.T) {
	env := map[string]string{"TOKEN": "t0k"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	f := t.TempDir() + "/secret"
	os.WriteFile(f, []byte("from-file\n"), 0o600)
	for _, tt := range []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"${TOKEN}", "t0k", ""},
		{"Bearer ${TOKEN}", "Bearer t0k", ""},
		{"${file:" + f + "}", "from-file", ""},
		{"${MISSING}", "", "the host variable MISSING is not set"},
		{"${file:/nonexistent/x}", "", "reading the secret file /nonexistent/x"},
	} {
		got, err := ExpandSecret(tt.in, getenv, nil)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ExpandSecret(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ExpandSecret(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/mcp/gateway"
	"github.com/dsh-dev/dsh/workspace"
	"github.com/dsh-dev/dsh/workspace/api"
)

func mcpOptions(o *api.Options) {
	o.MCP = func(ws *workspace.Workspace) (*gateway.Options, error) {
		return &gateway.Options{Confinement: gateway.Confinement{Driver: ws.Driver, Confined: true, Egress: "deny"}}, nil
	}
}

type withToken struct {
	token string
	rt    http.RoundTripper
}

func (b *withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func (f *fixture) mcpClient(t *testing.T, name, token string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: &withToken{token, f.srv.Client().Transport}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.srv.URL + "/v1/workspaces/" + name + "/mcp", HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// The MCP endpoint of a workspace runs the dsh serve tools in that
// workspace's world, borrowed: the session gives it back, the world
// keeps running, and the workspace's files are the tools' files.
func TestMCPEndpoint(t *testing.T) {
	f := newFixture(t, mcpOptions)
	c := f.create(t, "alpha")
	other := f.create(t, "beta")
	if _, err := f.mcpClient(t, "alpha", other.Token); err == nil {
		t.Fatal("beta's token connected to alpha's MCP endpoint")
	}
	cs, err := f.mcpClient(t, "alpha", c.Token)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "hello.txt", "content": "from mcp\n"}})
	if err != nil || res.IsError {
		t.Fatalf("write_file: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "cat hello.txt"}})
	if err != nil || res.IsError {
		t.Fatalf("exec: %v %+v", err, res)
	}
	out, _ := res.StructuredContent.(map[string]any)
	stdout, _ := out["stdout"].(map[string]any)
	if out["world"] != c.Workspace.World || stdout["text"] != "from mcp\n" {
		t.Errorf("exec over MCP: %v, want world %s and the file's content", out, c.Workspace.World)
	}
	// The REST side sees the same file.
	if got := readAll(t, f.do(t, c.Token, "GET", "/v1/workspaces/alpha/files/hello.txt", nil)); got != "from mcp\n" {
		t.Errorf("REST read of the MCP-written file: %q", got)
	}
	if f.m.borrowed.Load() != 1 {
		t.Errorf("%d worlds borrowed during the session, want 1", f.m.borrowed.Load())
	}
	cs.Close()
	for deadline := time.Now().Add(10 * time.Second); f.m.borrowed.Load() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session's end did not give the world back")
		}
	}
	// The world is the workspace's still: exec over REST runs in it.
	resp := f.do(t, c.Token, "POST", "/v1/workspaces/alpha/exec", map[string]any{"argv": []string{"cat", "hello.txt"}})
	if evs := events(t, resp.Body); len(evs) != 2 || string(evs[0].Stdout) != "from mcp\n" {
		t.Errorf("exec after the MCP session: %+v", evs)
	}
	// Delete ends the sessions first (the fake fails the test if a
	// borrower still holds the world), then the endpoint is 404.
	cs2, err := f.mcpClient(t, "alpha", serverToken)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	if res, err := cs2.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "true"}}); err != nil || res.IsError {
		t.Fatalf("exec: %v", err)
	}
	if resp := f.do(t, serverToken, "DELETE", "/v1/workspaces/alpha", nil); resp.StatusCode != 204 {
		t.Fatalf("delete: %d %s", resp.StatusCode, readAll(t, resp))
	}
	wantError(t, f.do(t, serverToken, "POST", "/v1/workspaces/alpha/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}), 404, "not_found")
}

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/mcp/bridge"
)

// Streamable HTTP: a go-sdk server on loopback, allowed by IP:port,
// works through the world's Net; the same URL without the entry is
// refused before any connect.
func TestMCPStreamableHTTPAllowedByIPPort(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	var hits atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "web"}, nil)
	srv.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi over http"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); h.ServeHTTP(w, r) }))
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	t.Chdir(t.TempDir())

	b := nativeBridge(t, nil, config.MCPServer{Name: "web", Transport: "http", URL: ts.URL + "/mcp", World: config.MCPWorld{Allow: []string{addr}}})
	res, err := mcpCall(t, b, "mcp__web__hello", `{}`)
	if err != nil || res.Text != "hi over http" {
		t.Fatalf("call over Streamable HTTP = %+v, %v", res, err)
	}
	b.Close()

	before := hits.Load()
	cfg := config.Default()
	cfg.MCP.Servers = []config.MCPServer{{Name: "web", Transport: "http", URL: ts.URL + "/mcp", Required: true, Reconnect: config.MCPReconnect{Enabled: new(bool)}}}
	list, cleanup, err := mcpServers(&cfg, nil, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	denied, err := bridge.New(list, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer denied.Close()
	err = denied.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("the same URL without an allow entry: %v, want a denial", err)
	}
	if hits.Load() != before {
		t.Error("the refused server was reached")
	}
}

// A crash-looping server spends its budget: its state says why; a
// server that never answers initialize fails at its startup deadline.
func TestMCPCrashLoopAndSilentServerInNativeWorlds(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	t.Chdir(t.TempDir())
	cfg := config.Default()
	cfg.MCP.Servers = []config.MCPServer{
		{Name: "loop", Command: "/bin/sh", Args: []string{"-c", "echo 'missing API key' >&2; exit 1"},
			Reconnect: config.MCPReconnect{InitialDelay: "10ms", MaxDelay: "40ms", MaxAttempts: 3}},
		{Name: "mute", Command: "/bin/sleep", Args: []string{"60"}, StartupTimeout: "500ms", Required: true,
			Reconnect: config.MCPReconnect{Enabled: new(bool)}},
	}
	if err := cfg.Validate(driverNames()); err != nil {
		t.Fatal(err)
	}
	list, cleanup, err := mcpServers(&cfg, nil, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	b, err := bridge.New(list, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	begin := time.Now()
	err = b.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "MCP server mute") || !strings.Contains(err.Error(), "no answer within the startup timeout of 500ms") {
		t.Errorf("Start with a server that never answers: %v", err)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("Start took %v with a 500ms startup timeout", d)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := b.Status()[0]
		if st.State == "failed" {
			for _, want := range []string{"gave up after 3 reconnect attempts", "exit status 1", "missing API key"} {
				if !strings.Contains(st.Reason, want) {
					t.Errorf("reason %q lacks %q", st.Reason, want)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the crash loop was not given up: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Close()
	if pids := serverPids("/bin/sleep\x0060"); len(pids) > 0 {
		t.Errorf("the silent server's process runs after Close: %v", pids)
	}
}

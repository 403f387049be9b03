package main

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/mcp/bridge"
)

// BenchmarkMCPCallNativeVsDirect: a warm tools/call through the bridge to
// a go-sdk server in a native world, and in the same run, call by call,
// a go-sdk client talking to the same binary directly. It reports both
// p50s and their ratio (target ≤ 1.2).
func BenchmarkMCPCallNativeVsDirect(b *testing.B) {
	testenv.RequireRoot(b)
	testenv.RequireUserNS(b)
	testenv.RequireCgroups(b)
	bin := serverCopy(b)
	ctx := context.Background()
	cmd := exec.Command(bin)
	cmd.Env = []string{testServerEnv + "=1"}
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: bridge.PinnedProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()

	cfg := config.Default()
	cfg.MCP.Servers = []config.MCPServer{{Name: "go", Command: bin, Env: config.SecretEnv{testServerEnv + "=1"}, Required: true}}
	b.Chdir(b.TempDir())
	list, cleanup, err := mcpServers(&cfg, nil, io.Discard, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup()
	br, err := bridge.New(list, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	if err := br.Start(ctx); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"n":1}`)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"n": 1}}
	for range 20 {
		direct.CallTool(ctx, params)
		br.Call(ctx, "mcp__go__echo", args, nil)
	}
	testenv.Interleaved(b,
		"direct", func() error { _, err := direct.CallTool(ctx, params); return err },
		"bridge", func() error { _, err := br.Call(ctx, "mcp__go__echo", args, nil); return err })
}

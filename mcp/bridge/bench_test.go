package bridge

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallVsDirect measures a warm tools/call through the Bridge
// (the test binary as a stdio server in a world, over Running.Conn) and,
// in the same run, a go-sdk client talking to the same server binary
// directly (CommandTransport), interleaved call by call so both see the
// same machine. It reports each p50 and their ratio (target ≤ 1.2).
func BenchmarkCallVsDirect(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()

	cmd := exec.Command(exe)
	cmd.Env = []string{serverEnv + "=1"}
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: PinnedProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()

	up, _ := testCommand(b)
	br, err := New([]Server{{Name: "t", Upstream: up}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	if err := br.Start(ctx); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"n":1}`)
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"n": 1}}
	// Warm both.
	for range 20 {
		if _, err := direct.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
		if _, err := br.Call(ctx, "mcp__t__echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
	testenv.Interleaved(b,
		"direct", func() error { _, err := direct.CallTool(ctx, params); return err },
		"bridge", func() error { _, err := br.Call(ctx, "mcp__t__echo", args, nil); return err })
}

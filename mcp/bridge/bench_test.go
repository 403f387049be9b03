package bridge

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

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
	var dd, bd []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := direct.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := br.Call(ctx, "mcp__t__echo", args, nil); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		dd = append(dd, t1.Sub(t0))
		bd = append(bd, t2.Sub(t1))
	}
	b.StopTimer()
	pd, pb := p50(dd), p50(bd)
	b.ReportMetric(float64(pd.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(pb.Microseconds()), "bridge-p50-µs")
	b.ReportMetric(float64(pb)/float64(pd), "p50-ratio")
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

package main

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// BenchmarkServeExecTrue compares, in one run and interleaved so machine
// load hits every variant alike, the latency of running /bin/true:
//
//	serve-exec  tools/call exec {"argv":["/bin/true"]} over stdio to dsh serve, in a warm native world
//	dsh-run     dsh run --workspace WS -- /bin/true (a world per command)
//	bwrap       bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-all --die-with-parent /bin/true
//
// It reports p50 and p99 wall time of each in ms and the p50 ratio of
// each to bwrap (the per-command cost of a bwrap-per-command sandbox).
func BenchmarkServeExecTrue(b *testing.B) {
	testenv.RequireRoot(b)
	testenv.RequireUserNS(b)
	testenv.RequireCgroups(b)
	bwrap := testenv.RequireCommand(b, "bwrap")
	dsh := staticDsh(b)
	ws, home := b.TempDir(), b.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + home}
	cs := benchServe(b, dsh, ws, env)
	args := &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"/bin/true"}}}
	variants := []struct {
		name string
		run  func() error
	}{
		{"serve-exec", func() error {
			res, err := cs.CallTool(context.Background(), args)
			if err == nil && res.IsError {
				b.Fatalf("exec: %s", resultText(res))
			}
			return err
		}},
		{"dsh-run", func() error {
			cmd := exec.Command(dsh, "run", "--workspace", ws, "--", "/bin/true")
			cmd.Dir = ws
			cmd.Env = env
			return cmd.Run()
		}},
		{"bwrap", func() error {
			return exec.Command(bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
				"--unshare-all", "--die-with-parent", "/bin/true").Run()
		}},
	}
	times := make([][]time.Duration, len(variants))
	for i := range variants { // warm up: the world opens on the first call
		if err := variants[i].run(); err != nil {
			b.Fatalf("%s: %v", variants[i].name, err)
		}
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i, v := range variants {
			start := time.Now()
			if err := v.run(); err != nil {
				b.Fatalf("%s: %v", v.name, err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	b.StopTimer()
	p50 := map[string]float64{}
	for i, v := range variants {
		slices.Sort(times[i])
		p50[v.name] = benchMs(benchPct(times[i], 50))
		b.ReportMetric(p50[v.name], v.name+"-p50-ms")
		b.ReportMetric(benchMs(benchPct(times[i], 99)), v.name+"-p99-ms")
	}
	for _, v := range variants {
		if v.name != "bwrap" {
			b.ReportMetric(p50[v.name]/p50["bwrap"], v.name+"/bwrap-p50")
		}
	}
}

// benchServe starts dsh serve over stdio for a benchmark.
func benchServe(b *testing.B, dsh, ws string, env []string) *mcp.ClientSession {
	b.Helper()
	cmd := exec.Command(dsh, "serve", "--workspace", ws, "--audit", "off")
	cmd.Env = env
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func benchPct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[i]
}

func benchMs(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

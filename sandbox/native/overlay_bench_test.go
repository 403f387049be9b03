package native

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// BenchmarkWorkspaceOverlay compares an overlay workspace with a
// read-write one, in one run and interleaved so machine load hits every
// variant alike:
//
//	run-rw, run-overlay      dsh run [--workspace-mode overlay] -- /bin/true (open, run, change set, close)
//	warm-rw, warm-overlay    Start(/bin/true) + Wait in a world already open
//	io-rw, io-overlay        a warm sh reading a workspace file and writing one
//
// Each rw/overlay pair runs in both orders, half the iterations each.
// It reports p50 and p99 wall time in ms, and the p50 ratio of each
// overlay variant to its rw twin (target: warm ≤ 1.2).
func BenchmarkWorkspaceOverlay(b *testing.B) {
	testenv.RequireUserNS(b)
	testenv.RequireCgroups(b)
	dsh, _ := buildDsh(b)
	ws := b.TempDir()
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(ws, "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), make([]byte, 4096), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	d := New(&Options{Executable: dsh, StateDir: stateDir(b)})
	open := func(mode sandbox.WorkspaceMode) (sandbox.Instance, *sandbox.Spec) {
		spec := sandbox.DefaultSpec(ws)
		spec.WorkspaceMode = mode
		in, err := d.Open(context.Background(), spec, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { in.Close() })
		return in, spec
	}
	rw, spec := open(sandbox.WorkspaceRW)
	ov, _ := open(sandbox.WorkspaceOverlay)
	run := func(in sandbox.Instance, argv ...string) func() error {
		return func() error {
			p, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: argv, Env: spec.Env, Dir: ws})
			if err != nil {
				return err
			}
			io.Copy(io.Discard, p.Stdout())
			io.Copy(io.Discard, p.Stderr())
			_, err = p.Wait()
			return err
		}
	}
	dshRun := func(mode string) func() error {
		return func() error {
			cmd := exec.Command(dsh, "run", "--workspace", ws, "--workspace-mode", mode, "--", "/bin/true")
			cmd.Dir = ws
			return cmd.Run()
		}
	}
	ioCmd := []string{"/bin/sh", "-c", "cat fa fb fc > /dev/null; echo x > out"}
	variants := []struct {
		name string
		run  func() error
	}{
		{"run-rw", dshRun("rw")},
		{"run-overlay", dshRun("overlay")},
		{"warm-rw", run(rw, "/bin/true")},
		{"warm-overlay", run(ov, "/bin/true")},
		{"io-rw", run(rw, ioCmd...)},
		{"io-overlay", run(ov, ioCmd...)},
	}
	times := make([][]time.Duration, len(variants))
	for i := range variants {
		if err := variants[i].run(); err != nil {
			b.Fatalf("%s: %v", variants[i].name, err)
		}
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		// Each pair in both orders, half the time each: what runs after a
		// dsh run pays for its teardown.
		for j := range variants {
			i := j
			if n%2 == 1 {
				i ^= 1
			}
			v := variants[i]
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
		p50[v.name] = ms(pct(times[i], 50))
		b.ReportMetric(p50[v.name], v.name+"-p50-ms")
		b.ReportMetric(ms(pct(times[i], 99)), v.name+"-p99-ms")
	}
	for _, k := range []string{"run", "warm", "io"} {
		b.ReportMetric(p50[k+"-overlay"]/p50[k+"-rw"], k+"-overlay/rw-p50")
	}
}

package docker

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// BenchmarkWorkspaceOverlay compares an overlay workspace with a
// read-write one in the docker driver, interleaved in one run:
//
//	world-rw, world-overlay   Open + Start(true) + Wait + Close (overlay: its change set too)
//	warm-rw, warm-overlay     Start(true) + Wait in a world already open (ten per iteration)
//
// It reports p50 wall time in ms and the p50 ratio overlay/rw of each.
func BenchmarkWorkspaceOverlay(b *testing.B) {
	testenv.RequireRoot(b)
	cli := newClient(b)
	requireImage(b, cli, baseImage)
	d, err := New(&Options{InitPath: initBinary(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ws := workspace(b)
	spec := func(mode sandbox.WorkspaceMode) *sandbox.Spec {
		s := sandbox.DefaultSpec(ws)
		s.WorkspaceMode = mode
		return s
	}
	runTrue := func(in sandbox.Instance) error {
		p, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"true"}})
		if err != nil {
			return err
		}
		io.Copy(io.Discard, p.Stdout())
		io.Copy(io.Discard, p.Stderr())
		_, err = p.Wait()
		return err
	}
	warm := map[sandbox.WorkspaceMode]sandbox.Instance{}
	for _, m := range []sandbox.WorkspaceMode{sandbox.WorkspaceRW, sandbox.WorkspaceOverlay} {
		in, err := d.Open(context.Background(), spec(m), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer in.Close()
		warm[m] = in
	}
	world := func(m sandbox.WorkspaceMode) func() error {
		return func() error {
			in, err := d.Open(context.Background(), spec(m), nil)
			if err != nil {
				return err
			}
			defer in.Close()
			if err := runTrue(in); err != nil {
				return err
			}
			if ov, ok := in.(sandbox.Overlay); ok && m == sandbox.WorkspaceOverlay {
				if _, err := ov.FreezeUpper(); err != nil {
					return err
				}
			}
			return in.Close()
		}
	}
	// A warm command is cheap: ten of each per iteration, interleaved.
	variants := []struct {
		name string
		run  func() error
		reps int
	}{
		{"world-rw", world(sandbox.WorkspaceRW), 1},
		{"world-overlay", world(sandbox.WorkspaceOverlay), 1},
		{"warm-rw", func() error { return runTrue(warm[sandbox.WorkspaceRW]) }, 10},
		{"warm-overlay", func() error { return runTrue(warm[sandbox.WorkspaceOverlay]) }, 10},
	}
	times := make([][]time.Duration, len(variants))
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for j := 0; j < len(variants); j += 2 {
			for r := range variants[j].reps {
				for k := range 2 {
					i := j + k
					if (n+r)%2 == 1 { // each pair in both orders
						i = j + 1 - k
					}
					v := variants[i]
					start := time.Now()
					if err := v.run(); err != nil {
						b.Fatalf("%s: %v", v.name, err)
					}
					times[i] = append(times[i], time.Since(start))
				}
			}
		}
	}
	b.StopTimer()
	p50 := map[string]float64{}
	for i, v := range variants {
		slices.Sort(times[i])
		p50[v.name] = float64(times[i][len(times[i])/2].Microseconds()) / 1000
		b.ReportMetric(p50[v.name], v.name+"-p50-ms")
	}
	for _, k := range []string{"world", "warm"} {
		b.ReportMetric(p50[k+"-overlay"]/p50[k+"-rw"], k+"-overlay/rw-p50")
	}
}

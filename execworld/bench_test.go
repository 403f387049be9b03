package execworld_test

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
)

// BenchmarkCommandRoundTrip measures one short command in a warm world
// (start, exit, output collected, process group cleaned up) against the
// baseline of os/exec running the same program in its own process group.
// The world here runs on the fake (local processes), so the ratio is
// execworld's own overhead: validation, the confined working-directory
// lookup, environment merge, pumps and tails.
func BenchmarkCommandRoundTrip(b *testing.B) {
	argv := []string{"/bin/true"}
	b.Run("os-exec", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(argv[0])
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			if out, err := cmd.Output(); err != nil || len(out) != 0 {
				b.Fatal(err)
			}
		}
	})
	b.Run("execworld", func(b *testing.B) {
		w, _ := execworldtest.NewWorld(b, nil)
		ctx := context.Background()
		for b.Loop() {
			res, err := w.Exec.Run(ctx, &execworld.Cmd{Argv: argv})
			if err != nil || res.ExitCode() != 0 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCommandRoundTripInterleaved alternates the two in one loop, so
// that both see the same machine load (this machine is shared and noisy),
// and reports each one's time per command and their ratio.
func BenchmarkCommandRoundTripInterleaved(b *testing.B) {
	w, _ := execworldtest.NewWorld(b, nil)
	ctx := context.Background()
	base := func() {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		if _, err := cmd.Output(); err != nil {
			b.Fatal(err)
		}
	}
	world := func() {
		res, err := w.Exec.Run(ctx, &execworld.Cmd{Argv: []string{"/bin/true"}})
		if err != nil || res.ExitCode() != 0 {
			b.Fatal(err)
		}
	}
	var tBase, tWorld time.Duration
	i := 0
	for b.Loop() {
		// Alternate the order too, so neither always runs first.
		first, second := base, world
		if i%2 == 1 {
			first, second = world, base
		}
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		t2 := time.Now()
		if i%2 == 0 {
			tBase, tWorld = tBase+t1.Sub(t0), tWorld+t2.Sub(t1)
		} else {
			tWorld, tBase = tWorld+t1.Sub(t0), tBase+t2.Sub(t1)
		}
		i++
	}
	b.ReportMetric(float64(tWorld.Nanoseconds())/float64(i), "execworld-ns/cmd")
	b.ReportMetric(float64(tBase.Nanoseconds())/float64(i), "osexec-ns/cmd")
	b.ReportMetric(float64(tWorld)/float64(tBase), "ratio")
}

package execworld_test

import (
	"context"
	"os/exec"
	"syscall"
	"testing"

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

package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/execworld"
)

// checkInit: nothing a world's processes do ends its init. They signal
// PID 1 and each of its threads with everything they can send, and the
// command's own status still arrives and the world still runs commands;
// they fill tmpfs (charged to the world's memory, in no process's RSS)
// past the world's memory limit, and the result is never a silent exit 0.
func checkInit(ctx context.Context, s *suite) error {
	if err := initSignalled(ctx, s); err != nil {
		return err
	}
	return initUnderTmpfsOOM(ctx, s)
}

func initSignalled(ctx context.Context, s *suite) error {
	w, err := s.open(ctx, nil)
	if err != nil {
		return err
	}
	defer w.w.Close()
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", `"$0" siginit; "$0" forgeinit; sleep 1; exit 42`, w.probe}})
	if err != nil {
		return fmt.Errorf("after signalling PID 1 from inside, the command's status was lost: %w", err)
	}
	if bad := withPrefix(lines(res.Stdout.String()), "not-init"); len(bad) > 0 {
		return fmt.Errorf("PID 1 of the world is not a dsh init of its own (%s): the world has no pid namespace", bad[0])
	}
	if !strings.Contains(res.Stdout.String(), "kill 15 ") {
		return fmt.Errorf("the probe did not signal PID 1: exit %d, stdout %q, stderr %q", res.ExitCode(), res.Stdout.Data, res.Stderr.Data)
	}
	if res.ExitCode() != 42 {
		return fmt.Errorf("after signalling PID 1 from inside: status %d (%v), want the command's 42; stderr %q", res.ExitCode(), res.Status, res.Stderr.Data)
	}
	return alive(ctx, w)
}

func initUnderTmpfsOOM(ctx context.Context, s *suite) error {
	const limit = 64 << 20
	w, err := s.openWithMemory(ctx, limit)
	if err != nil {
		return err
	}
	defer w.w.Close()
	// 160 MB into /tmp (tmpfs in every world), in a file that is already
	// unlinked: once its writers are gone the memory is free again.
	script := `exec 3>/tmp/dsh-fill && rm /tmp/dsh-fill && head -c 160000000 /dev/zero >&3; echo "rc=$?"`
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", script}, Timeout: 60 * time.Second, Grace: time.Second})
	if err != nil {
		return fmt.Errorf("filling tmpfs past a %d MiB memory limit: %w", limit>>20, err)
	}
	out := res.Stdout.String()
	if res.TimedOut {
		return fmt.Errorf("filling tmpfs past a %d MiB memory limit stalled the world until the timeout: stdout %q", limit>>20, out)
	}
	if res.ExitCode() == 0 && (!strings.Contains(out, "rc=") || strings.Contains(out, "rc=0")) {
		return fmt.Errorf("filling tmpfs with 160 MB under a %d MiB memory limit reported success: exit 0, stdout %q, stderr %q", limit>>20, out, res.Stderr.Data)
	}
	return alive(ctx, w)
}

package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
)

// budgetLimit is the write budget of checkWriteBudget's world.
const budgetLimit = 8 << 20

// checkWriteBudget: a world writes no more than its budget
// (Spec.WriteLimit). A file in the workspace stops growing at the budget
// with EFBIG (RLIMIT_FSIZE), and so does one in /tmp; files in /tmp and
// /dev/shm together stop with ENOSPC within it. The world still runs
// commands after.
func checkWriteBudget(ctx context.Context, s *suite) error {
	w, err := s.open(ctx, func(sp *sandbox.Spec) { sp.WriteLimit = budgetLimit })
	if err != nil {
		return err
	}
	defer w.w.Close()
	max := strconv.Itoa(4 * budgetLimit)
	big := filepath.Join(w.ws, "big")
	out, err := w.probeRun(ctx, "fill", max, "one:"+big)
	if err != nil {
		return err
	}
	if err := filled(out, big, budgetLimit, "EFBIG"); err != nil {
		return fmt.Errorf("a file in the workspace under a write budget of %d MiB: %w", budgetLimit>>20, err)
	}
	if fi, err := os.Stat(big); err != nil || fi.Size() > budgetLimit {
		return fmt.Errorf("the workspace file the world wrote is %v bytes on the host (%v), above its write budget of %d", sizeOf(fi), err, budgetLimit)
	}
	os.Remove(big)
	// A directory of the world's own in /tmp (the host's, on a driver that
	// confines nothing).
	dir := "/tmp/dsh-budget-" + randHex(4)
	defer w.run(context.WithoutCancel(ctx), &execworld.Cmd{Argv: []string{"rm", "-rf", dir, "/dev/shm/" + filepath.Base(dir)}})
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"mkdir", dir, "/dev/shm/" + filepath.Base(dir)}})
	if err != nil {
		return err
	}
	if res.ExitCode() != 0 {
		return fmt.Errorf("making %s and /dev/shm/%s in the world: exit %d, %q", dir, filepath.Base(dir), res.ExitCode(), res.Stderr.Data)
	}
	out, err = w.probeRun(ctx, "fill", max, "one:"+dir+"/big")
	if err != nil {
		return err
	}
	// /tmp is smaller than the budget (it shares it with /dev/shm), so
	// the tmpfs may say ENOSPC before the rlimit says EFBIG.
	if err := filled(out, dir+"/big", budgetLimit, "EFBIG", "ENOSPC"); err != nil {
		return fmt.Errorf("a file in /tmp under a write budget of %d MiB: %w", budgetLimit>>20, err)
	}
	w.run(ctx, &execworld.Cmd{Argv: []string{"rm", "-f", dir + "/big"}})
	out, err = w.probeRun(ctx, "fill", max, "many:"+dir, "many:/dev/shm/"+filepath.Base(dir))
	if err != nil {
		return err
	}
	var total int64
	for _, p := range []string{dir, "/dev/shm/" + filepath.Base(dir)} {
		if err := filled(out, p, budgetLimit, "ENOSPC"); err != nil {
			return fmt.Errorf("files of 1 MiB in /tmp, then in /dev/shm, under a write budget of %d MiB: %w", budgetLimit>>20, err)
		}
		total += fillBytes(out, p)
	}
	if total > budgetLimit {
		return fmt.Errorf("/tmp and /dev/shm together took %d bytes under a write budget of %d:\n%s", total, budgetLimit, strings.Join(out, "\n"))
	}
	return alive(ctx, w)
}

// checkTmpfsFullBeforeMemory: a world's tmpfs mounts fill up (ENOSPC)
// before its memory limit does. Their pages are charged to the world's
// memory but to no process, so an OOM kill frees none of them: a world
// that could fill its memory with tmpfs would leave the OOM killer only
// its init. Filling /tmp, /dev/shm and System V shared memory together
// past the limit, ten times over, fails with ENOSPC each time, leaves
// nothing behind for the next round, and the world runs on. A driver
// may refuse System V shared memory outright (EPERM) instead.
func checkTmpfsFullBeforeMemory(ctx context.Context, s *suite) error {
	const limit = 64 << 20
	w, err := s.openWithMemory(ctx, limit)
	if err != nil {
		return err
	}
	defer w.w.Close()
	// Unlinked files, each alone past the limit: freed when the probe
	// exits, on every driver.
	// System V shared memory is the same kind of memory: segments the
	// probe leaves behind would stay charged to the world with no process
	// to kill, so every round must find room for its own again.
	targets := []string{"/tmp/dsh-fill-" + randHex(4), "/dev/shm/dsh-fill-" + randHex(4), "sysv-shm"}
	for i := range 10 {
		res, err := w.run(ctx, &execworld.Cmd{Argv: []string{w.probe, "fill", "100000000", "gone:" + targets[0], "gone:" + targets[1], "sysv:" + targets[2]}, Timeout: 60 * time.Second, Grace: time.Second})
		if err != nil {
			return fmt.Errorf("round %d, filling /tmp, /dev/shm and System V shared memory past a %d MiB memory limit: %w", i+1, limit>>20, err)
		}
		out := lines(res.Stdout.String())
		if res.ExitCode() != 0 || res.TimedOut {
			return fmt.Errorf("round %d, filling /tmp, /dev/shm and System V shared memory past a %d MiB memory limit: the probe ended with %v (timed out: %v), stdout %q, stderr %q; want ENOSPC from each", i+1, limit>>20, res.Status, res.TimedOut, res.Stdout.Data, res.Stderr.Data)
		}
		var total int64
		for _, p := range targets {
			if p == targets[2] && fillBytes(out, p) == 0 && filled(out, p, 0, "EPERM") == nil {
				// Refused outright (a driver that cannot bound it): none
				// of it can be left behind.
				continue
			}
			if err := filled(out, p, limit, "ENOSPC"); err != nil {
				return fmt.Errorf("round %d, filling /tmp, /dev/shm and System V shared memory past a %d MiB memory limit: %w", i+1, limit>>20, err)
			}
			n := fillBytes(out, p)
			if n < 1<<20 {
				return fmt.Errorf("round %d: only %d bytes fitted in %s (what earlier rounds left behind stays charged to the world):\n%s", i+1, n, p, strings.Join(out, "\n"))
			}
			total += n
		}
		if total >= limit {
			return fmt.Errorf("round %d: /tmp, /dev/shm and System V shared memory together took %d bytes, the whole %d MiB memory limit", i+1, total, limit>>20)
		}
		if err := alive(ctx, w); err != nil {
			return fmt.Errorf("round %d, after filling /tmp, /dev/shm and System V shared memory: %w", i+1, err)
		}
	}
	return nil
}

// filled checks the probe's "fill PATH BYTES ERRNO" line for path: at
// most max bytes, stopped by one of errnos.
func filled(out []string, path string, max int64, errnos ...string) error {
	for _, l := range out {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != "fill" || f[1] != path {
			continue
		}
		n, _ := strconv.ParseInt(f[2], 10, 64)
		if n > max {
			return fmt.Errorf("wrote %d bytes to %s, above %d (stopped by %s)", n, path, max, f[3])
		}
		for _, e := range errnos {
			if f[3] == e {
				return nil
			}
		}
		return fmt.Errorf("writing %s stopped after %d bytes with %s, want %s", path, n, f[3], strings.Join(errnos, " or "))
	}
	return fmt.Errorf("the probe said nothing of %s:\n%s", path, strings.Join(out, "\n"))
}

// fillBytes is the byte count of path's fill line, 0 without one.
func fillBytes(out []string, path string) int64 {
	for _, l := range out {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "fill" && f[1] == path {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			return n
		}
	}
	return 0
}

func sizeOf(fi os.FileInfo) any {
	if fi == nil {
		return "no"
	}
	return fi.Size()
}

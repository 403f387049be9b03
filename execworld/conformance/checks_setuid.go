package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// setuidPlants are the files the probe's setuid subcommand leaves, one
// per way of asking for a privilege bit (see internal/probe/setuid.go).
var setuidPlants = []string{
	"chmod-4755", "chmod-2755", "fchmod-6755", "fchmodat2-4755", "open-4755",
	"tmpfile-4755", "mknod-4755", "mknod-2755", "mkdir-2755", "setcap",
	"install-4755", "shell-chmod-4755",
}

// nobody is the host user that runs what a world planted.
const nobody = 65534

// No privilege bits leave a world: whatever a world does in its
// workspace (chmod, fchmod, fchmodat2, open and O_TMPFILE with a mode,
// mknod of a regular file, install -m, a security.capability xattr), no
// file there has a set-user-ID or set-group-ID bit or a file capability
// on the host, and a host user who runs one gets no identity but its own.
func checkNoPrivilegeBits(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	dir := filepath.Join(w.ws, "setuid-"+randHex(4))
	if err := os.Mkdir(dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	out, err := w.probeRun(ctx, "setuid", dir)
	if err != nil {
		return err
	}
	s.logf("in the world: %s", strings.Join(out, "; "))
	var problems []string
	ran := 0
	for _, name := range setuidPlants {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if err != nil {
			continue // refused before anything was made
		}
		st := fi.Sys().(*syscall.Stat_t)
		if bits := st.Mode & (unix.S_ISUID | unix.S_ISGID); bits != 0 {
			problems = append(problems, fmt.Sprintf("%s has mode %#o on the host (%s)", name, st.Mode&0o7777, answer(out, name)))
		}
		if n, err := unix.Lgetxattr(p, "security.capability", make([]byte, 64)); err == nil || !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ENOTSUP) {
			problems = append(problems, fmt.Sprintf("%s has a security.capability xattr on the host (%d bytes, %v; %s)", name, n, err, answer(out, name)))
		}
		if !fi.Mode().IsRegular() || fi.Size() == 0 || fi.Mode()&0o001 == 0 {
			continue
		}
		ran++
		if msg := runAsOther(ctx, p); msg != "" {
			problems = append(problems, fmt.Sprintf("%s: %s", name, msg))
		}
	}
	if ran == 0 {
		problems = append(problems, fmt.Sprintf("no planted file could be run on the host: %s", strings.Join(out, "; ")))
	}
	if len(problems) > 0 {
		return fmt.Errorf("privilege bits left the world: %s", strings.Join(problems, "\n"))
	}
	return nil
}

// runAsOther runs a planted copy of the probe on the host as another
// user (nobody, when the suite runs as root; else as the suite's own
// user, which a set-user-ID bit of the world's would change) and returns
// what is wrong with the identity it got, or "".
func runAsOther(ctx context.Context, p string) string {
	cmd := exec.CommandContext(ctx, p, "whoami")
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		uid, gid = nobody, nobody
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	}
	b, err := cmd.Output()
	if err != nil {
		return fmt.Sprintf("running it as uid %d on the host: %v", uid, err)
	}
	if want := fmt.Sprintf("euid %d egid %d", uid, gid); strings.TrimSpace(string(b)) != want {
		return fmt.Sprintf("run by uid %d on the host it says %q, want %q", uid, strings.TrimSpace(string(b)), want)
	}
	return ""
}

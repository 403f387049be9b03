package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// TestRunNoLimitsAsUnprivilegedUser: an unprivileged user who cannot write
// cgroups (this host is cgroup v1) is refused with the ways out, and
// --no-limits is the explicit one that runs confined without limits.
func TestRunNoLimitsAsUnprivilegedUser(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	dir, err := os.MkdirTemp("", "dsh-nolimits-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "dsh")
	data, err := os.ReadFile(staticDsh(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, ws} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, append([]string{"run"}, args...)...)
		cmd.Dir = ws
		// The workspace is in the home, not the home itself.
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_CONFIG_HOME=" + ws}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("dsh run %q: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}

	code, _, stderr := run("--", "true")
	if code == 0 {
		t.Skip("this host lets an unprivileged user write cgroups; nothing to opt out of")
	}
	if code != 125 || !strings.Contains(stderr, "--no-limits") {
		t.Errorf("dsh run as nobody = %d, stderr %q; want 125 naming --no-limits", code, stderr)
	}
	code, stdout, stderr := run("--no-limits", "--", "sh", "-c", "id -u; grep NoNewPrivs /proc/self/status; touch /etc/x 2>/dev/null || echo ro")
	if code != 0 {
		t.Fatalf("dsh run --no-limits as nobody = %d, stderr %q", code, stderr)
	}
	if want := "65534\nNoNewPrivs:\t1\nro\n"; stdout != want {
		t.Errorf("dsh run --no-limits as nobody printed %q, want %q (confined: own uid, no_new_privs, read-only /etc)", stdout, want)
	}
}

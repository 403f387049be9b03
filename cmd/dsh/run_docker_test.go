package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// dshDocker runs the static dsh binary (the docker driver mounts it into
// the world as PID 1, so the test binary itself cannot serve) with args in
// a fresh workspace, and checks the run left no container behind.
func dshDocker(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"run", "--driver", "docker"}, args...)...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("dsh run: %v", err)
	}
	left, lerr := exec.Command("docker", "ps", "-aq", "--filter", "label=dev.dsh.owner.pid="+strconv.Itoa(cmd.Process.Pid)).Output()
	if lerr != nil {
		t.Fatalf("docker ps: %v", lerr)
	}
	if s := strings.TrimSpace(string(left)); s != "" {
		exec.Command("docker", "rm", "-f", s).Run()
		t.Errorf("dsh run %q left containers %s", args, s)
	}
	return code, out.String(), errOut.String()
}

// TestRunDockerConfined is the acceptance check: a command run
// with --driver docker is a non-root user with no capabilities and
// no_new_privs, and exit statuses pass through.
func TestRunDockerConfined(t *testing.T) {
	testenv.RequireDocker(t)
	if out, err := exec.Command("docker", "image", "inspect", "dsh/base:latest").CombinedOutput(); err != nil {
		t.Fatalf("image dsh/base:latest: %v %s (build it with: make images)", err, out)
	}
	bin := staticDsh(t)

	code, out, errOut := dshDocker(t, bin, "--image", "dsh/base:latest", "--", "bash", "-c", "id -u; cat /proc/self/status")
	if code != 0 {
		t.Fatalf("dsh run: status %d, stderr %q", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if lines[0] == "0" || lines[0] == "" {
		t.Errorf("uid inside = %q, want a non-root user", lines[0])
	}
	for _, want := range []string{"CapEff:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("/proc/self/status inside lacks %q:\n%s", want, out)
		}
	}

	if code, _, _ := dshDocker(t, bin, "--", "bash", "-c", "exit 3"); code != 3 {
		t.Errorf("dsh run -- exit 3: status %d, want 3", code)
	}
	code, _, errOut = dshDocker(t, bin, "--image", "dsh/no-such-image:test", "--", "true")
	if code != 125 || !strings.Contains(errOut, "make images") {
		t.Errorf("dsh run with a missing image: status %d, stderr %q; want 125 naming make images", code, errOut)
	}
}

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// dockerRuns returns a fresh workspace and a maker of dsh runs of argv
// there on the docker driver (image dsh/base:latest), all sharing one
// configuration directory outside it.
func dockerRuns(t *testing.T) (ws string, run func(argv ...string) *exec.Cmd) {
	t.Helper()
	testenv.RequireDocker(t)
	if out, err := exec.Command("docker", "image", "inspect", "dsh/base:latest").CombinedOutput(); err != nil {
		t.Fatalf("image dsh/base:latest: %v %s (build it with: make images)", err, out)
	}
	bin := staticDsh(t)
	ws = t.TempDir()
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	return ws, func(argv ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"run", "--driver", "docker", "--image", "dsh/base:latest", "--"}, argv...)...)
		cmd.Dir, cmd.Env = ws, env
		return cmd
	}
}

// TestRunDockerKilledLeavesNothingAfterTheNextRun: a dsh run on the
// docker driver killed while its command runs leaves its container and
// the placeholders it made in the workspace; the next dsh run removes
// both.
func TestRunDockerKilledLeavesNothingAfterTheNextRun(t *testing.T) {
	ws, run := dockerRuns(t)
	cmd := run("sh", "-c", "echo started; sleep 60")
	startUntilStarted(t, cmd)
	if _, err := os.Lstat(filepath.Join(ws, "dsh.yaml")); err != nil {
		t.Fatalf("the running world has no placeholder for dsh.yaml (%v): this test would prove nothing", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	owner := "label=dev.dsh.owner.pid=" + strconv.Itoa(cmd.Process.Pid)

	if out, err := run("true").CombinedOutput(); err != nil {
		t.Fatalf("the next dsh run: %v: %s", err, out)
	}
	if got := testenv.DirNames(t, ws); len(got) != 0 {
		t.Errorf("the workspace after the next run holds %q, want nothing", got)
	}
	left, err := exec.Command("docker", "ps", "-aq", "--filter", owner).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	if s := strings.TrimSpace(string(left)); s != "" {
		exec.Command("docker", "rm", "-f", s).Run()
		t.Errorf("the killed dsh's container %s survived the next run", s)
	}
}

// TestRunDockerKilledAtAnyPointLeavesNothing: dsh run on the docker
// driver killed at a sweep of moments across its open, command and close
// (its world takes a few hundred milliseconds); after the next run in the
// workspace no container, network or volume of the killed ones is left,
// nor anything in the workspace.
func TestRunDockerKilledAtAnyPointLeavesNothing(t *testing.T) {
	ws, run := dockerRuns(t)
	var killed []int
	for _, d := range []time.Duration{5, 15, 30, 50, 80, 110, 140, 180, 230, 300} {
		cmd := run("true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(d * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		killed = append(killed, cmd.Process.Pid)
	}
	if out, err := run("true").CombinedOutput(); err != nil {
		t.Fatalf("the next dsh run: %v: %s", err, out)
	}
	if got := testenv.DirNames(t, ws); len(got) != 0 {
		t.Errorf("the workspace after the next run holds %q, want nothing", got)
	}
	for _, pid := range killed {
		for _, list := range [][]string{{"ps", "-aq"}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}} {
			out, err := exec.Command("docker", append(list, "--filter", "label=dev.dsh.owner.pid="+strconv.Itoa(pid))...).Output()
			if err != nil {
				t.Fatalf("docker %v: %v", list, err)
			}
			if s := strings.TrimSpace(string(out)); s != "" {
				t.Errorf("docker %v: the killed dsh %d left %s", list[0], pid, s)
			}
		}
	}
}

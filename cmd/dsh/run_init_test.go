package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// dshCommand returns the built dsh running "run --driver native
// --no-limits ARGS" as an unprivileged user (so its state directory is
// its own, /tmp/dsh-native-65534), on a fresh workspace, with no user
// configuration.
func dshCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return newDshHome(t).command(args...)
}

// dshHome is an unprivileged user's copy of the built dsh, with a
// workspace and a runtime directory that every command it makes shares.
type dshHome struct{ dir, bin, ws, run string }

const nobody = 65534

func newDshHome(t *testing.T) *dshHome {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	dir, err := os.MkdirTemp("", "dsh-initsig-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data, err := os.ReadFile(staticDsh(t))
	if err != nil {
		t.Fatal(err)
	}
	bin, ws, run := filepath.Join(dir, "dsh"), filepath.Join(dir, "ws"), filepath.Join(dir, "run")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{ws, run} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &dshHome{dir: dir, bin: bin, ws: ws, run: run}
}

// command is dsh "run --driver native --no-limits ARGS" in h's
// workspace, as the unprivileged user.
func (h *dshHome) command(args ...string) *exec.Cmd {
	cmd := exec.Command(h.bin, append([]string{"run", "--driver", "native", "--no-limits"}, args...)...)
	cmd.Dir = h.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + h.dir, "XDG_CONFIG_HOME=" + h.ws, "XDG_RUNTIME_DIR=" + h.run}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	return cmd
}

func runStatus(t *testing.T, cmd *exec.Cmd, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return cmd.ProcessState.ExitCode()
}

// startUntilStarted starts cmd, whose command prints "started" first,
// and returns once it has; cmd is killed and waited for at the test's
// end, if it still runs.
func startUntilStarted(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("first line of the command: %q, %v", line, err)
	}
}

// TestRunSignalsToInitDoNotEndTheRun: a command that signals the world's
// init still decides dsh run's status.
func TestRunSignalsToInitDoNotEndTheRun(t *testing.T) {
	cmd := dshCommand(t, "--", "sh", "-c", "kill -TERM 1; kill -SEGV 1; kill -QUIT 1; sleep 1; exit 3")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if code := runStatus(t, cmd, cmd.Run()); code != 3 {
		t.Errorf("dsh run of a command that signals PID 1, then exits 3: status %d, stderr %q; want 3", code, errOut.String())
	}
}

// TestRunInitKilledFromOutside: SIGKILL of the world's init from the host
// makes dsh run fail with 125 and say so, never exit 0.
func TestRunInitKilledFromOutside(t *testing.T) {
	cmd := dshCommand(t, "--", "sh", "-c", "echo started; sleep 60")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "started\n" {
		t.Fatalf("first line of the command: %q, %v", line, err)
	}
	// The native init is dsh's only child.
	kids := childrenOf(cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("children of dsh: %v, want the init alone", kids)
	}
	if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("dsh run did not end after its init was killed")
	}
	code := runStatus(t, cmd, err)
	msg := errOut.String()
	if code != 125 || !strings.Contains(msg, "init was lost") || !strings.Contains(msg, "killed by SIGKILL") {
		t.Errorf("dsh run after SIGKILL of its init: status %d, stderr %q; want 125, saying the init was lost and killed by SIGKILL", code, msg)
	}
}

// childrenOf lists the child pids of pid.
func childrenOf(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var kids []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, k := range strings.Fields(string(b)) {
			var n int
			fmt.Sscan(k, &n)
			kids = append(kids, n)
		}
	}
	return kids
}

// TestRunKilledLeavesTheWorkspaceToTheNextRun: a dsh run killed while
// its command runs leaves the placeholders it made where the workspace
// lacks a protected path (an empty dsh.yaml, .git, .envrc …, which the
// user's tools and dsh itself would read); the next dsh run removes them,
// and the workspace then holds what it held before the killed run.
func TestRunKilledLeavesTheWorkspaceToTheNextRun(t *testing.T) {
	h := newDshHome(t)
	if err := os.WriteFile(filepath.Join(h.ws, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() {
		t.Helper()
		cmd := h.command("--", "true")
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if code := runStatus(t, cmd, cmd.Run()); code != 0 {
			t.Fatalf("dsh run -- true: status %d, stderr %q", code, errOut.String())
		}
	}
	run()
	before := testenv.DirNames(t, h.ws) // the user's file, and dsh's own config directory

	cmd := h.command("--", "sh", "-c", "echo started; sleep 60")
	startUntilStarted(t, cmd)
	if _, err := os.Lstat(filepath.Join(h.ws, "dsh.yaml")); err != nil {
		t.Fatalf("the running world has no placeholder for dsh.yaml (%v): this test would prove nothing", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	run()
	if after := testenv.DirNames(t, h.ws); !slices.Equal(after, before) {
		t.Errorf("the workspace after the next run holds %q, want what it held before the killed run, %q", after, before)
	}
}

// TestOverlappingRunsLeaveTheWorkspaceAsItWas: two dsh runs in one
// workspace, the second started while the first runs and ending after
// it: the second reads no configuration from the first's empty dsh.yaml
// placeholder, adopts the first's placeholders (it cannot make its own
// where they are), the first cannot remove them while the second holds
// them, and the second removes them when it ends.
func TestOverlappingRunsLeaveTheWorkspaceAsItWas(t *testing.T) {
	h := newDshHome(t)
	if err := h.command("--", "true").Run(); err != nil {
		t.Fatal(err)
	}
	before := testenv.DirNames(t, h.ws)
	type running struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stderr *bytes.Buffer
	}
	start := func() running {
		t.Helper()
		cmd := h.command("--", "sh", "-c", "echo started; read x")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		startUntilStarted(t, cmd)
		return running{cmd, stdin, &errOut}
	}
	end := func(r running) {
		t.Helper()
		io.WriteString(r.stdin, "end\n")
		r.stdin.Close()
		if err := r.cmd.Wait(); err != nil {
			t.Fatalf("dsh run: %v", err)
		}
	}
	first := start()
	second := start()
	end(first)
	end(second)
	if strings.Contains(second.stderr.String(), "dsh.yaml") {
		t.Errorf("the second run read the first's placeholder as configuration: %q", second.stderr.String())
	}
	if after := testenv.DirNames(t, h.ws); !slices.Equal(after, before) {
		t.Errorf("after two overlapping runs the workspace holds %q, want what it held before, %q", after, before)
	}
}

// TestRunKilledAtAnyPointLeavesNothing: dsh run (root, with limits: a
// cgroup per world) killed at a sweep of moments across its life, from
// its package initialisation, where it begins the init, to its close;
// after the next dsh run in the same workspace nothing of the killed
// ones is left: no cgroup, no state, no placeholder.
func TestRunKilledAtAnyPointLeavesNothing(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	bin := staticDsh(t)
	ws, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() *exec.Cmd {
		cmd := exec.Command(bin, "run", "--driver", "native", "--", "/bin/true")
		cmd.Dir = ws
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		return cmd
	}
	var killed []string // "<pid>-": the prefix of their worlds' names
	for _, d := range []time.Duration{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 18, 20, 25} {
		cmd := run()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(d * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		killed = append(killed, strconv.Itoa(cmd.Process.Pid)+"-")
	}
	next := run()
	var errOut bytes.Buffer
	next.Stderr = &errOut
	if code := runStatus(t, next, next.Run()); code != 0 {
		t.Fatalf("the next dsh run: status %d, stderr %q", code, errOut.String())
	}
	if got := testenv.DirNames(t, ws); !slices.Equal(got, []string{"notes.txt"}) {
		t.Errorf("the workspace after the next run holds %q, want only the user's notes.txt", got)
	}
	left := func(dir string) []string {
		var found []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			for _, k := range killed {
				if strings.HasPrefix(e.Name(), k) {
					found = append(found, filepath.Join(dir, e.Name()))
				}
			}
		}
		return found
	}
	var leftovers []string
	for _, c := range []string{"pids", "memory", "cpu", "freezer"} {
		leftovers = append(leftovers, left(filepath.Join("/sys/fs/cgroup", c, "dsh-native"))...)
	}
	leftovers = append(leftovers, left(filepath.Join("/sys/fs/cgroup", "dsh-native"))...)
	leftovers = append(leftovers, left("/run/dsh-native")...)
	if len(leftovers) > 0 {
		t.Errorf("after the next run, left of the killed ones: %q", leftovers)
	}
}

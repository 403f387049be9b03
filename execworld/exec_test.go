package execworld_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/sandbox"
)

func run(t *testing.T, w *execworld.World, c *execworld.Cmd) *execworld.Result {
	t.Helper()
	res, err := w.Exec.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("Run(%q): %v", c.Argv, err)
	}
	return res
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// gone reports whether pid no longer runs (absent, or a zombie waiting
// for a reaper that is not us).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// waitGone polls until pid is gone; the kill is asynchronous to the
// reaping of an orphan by whatever init adopts it.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if gone(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d survived its command", pid)
}

func readPid(t *testing.T, w *execworld.World, name string) int {
	t.Helper()
	for i := 0; i < 500; i++ {
		f, err := w.FS.ReadFile(name, 64)
		if err == nil && bytes.HasSuffix(f.Data, []byte("\n")) {
			pid, err := strconv.Atoi(strings.TrimSpace(string(f.Data)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never written", name)
	return 0
}

func TestExitCodesPropagate(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	for _, c := range []struct {
		argv []string
		code int
		sig  syscall.Signal
	}{
		{sh("exit 0"), 0, 0},
		{sh("exit 7"), 7, 0},
		{sh("exit 255"), 255, 0},
		{sh("kill -TERM $$"), 128 + 15, syscall.SIGTERM},
		{sh("kill -KILL $$"), 128 + 9, syscall.SIGKILL},
	} {
		res := run(t, w, &execworld.Cmd{Argv: c.argv})
		if res.ExitCode() != c.code || res.Status.Signal != c.sig || res.TimedOut {
			t.Errorf("Run(%q) = code %d signal %v timedout %v; want %d %v", c.argv, res.ExitCode(), res.Status.Signal, res.TimedOut, c.code, c.sig)
		}
	}
}

func TestStartErrors(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	mustWrite(t, filepath.Join(w.FS.Root(), "noexec.sh"), "#!/bin/sh\necho hi\n")
	for _, c := range []struct {
		argv []string
		code int
	}{
		{[]string{"dsh-no-such-program"}, 127},
		{[]string{"./missing.sh"}, 127},
		{[]string{"./noexec.sh"}, 126},
	} {
		_, err := w.Exec.Run(context.Background(), &execworld.Cmd{Argv: c.argv})
		var se *execworld.StartError
		if !errors.As(err, &se) || se.ShellCode() != c.code {
			t.Errorf("Run(%q) error = %v; want StartError with code %d", c.argv, err, c.code)
		}
	}
	for _, c := range []*execworld.Cmd{
		{},
		{Argv: []string{""}},
		{Argv: []string{"true"}, Timeout: execworld.MaxTimeout + time.Second},
		{Argv: []string{"cat"}, StdinPipe: true},
		{Argv: []string{"true"}, Env: []string{"NOEQUALS"}},
		{Argv: []string{"true"}, Dir: "../"},
		{Argv: []string{"true"}, Dir: "noexec.sh"},
		{Argv: []string{"true"}, Dir: "/"},
	} {
		if _, err := w.Exec.Run(context.Background(), c); !errors.Is(err, execworld.ErrInvalidCmd) {
			t.Errorf("Run(%+v) error = %v; want ErrInvalidCmd", c, err)
		}
	}
}

func TestOutputTailsAreExact(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	// 100,000 numbered lines on stdout, a shorter pattern on stderr.
	script := `i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i+1)); done; echo err-tail >&2`
	var stream bytes.Buffer
	res := run(t, w, &execworld.Cmd{Argv: sh(script), MaxOutputBytes: 1000, Stdout: &stream})
	full := stream.Bytes()
	if res.Stdout.Total != int64(len(full)) || !res.Stdout.Truncated {
		t.Fatalf("stdout total %d truncated %v; streamed %d bytes", res.Stdout.Total, res.Stdout.Truncated, len(full))
	}
	if !bytes.Equal(res.Stdout.Data, full[len(full)-1000:]) {
		t.Fatalf("stdout tail is not the last 1000 streamed bytes:\n%q", res.Stdout.Data)
	}
	if !bytes.HasSuffix(full, []byte("line 19999\n")) {
		t.Fatalf("stream ends %q", full[len(full)-20:])
	}
	if string(res.Stderr.Data) != "err-tail\n" || res.Stderr.Truncated {
		t.Fatalf("stderr = %+v", res.Stderr)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("DSH_HOST_ONLY_SECRET", "leaked")
	spec := sandbox.DefaultSpec(t.TempDir())
	spec.Env = append(spec.Env, "FROM_SPEC=spec", "OVERRIDE=spec")
	w, _ := execworldtest.NewWorld(t, &execworld.Options{Spec: spec})
	res := run(t, w, &execworld.Cmd{Argv: []string{"env"}, Env: []string{"OVERRIDE=cmd", "EXPLICIT=1"}})
	got := strings.Fields(res.Stdout.String())
	want := append(sandbox.DefaultSpec("").Env, "FROM_SPEC=spec", "OVERRIDE=cmd", "EXPLICIT=1")
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("env = %q, want exactly %q", got, want)
	}
}

func TestWorkingDirectory(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	os.MkdirAll(filepath.Join(w.FS.Root(), "a", "b"), 0o755)
	os.Symlink("a/b", filepath.Join(w.FS.Root(), "ab"))
	for dir, want := range map[string]string{
		"":                                   w.FS.Root(),
		"a/b":                                w.FS.Root() + "/a/b",
		"ab":                                 w.FS.Root() + "/a/b",
		filepath.Join(w.FS.Root(), "a"):      w.FS.Root() + "/a",
		filepath.Join(w.FS.Root(), "a/../a"): w.FS.Root() + "/a",
	} {
		res := run(t, w, &execworld.Cmd{Argv: []string{"pwd"}, Dir: dir})
		if got := strings.TrimSpace(res.Stdout.String()); got != want {
			t.Errorf("pwd in Dir %q = %q, want %q", dir, got, want)
		}
	}
}

func TestStdin(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	res := run(t, w, &execworld.Cmd{Argv: []string{"cat"}, Stdin: strings.NewReader("data in\n")})
	if res.Stdout.String() != "data in\n" {
		t.Fatalf("cat with Stdin data = %q", res.Stdout.String())
	}
	// No stdin: /dev/null, so cat ends at once instead of waiting.
	res = run(t, w, &execworld.Cmd{Argv: []string{"cat"}})
	if res.Stdout.Total != 0 || res.ExitCode() != 0 {
		t.Fatalf("cat without stdin = %+v", res)
	}
	// A pipe, both ways, as a language server is driven.
	r, err := w.Exec.Start(context.Background(), &execworld.Cmd{Argv: []string{"cat"}, StdinPipe: true, StdoutPipe: true})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	for _, msg := range []string{"ping1", "ping2"} {
		if _, err := io.WriteString(r.Stdin(), msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(r.Stdout(), buf); err != nil || string(buf) != msg {
			t.Fatalf("echo of %q = %q, %v", msg, buf, err)
		}
	}
	r.Stdin().Close()
	io.Copy(io.Discard, r.Stdout())
	res, err = r.Wait()
	if err != nil || res.ExitCode() != 0 || res.Stdout.String() != "ping1ping2" {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
}

// A timeout ends the whole process group, even a leader that ignores
// SIGTERM and a child it left in the background.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	res := run(t, w, &execworld.Cmd{
		// Ignored signals are inherited: the child ignores SIGTERM too.
		Argv:    sh(`trap "" TERM; sleep 300 & echo $! > child.pid; echo started; while :; do :; done`),
		Timeout: 300 * time.Millisecond,
		Grace:   100 * time.Millisecond,
	})
	if !res.TimedOut || res.ExitCode() != execworld.TimeoutCode || res.Status.Signal != syscall.SIGKILL {
		t.Fatalf("Result = %+v (code %d); want timed out, 124, killed by SIGKILL after ignoring SIGTERM", res, res.ExitCode())
	}
	if res.Stdout.String() != "started\n" {
		t.Fatalf("output before the timeout lost: %q", res.Stdout.String())
	}
	waitGone(t, readPid(t, w, "child.pid"))
}

func TestCancelKillsTheProcessGroup(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var res *execworld.Result
	var err error
	go func() {
		defer close(done)
		res, err = w.Exec.Run(ctx, &execworld.Cmd{Argv: sh(`sleep 300 & echo $! > child.pid; wait`)})
	}()
	pid := readPid(t, w, "child.pid")
	cancel()
	<-done
	if !errors.Is(err, context.Canceled) || res == nil || !res.Canceled || res.Status.Signal != syscall.SIGTERM {
		t.Fatalf("Run after cancel = %+v, %v; want Canceled result with SIGTERM and context.Canceled", res, err)
	}
	waitGone(t, pid)
}

// Background jobs do not outlive the command that started them.
func TestExitKillsLeftovers(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	res := run(t, w, &execworld.Cmd{Argv: sh(`sleep 300 & echo $!`)})
	pid, err := strconv.Atoi(strings.TrimSpace(res.Stdout.String()))
	if err != nil {
		t.Fatalf("output %q: %v", res.Stdout.String(), err)
	}
	waitGone(t, pid)
}

func TestCloseKillsEverything(t *testing.T) {
	w, b := execworldtest.NewWorld(t, nil)
	r, err := w.Exec.Start(context.Background(), &execworld.Cmd{Argv: sh(`sleep 300 & echo $! > child.pid; exec sleep 301`)})
	if err != nil {
		t.Fatal(err)
	}
	pid := readPid(t, w, "child.pid")
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- w.Close() }()
	}
	var nilErrs, closedErrs int
	for range 3 {
		switch err := <-errs; {
		case err == nil:
			nilErrs++
		case errors.Is(err, execworld.ErrClosed):
			closedErrs++
		default:
			t.Fatalf("Close = %v", err)
		}
	}
	if nilErrs != 1 || closedErrs != 2 {
		t.Fatalf("concurrent Close: %d nil, %d ErrClosed; want 1 and 2", nilErrs, closedErrs)
	}
	res, _ := r.Wait()
	if res.Status.Signal != syscall.SIGKILL {
		t.Fatalf("running process after Close = %+v; want killed", res.Status)
	}
	waitGone(t, pid)
	if b.OpenInstances() != 0 {
		t.Fatal("instance not closed")
	}
	if _, err := w.Exec.Run(context.Background(), &execworld.Cmd{Argv: []string{"true"}}); !errors.Is(err, execworld.ErrClosed) {
		t.Fatalf("Run after Close = %v; want ErrClosed", err)
	}
}

func TestOpenLabelsAndCanonicalWorkspace(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	os.Symlink("real", filepath.Join(dir, "alias"))
	w, b := execworldtest.NewWorld(t, &execworld.Options{Spec: sandbox.DefaultSpec(filepath.Join(dir, "alias"))})
	spec := b.Specs()[0]
	real, _ := filepath.EvalSymlinks(filepath.Join(dir, "real"))
	if spec.Workspace != real || w.FS.Root() != real {
		t.Errorf("workspace = %q / %q, want the canonical %q", spec.Workspace, w.FS.Root(), real)
	}
	if ids := b.IDs(); len(ids) != 1 || ids[0] != w.ID {
		t.Errorf("the driver was given world IDs %q, want [%s]", ids, w.ID)
	}
	if spec.Egress {
		t.Error("a world without an egress policy got an egress server")
	}
	w2, _ := execworldtest.NewWorld(t, nil)
	if w.ID == w2.ID || len(w.ID) > 12 {
		t.Errorf("IDs %q and %q: want short and distinct", w.ID, w2.ID)
	}
}

func TestOpenFailureLeavesNothing(t *testing.T) {
	b := execworldtest.New()
	b.OpenErr = errors.New("engine down")
	_, err := execworld.Open(context.Background(), b, &execworld.Options{Spec: sandbox.DefaultSpec(t.TempDir())})
	if err == nil || !strings.Contains(err.Error(), "engine down") {
		t.Fatalf("Open = %v; want the backend's error", err)
	}
	if _, err := execworld.Open(context.Background(), b, &execworld.Options{Spec: sandbox.DefaultSpec("relative/dir")}); err == nil {
		t.Fatal("Open with a relative workspace succeeded")
	}
}

// A long-lived process (a language server, an MCP server) has no timeout
// unless asked, shows its output while it runs, and Stop ends it as a
// cancel does.
func TestLongLivedProcess(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	var stderr strings.Builder
	r, err := w.Exec.Start(context.Background(), &execworld.Cmd{
		Argv:      sh(`echo ready; echo diag >&2; read line; echo "got $line"; sleep 300`),
		StdinPipe: true,
		Stderr:    &syncWriter{w: &stderr},
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(want string) {
		t.Helper()
		for range 500 {
			if out, _ := r.Tail(); out.String() == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		out, _ := r.Tail()
		t.Fatalf("stdout so far %q, want %q", out.String(), want)
	}
	waitFor("ready\n")
	io.WriteString(r.Stdin(), "ping\n")
	waitFor("ready\ngot ping\n")
	select {
	case <-r.Done():
		t.Fatal("the process ended on its own")
	default:
	}
	r.Stop()
	<-r.Done()
	res, err := r.Wait()
	if err != nil || !res.Canceled || res.TimedOut || res.Status.Signal != syscall.SIGTERM {
		t.Fatalf("after Stop: %+v, %v; want canceled by SIGTERM", res, err)
	}
	if res.Stderr.String() != "diag\n" {
		t.Fatalf("stderr tail %q", res.Stderr.String())
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

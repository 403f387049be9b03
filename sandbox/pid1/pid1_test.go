package pid1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
)

func TestExitCodes(t *testing.T) {
	ip := startInit(t, nil)
	for _, code := range []int{0, 1, 3, 126, 255} {
		_, _, st := run(t, ip.client, helper("exit", fmt.Sprint(code)))
		if want := (sandbox.ExitStatus{Code: code}); st != want {
			t.Errorf("exit %d: Wait() = %v, want %v", code, st, want)
		}
	}
}

func TestSignalDeath(t *testing.T) {
	ip := startInit(t, nil)
	// The shell dies of the signal as is (Go programs turn some signals
	// into exit status 2).
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, syscall.SIGSEGV, syscall.SIGUSR1} {
		_, _, st := run(t, ip.client, shell(fmt.Sprintf("kill -%d $$", int(sig))))
		want := sandbox.ExitStatus{Code: -1, Signal: sig}
		if st != want {
			t.Errorf("killed by %v: Wait() = %v, want %v", sig, st, want)
		}
		if st.ShellCode() != 128+int(sig) {
			t.Errorf("ShellCode() = %d, want %d", st.ShellCode(), 128+int(sig))
		}
	}
}

func TestOutputExact(t *testing.T) {
	ip := startInit(t, nil)
	for _, tc := range []struct{ nout, nerr int }{
		{0, 0}, {1, 0}, {0, 1}, {65537, 3}, {5 << 20, 3 << 20},
	} {
		out, errb, st := run(t, ip.client, helper("emit", "7", fmt.Sprint(tc.nout), fmt.Sprint(tc.nerr)))
		if st.Code != 0 {
			t.Errorf("emit %d/%d: %v", tc.nout, tc.nerr, st)
		}
		if !bytes.Equal(out, pattern(7, tc.nout)) {
			t.Errorf("emit %d/%d: stdout has %d bytes, differs from the %d written", tc.nout, tc.nerr, len(out), tc.nout)
		}
		if !bytes.Equal(errb, pattern(8, tc.nerr)) {
			t.Errorf("emit %d/%d: stderr has %d bytes, differs from the %d written", tc.nout, tc.nerr, len(errb), tc.nerr)
		}
	}
}

func TestStdinRoundTrip(t *testing.T) {
	ip := startInit(t, nil)
	spec := helper("cat")
	spec.Stdin = true
	p, err := ip.client.Start(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	data := pattern(42, 3<<20+17)
	werr := make(chan error, 1)
	go func() {
		_, err := p.Stdin().Write(data)
		werr <- errors.Join(err, p.Stdin().Close())
	}()
	out, _, st := collect(t, p)
	if err := <-werr; err != nil {
		t.Errorf("writing stdin: %v", err)
	}
	if st.Code != 0 || !bytes.Equal(out, data) {
		t.Errorf("cat: status %v, got %d bytes back, want the %d written", st, len(out), len(data))
	}
}

func TestNoStdinReadsDevNull(t *testing.T) {
	ip := startInit(t, nil)
	p, err := ip.client.Start(ctx(t), helper("cat"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Stdin() != nil {
		t.Errorf("Stdin() = %v without ProcessSpec.Stdin, want nil", p.Stdin())
	}
	out, _, st := collect(t, p)
	if st.Code != 0 || len(out) != 0 {
		t.Errorf("cat of /dev/null: status %v, output %q", st, out)
	}
}

func TestStdinBrokenAfterExit(t *testing.T) {
	ip := startInit(t, nil)
	spec := helper("exit", "0")
	spec.Stdin = true
	p, err := ip.client.Start(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	collect(t, p)
	// Far more than any window: a write must fail, never block.
	_, err = p.Stdin().Write(make([]byte, 8<<20))
	if !errors.Is(err, syscall.EPIPE) {
		t.Errorf("writing stdin of an exited process: %v, want EPIPE", err)
	}
}

func TestConcurrentProcesses(t *testing.T) {
	ip := startInit(t, nil)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := helper("emit", fmt.Sprint(100+i), fmt.Sprint(100000*i), fmt.Sprint(1000*i))
			out, errb, st := run(t, ip.client, spec)
			if st.Code != 0 || !bytes.Equal(out, pattern(uint64(100+i), 100000*i)) || !bytes.Equal(errb, pattern(uint64(101+i), 1000*i)) {
				t.Errorf("process %d: status %v, %d/%d bytes, want %d/%d exact", i, st, len(out), len(errb), 100000*i, 1000*i)
			}
		}()
	}
	wg.Wait()
}

func TestSignalKillsGroup(t *testing.T) {
	ip := startInit(t, nil)
	// The grandchild keeps stdout open, so stdout ends only when it dies.
	p, gpid := startReportingPid(t, ip.client, shell(`sleep 1000 & echo $!; sleep 1000`))
	start, _, ok := procStat(gpid)
	if !ok {
		t.Fatalf("grandchild %d not found", gpid)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	st, err := p.Wait()
	if want := (sandbox.ExitStatus{Code: -1, Signal: syscall.SIGTERM}); err != nil || st != want {
		t.Errorf("Wait() = %v, %v, want %v", st, err, want)
	}
	if _, err := io.ReadAll(p.Stdout()); err != nil {
		t.Errorf("stdout after the group died: %v", err)
	}
	eventually(t, "the grandchild to die", func() bool { return !procAlive(gpid, start) })
	// Once the process and every pipe holder are gone, there is nothing
	// left to signal.
	eventually(t, "Signal to report the process done", func() bool {
		return errors.Is(p.Signal(syscall.SIGTERM), ErrProcessDone)
	})
}

func TestCloseKillsEverything(t *testing.T) {
	ip := startInit(t, nil)
	type victim struct {
		pid   int
		start string
	}
	var victims []victim
	note := func(pid int) {
		start, _, ok := procStat(pid)
		if !ok {
			t.Fatalf("process %d not found", pid)
		}
		victims = append(victims, victim{pid, start})
	}
	var procs []sandbox.Process
	for range 3 {
		// "escape" puts a grandchild in a session of its own, out of the
		// process group Signal reaches.
		p, gpid := startReportingPid(t, ip.client, helper("escape"))
		note(p.(interface{ Pid() int }).Pid())
		note(gpid)
		procs = append(procs, p)
	}
	if err := ip.client.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	<-ip.waited // the init exits once it has killed and reaped everything
	for _, v := range victims {
		if _, _, ok := procStat(v.pid); ok && procAlive(v.pid, v.start) {
			t.Errorf("process %d survived the client's Close", v.pid)
		}
	}
	for _, p := range procs {
		if _, err := p.Wait(); !errors.Is(err, ErrClosed) {
			t.Errorf("Wait after Close: %v, want ErrClosed", err)
		}
	}
	if _, err := ip.client.Start(ctx(t), helper("exit", "0")); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
}

func TestCloseIdempotent(t *testing.T) {
	ip := startInit(t, nil)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { errs[i] = ip.client.Close(); wg.Done() }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != errs[0] {
			t.Errorf("Close #%d = %v, first Close = %v", i, err, errs[0])
		}
	}
	if err := ip.client.Close(); err != errs[0] {
		t.Errorf("Close again = %v, want %v", err, errs[0])
	}
}

func TestInitDeathIsNotEOF(t *testing.T) {
	ip := startInit(t, nil)
	p, err := ip.client.Start(ctx(t), shell(`echo partial; exec sleep 1000`))
	if err != nil {
		t.Fatal(err)
	}
	// A SIGKILLed init outside a pid namespace cannot clean up; the test
	// does (the pid is a host pid here).
	pid := p.(interface{ Pid() int }).Pid()
	defer syscall.Kill(-pid, syscall.SIGKILL)
	r := bufio.NewReader(p.Stdout())
	if line, err := r.ReadString('\n'); err != nil || line != "partial\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	ip.cmd.Process.Kill() // the init dies under a running process
	if _, err := io.ReadAll(r); !errors.Is(err, ErrConnLost) {
		t.Errorf("reading stdout after the init died: %v, want ErrConnLost (never a clean EOF)", err)
	}
	if _, err := p.Wait(); !errors.Is(err, ErrConnLost) {
		t.Errorf("Wait after the init died: %v, want ErrConnLost", err)
	}
	<-ip.waited
	ip.err = nil // killed on purpose
}

func TestStartErrors(t *testing.T) {
	ip := startInit(t, nil)
	dir := t.TempDir()
	noexec := dir + "/noexec"
	if err := writeFile(noexec, "#!/bin/sh\necho hi\n", 0o644); err != nil {
		t.Fatal(err)
	}
	badInterp := dir + "/badinterp"
	if err := writeFile(badInterp, "#!/nonexistent/interpreter\n", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec sandbox.ProcessSpec
		kind error
		code int
	}{
		{"not in PATH", sandbox.ProcessSpec{Argv: []string{"dsh-no-such-program"}, Env: []string{"PATH=/usr/bin:/bin"}}, ErrNotFound, 127},
		{"absolute missing", sandbox.ProcessSpec{Argv: []string{dir + "/missing"}}, ErrNotFound, 127},
		{"no execute bit", sandbox.ProcessSpec{Argv: []string{noexec}}, ErrNotExecutable, 126},
		{"no execute bit in PATH", sandbox.ProcessSpec{Argv: []string{"noexec"}, Env: []string{"PATH=" + dir}}, ErrNotExecutable, 126},
		{"a directory", sandbox.ProcessSpec{Argv: []string{dir}}, ErrNotExecutable, 126},
		{"missing interpreter", sandbox.ProcessSpec{Argv: []string{badInterp}}, ErrNotFound, 127}, // as bash 5.2 and dash report it
		// The init's own PATH has sh; the process's PATH decides.
		{"process PATH, not the init's", sandbox.ProcessSpec{Argv: []string{"sh"}, Env: []string{"PATH=" + dir}}, ErrNotFound, 127},
		{"missing dir", sandbox.ProcessSpec{Argv: []string{"/bin/true"}, Dir: dir + "/nope"}, ErrBadDir, 125},
		{"empty argv", sandbox.ProcessSpec{}, ErrInvalidSpec, 125},
		{"NUL in env", sandbox.ProcessSpec{Argv: []string{"/bin/true"}, Env: []string{"A=\x00"}}, ErrInvalidSpec, 125},
	} {
		_, err := ip.client.Start(ctx(t), tc.spec)
		var se *StartError
		if !errors.Is(err, tc.kind) || !errors.As(err, &se) {
			t.Errorf("%s: Start(%q) = %v, want a StartError wrapping %v", tc.name, tc.spec.Argv, err, tc.kind)
			continue
		}
		if se.ShellCode() != tc.code {
			t.Errorf("%s: ShellCode() = %d, want %d", tc.name, se.ShellCode(), tc.code)
		}
	}
	// The init is still serving after all those failures.
	if _, _, st := run(t, ip.client, helper("exit", "4")); st.Code != 4 {
		t.Errorf("after start errors: %v, want exit 4", st)
	}
}

func TestEnvAndDir(t *testing.T) {
	ip := startInit(t, nil)
	dir := t.TempDir()
	spec := helper("pwdenv")
	spec.Dir = dir
	spec.Env = append(spec.Env, "A=1", "B=two words", "A=3")
	out, _, st := run(t, ip.client, spec)
	if st.Code != 0 {
		t.Fatalf("pwdenv: %v", st)
	}
	// Later entries win (where the key first appeared, as
	// sandbox.MergeEnv merges), and nothing of the init's own environment
	// (which has _DSH_PID1_SERVE) leaks in.
	want := dir + "\n_DSH_PID1_HELPER=pwdenv\nA=3\nB=two words\n"
	if string(out) != want {
		t.Errorf("pwdenv printed\n%s\nwant\n%s", out, want)
	}
}

func TestPathLookupInProcessEnv(t *testing.T) {
	ip := startInit(t, nil)
	dir := t.TempDir()
	if err := writeFile(dir+"/hello-dsh", "#!/bin/sh\necho \"hello from $0\"\n", 0o755); err != nil {
		t.Fatal(err)
	}
	spec := sandbox.ProcessSpec{Argv: []string{"hello-dsh"}, Env: []string{"PATH=/nonexistent:" + dir}}
	out, _, st := run(t, ip.client, spec)
	if st.Code != 0 || string(out) != "hello from "+dir+"/hello-dsh\n" {
		t.Errorf("hello-dsh: %v, %q", st, out)
	}
	// A relative PATH entry is relative to the process's directory.
	spec = sandbox.ProcessSpec{Argv: []string{"hello-dsh"}, Env: []string{"PATH=."}, Dir: dir}
	out, _, st = run(t, ip.client, spec)
	if st.Code != 0 || !strings.HasPrefix(string(out), "hello from ") {
		t.Errorf("hello-dsh via PATH=.: %v, %q", st, out)
	}
}

func TestWaitTwice(t *testing.T) {
	ip := startInit(t, nil)
	p, err := ip.client.Start(ctx(t), helper("exit", "9"))
	if err != nil {
		t.Fatal(err)
	}
	collect(t, p)
	for range 3 {
		if st, err := p.Wait(); err != nil || st.Code != 9 {
			t.Errorf("Wait() = %v, %v, want exit 9", st, err)
		}
	}
}

func TestStartCancelled(t *testing.T) {
	ip := startInit(t, nil)
	c, cancel := contextWithCancel()
	cancel()
	if _, err := ip.client.Start(c, helper("exit", "0")); !errors.Is(err, errCanceled) {
		t.Errorf("Start with a cancelled context: %v, want %v", err, errCanceled)
	}
}

func TestInitSIGTERMKillsEverything(t *testing.T) {
	ip := startInit(t, nil)
	p, gpid := startReportingPid(t, ip.client, helper("escape"))
	start, _, _ := procStat(gpid)
	ip.cmd.Process.Signal(syscall.SIGTERM)
	<-ip.waited
	if procAlive(gpid, start) {
		t.Errorf("process %d (own session) survived SIGTERM of the init", gpid)
	}
	if _, err := p.Wait(); !errors.Is(err, ErrConnLost) {
		t.Errorf("Wait after the init stopped: %v, want ErrConnLost", err)
	}
}

func TestArgvAndEnvBytesExact(t *testing.T) {
	ip := startInit(t, nil)
	dir := filepath.Join(t.TempDir(), "d\xff\xfe")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Not UTF-8, and characters JSON escapes: all must arrive as is.
	args := []string{"\xff\xc3(", "<&>\u2028", "tab\there", "new\nline", ""}
	spec := helper("argv", args...)
	spec.Env = append(spec.Env, "X=\x80\x81 é")
	spec.Dir = dir
	out, _, st := run(t, ip.client, spec)
	want := strings.Join(append(args, "\x80\x81 é"), "\x00")
	if st.Code != 0 || string(out) != want {
		t.Errorf("argv printed %q (%v), want %q", out, st, want)
	}
}

func TestOversizedRequest(t *testing.T) {
	ip := startInit(t, nil)
	spec := helper("exit", "0")
	spec.Env = append(spec.Env, "BIG="+strings.Repeat("x", maxRequestLine))
	_, err := ip.client.Start(ctx(t), spec)
	if !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("Start with a %d-byte env: %v, want ErrInvalidSpec", maxRequestLine, err)
	}
}

// TestStreamsReleased checks that finished processes leave no yamux
// stream behind, so a long-lived world does not grow with every command.
func TestStreamsReleased(t *testing.T) {
	ip := startInit(t, nil)
	for i := range 20 {
		spec := helper("cat")
		spec.Stdin = i%2 == 0
		p, err := ip.client.Start(ctx(t), spec)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Stdin {
			p.Stdin().Write([]byte("x"))
			p.Stdin().Close()
		}
		collect(t, p)
	}
	// A stdin the caller never closes, of a process that never reads it.
	spec := helper("exit", "0")
	spec.Stdin = true
	p, err := ip.client.Start(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	collect(t, p)
	eventually(t, "every stream to be released", func() bool { return ip.client.sess.NumStreams() == 0 })
}

// TestCleanSignalState: the init handles SIGPIPE, SIGTERM, SIGCHLD...
// itself; its children must start with no signal ignored or blocked, or
// pipelines like `yes | head -1` would behave differently inside.
func TestCleanSignalState(t *testing.T) {
	ip := startInit(t, nil)
	out, _, st := run(t, ip.client, shell(`grep -E '^Sig(Ign|Blk):' /proc/self/status`))
	want := "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
	if st.Code != 0 || string(out) != want {
		t.Errorf("signal state of a child of the init:\n%s(%v)\nwant\n%s", out, st, want)
	}
}

// TestOnlyStdioInherited: a child holds fds 0, 1 and 2 and nothing else —
// in particular no descriptor of the init's control connection, which
// would let code inside the sandbox speak for dsh.
func TestOnlyStdioInherited(t *testing.T) {
	// The init itself inherits a descriptor without close-on-exec (as a
	// runtime or a driver might leave one); it must not pass it on.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ip := startInitCmd(t, func(cmd *exec.Cmd) { cmd.ExtraFiles = []*os.File{r} })
	// The glob's own directory descriptor is closed again by the time the
	// loop tests each entry.
	out, _, st := run(t, ip.client, shell(`for f in /proc/$$/fd/*; do [ -e "$f" ] && printf '%s ' "${f##*/}"; done; echo`))
	if st.Code != 0 || string(out) != "0 1 2 \n" {
		t.Errorf("descriptors of a child of the init: %q (%v), want \"0 1 2\"", out, st)
	}
}

// TestUnreadOutputStallsOnlyItsProcess: a process whose stdout nobody
// reads is held back by flow control (it cannot make dsh buffer without
// bound), while other processes on the same connection carry on; its
// output is complete once read.
func TestUnreadOutputStallsOnlyItsProcess(t *testing.T) {
	ip := startInit(t, nil)
	const n = 16 << 20 // far more than the stream window and the pipe
	stalled, err := ip.client.Start(ctx(t), helper("blast", fmt.Sprint(n)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, _, st := run(t, ip.client, helper("exit", fmt.Sprint(i))); st.Code != i {
			t.Fatalf("exit %d beside a stalled process: %v", i, st)
		}
	}
	// Only about 1.3 MiB fit in the stream window and the pipe, so the
	// process cannot have finished writing, let alone exited.
	exited := make(chan struct{})
	go func() { stalled.Wait(); close(exited) }()
	select {
	case <-exited:
		t.Errorf("the process exited with %d bytes unread: output was buffered without bound", n)
	default:
	}
	got, err := io.Copy(io.Discard, stalled.Stdout())
	if err != nil || got != n {
		t.Errorf("stdout of the stalled process: %d bytes, %v; want %d", got, err, n)
	}
	if st, err := stalled.Wait(); err != nil || st.Code != 0 {
		t.Errorf("stalled process: %v, %v", st, err)
	}
}

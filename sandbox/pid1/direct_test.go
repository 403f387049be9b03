package pid1

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
	"golang.org/x/sys/unix"
)

// TestDirectStdio runs the tests of the process semantics with direct
// stdio, the native driver's transport: the same results, exits, errors
// and inheritance as with relayed pipes. (Terminals stay relayed.)
func TestDirectStdio(t *testing.T) {
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"ExitCodes", TestExitCodes},
		{"SignalDeath", TestSignalDeath},
		{"OutputExact", TestOutputExact},
		{"StdinRoundTrip", TestStdinRoundTrip},
		{"NoStdinReadsDevNull", TestNoStdinReadsDevNull},
		{"StdinBrokenAfterExit", TestStdinBrokenAfterExit},
		{"ConcurrentProcesses", TestConcurrentProcesses},
		{"SignalKillsGroup", TestSignalKillsGroup},
		{"CloseKillsEverything", TestCloseKillsEverything},
		{"InitDeathIsNotEOF", TestInitDeathIsNotEOF},
		{"StartErrors", TestStartErrors},
		{"EnvAndDir", TestEnvAndDir},
		{"WaitTwice", TestWaitTwice},
		{"StartCancelled", TestStartCancelled},
		{"ArgvAndEnvBytesExact", TestArgvAndEnvBytesExact},
		{"StreamsReleased", TestStreamsReleased},
		{"CleanSignalState", TestCleanSignalState},
		{"OnlyStdioInherited", TestOnlyStdioInherited},
		{"UnreadOutputStallsOnlyItsProcess", TestUnreadOutputStallsOnlyItsProcess},
		{"AbandonedControlKillsProcess", TestAbandonedControlKillsProcess},
		{"TTYResizeAndInput", TestTTYResizeAndInput},
	} {
		t.Run(tc.name, withDirectStdio(tc.test))
	}
}

// TestDirectStdioIsThePipes: with direct stdio the client holds the
// process's own pipes (no stream of the session carries its output), and
// the init holds none of them: the process's stdin reaches EOF when the
// client closes it, and its output when the process exits.
func TestDirectStdioIsThePipes(t *testing.T) {
	directStdio = true
	defer func() { directStdio = false }()
	ip := startInit(t, nil)
	spec := helper("cat")
	spec.Stdin = true
	p, err := ip.client.Start(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	pp := p.(*process)
	for name, f := range map[string]*os.File{"stdout": pp.stdout.f, "stderr": pp.stderr.f, "stdin": pp.stdin.f} {
		var st unix.Stat_t
		if f == nil {
			t.Fatalf("%s: no pipe: the output is relayed", name)
		}
		if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			t.Errorf("%s: fstat %v, mode %#o: not a pipe", name, err, st.Mode)
		}
	}
	if n := ip.client.sess.NumStreams(); n != 1 {
		t.Errorf("%d streams open for the process, want 1 (control)", n)
	}
	p.Stdin().Write([]byte("hello"))
	p.Stdin().Close() // cat sees EOF only if the init kept no write end
	out, _, st := collect(t, p)
	if st.Code != 0 || !bytes.Equal(out, []byte("hello")) {
		t.Errorf("cat: %v, %q", st, out)
	}
}

// TestDirectStdioRefusesForeignDescriptors: the init is the untrusted
// side; what it sends on the stdio socket is taken only as pipes, in the
// number the process needs, for a process waiting for them.
func TestDirectStdioRefusesForeignDescriptors(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tc := range []struct {
		name string
		fds  []int
	}{
		{"not a pipe", []int{int(r.Fd()), int(devnull.Fd())}},
		{"too few", []int{int(r.Fd())}},
		{"too many", []int{int(r.Fd()), int(r.Fd()), int(r.Fd())}},
	} {
		got := pipeFiles(dupAll(t, tc.fds), 2)
		if got.err == nil || !errors.Is(got.err, ErrConnLost) || got.files != nil {
			t.Errorf("%s: pipeFiles = %v, %v; want an ErrConnLost and no files", tc.name, got.files, got.err)
		}
	}
	if got := pipeFiles(dupAll(t, []int{int(r.Fd()), int(w.Fd())}), 2); got.err != nil {
		t.Errorf("two pipes: %v", got.err)
	} else {
		closeFiles(got.files)
	}
}

func dupAll(t *testing.T, fds []int) []int {
	var out []int
	for _, fd := range fds {
		d, err := syscall.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

var _ sandbox.Process = (*process)(nil)

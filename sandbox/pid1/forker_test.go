package pid1

import (
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
)

func forkTrue(t *testing.T, f *forker) (int, error) {
	t.Helper()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	fd := null.Fd()
	return f.forkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Files: []uintptr{fd, fd, fd}})
}

// The forking thread joins its group once, before its first fork, by
// writing "0" (itself) to the group's tasks file, and forks from then on.
func TestForkerJoinsItsGroupOnceBeforeForking(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f := newForker(w)
	defer close(f.reqs)
	for i := 0; i < 2; i++ {
		pid, err := forkTrue(t, f)
		if err != nil {
			t.Fatalf("fork %d: %v", i, err)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
			t.Fatalf("fork %d: wait4 = %v, status %v", i, err, ws)
		}
	}
	// The forker closed its end after joining: EOF follows.
	b, err := io.ReadAll(r)
	if err != nil || string(b) != "0" {
		t.Errorf("tasks file got %q (%v), want one \"0\"", b, err)
	}
}

// A thread that cannot join the processes' group forks nothing: every
// start fails, naming the cause, rather than run a process outside the
// limit.
func TestForkerThatCannotJoinForksNothing(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	f := newForker(full)
	defer close(f.reqs)
	for i := 0; i < 2; i++ {
		pid, err := forkTrue(t, f)
		var se *StartError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, "joining the world's processes' cgroup") {
			t.Fatalf("fork %d: pid %d, %v; want a StartError about joining the group", i, pid, err)
		}
		if pid != 0 {
			t.Fatalf("fork %d: started pid %d", i, pid)
		}
	}
}

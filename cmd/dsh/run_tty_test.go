package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/internal/pty"
	"github.com/dsh-dev/dsh/internal/testenv"
)

func TestRunTTYRefusals(t *testing.T) {
	for _, c := range []struct {
		args     []string
		inStderr string
	}{
		{[]string{"--unconfined", "-t", "--", "true"}, "needs a terminal on dsh's stdin"},
		{[]string{"--unconfined", "-t", "--json", "--", "true"}, "drop one of them"},
	} {
		code, _, stderr := dshRun(t, c.args...)
		if code != statusDshFailed || !strings.Contains(stderr, c.inStderr) {
			t.Errorf("dsh run %q = %d, stderr %q; want %d and %q", c.args, code, stderr, statusDshFailed, c.inStderr)
		}
	}
}

// onTerminal starts the static dsh with args on a terminal this test owns
// (as a user's shell would), of rows x cols, and returns the terminal's
// master, whose output is a line reader, and the command.
func onTerminal(t *testing.T, rows, cols uint16, args ...string) (*os.File, *bufio.Reader, *exec.Cmd) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	if err := pty.SetSize(master, rows, cols); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(staticDsh(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return master, bufio.NewReader(pty.Reader(master)), cmd
}

// readUntil reads lines until one contains want, and fails the test with
// everything read if none does.
func readUntil(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	var seen strings.Builder
	for {
		line, err := r.ReadString('\n')
		seen.WriteString(line)
		if strings.Contains(line, want) {
			return
		}
		if err != nil {
			t.Fatalf("no %q on the terminal (%v); it showed:\n%s", want, err, seen.String())
		}
	}
}

// dsh run -t on the native driver: the command has a terminal of the
// user's size inside the world, follows its resizing, and its status is
// dsh's; the user's terminal leaves raw mode at the end.
func TestRunTTYNative(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	master, out, cmd := onTerminal(t, 33, 99, "run", "-t", "--",
		"sh", "-c", `tty; stty size; echo ready; while [ "$(stty size)" = "33 99" ]; do sleep 0.01; done; stty size; exit 3`)
	readUntil(t, out, "/dev/pts/")
	readUntil(t, out, "33 99")
	readUntil(t, out, "ready")
	if err := pty.SetSize(master, 40, 120); err != nil {
		t.Fatal(err)
	}
	readUntil(t, out, "40 120")
	go io.Copy(io.Discard, out)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if cmd.ProcessState.ExitCode() != 3 {
			t.Errorf("dsh run -t exited %v, want the command's status 3", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("dsh run -t did not exit after the command did")
	}
	tio, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&(unix.ICANON|unix.ECHO) != unix.ICANON|unix.ECHO {
		t.Errorf("the terminal was left in raw mode (lflag %#x)", tio.Lflag)
	}
}

// Keys typed on the user's terminal reach the command's terminal, ^C
// included, which the command's terminal turns into SIGINT.
func TestRunTTYKeysAndInterrupt(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	master, out, cmd := onTerminal(t, 24, 80, "run", "-t", "--",
		"sh", "-c", `read line; echo "got $line"; echo ready; exec sleep 30`)
	if _, err := master.Write([]byte("hello\r")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, out, "got hello")
	readUntil(t, out, "ready")
	if _, err := master.Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		if got := cmd.ProcessState.ExitCode(); got != 128+int(syscall.SIGINT) {
			t.Errorf("after ^C dsh run -t exited %d, want %d (SIGINT)", got, 128+int(syscall.SIGINT))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("^C did not end the command")
	}
}

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// tiocstiEnv makes this test binary, copied into a world, the agent of
// TestRunNoHostTerminal: it types the variable's value into fds 0-2 and
// /dev/tty with TIOCSTI and reports each attempt.
const tiocstiEnv = "DSH_TEST_TIOCSTI"

func init() {
	if marker := os.Getenv(tiocstiEnv); marker != "" {
		tiocstiAgent(marker)
		os.Exit(0)
	}
}

func tiocstiAgent(marker string) {
	fds := []int{0, 1, 2}
	names := []string{"fd0", "fd1", "fd2"}
	if fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY, 0); err != nil {
		fmt.Printf("devtty %v\n", err)
	} else {
		fds, names = append(fds, fd), append(names, "devtty")
	}
	for i, fd := range fds {
		result := "ok"
		for _, c := range []byte(marker) {
			if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
				result = unix.ErrnoName(e)
				break
			}
		}
		fmt.Printf("tiocsti %s %s\n", names[i], result)
	}
}

// agentIn copies this test binary into dir, for a test's world to run:
// an init function of the test makes it the agent an environment variable
// names. It returns the copy's path.
func agentIn(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(dir, "agent")
	if err := os.WriteFile(agent, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return agent
}

// onTerminalToEnd runs dsh with args on a terminal as onTerminal does,
// and returns everything the terminal showed, dsh's status and the bytes
// left in the terminal's input, which the user's shell would read next.
func onTerminalToEnd(t *testing.T, args ...string) (shown string, code int, pending int) {
	t.Helper()
	master, out, cmd := onTerminal(t, 24, 80, args...)
	var buf bytes.Buffer
	read := make(chan struct{})
	go func() { io.Copy(&buf, out); close(read) }()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("dsh %q did not exit", args)
	}
	// The process side again, to look at its input queue.
	fd, _, e := unix.Syscall(unix.SYS_IOCTL, master.Fd(), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if e != 0 {
		t.Fatalf("opening the terminal again: %v", e)
	}
	tty := os.NewFile(fd, "tty")
	defer tty.Close()
	pending, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCINQ)
	if err != nil {
		t.Fatal(err)
	}
	tty.Close()
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal's output did not end")
	}
	return buf.String(), cmd.ProcessState.ExitCode(), pending
}

// dsh run on the user's terminal: nothing inside has it as its
// controlling terminal, so /dev/tty opens nothing, and TIOCSTI, on any
// descriptor, types nothing into the user's input.
func TestRunNoHostTerminal(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	// A failed redirection of exec ends the shell.
	shown, code, _ := onTerminalToEnd(t, "run", "--", "sh", "-c", `exec 3</dev/tty; echo opened-devtty`)
	if code == 0 || strings.Contains(shown, "opened-devtty") || !strings.Contains(shown, "No such device or address") {
		t.Errorf("exec 3</dev/tty inside: status %d, terminal showed %q; want it to fail with ENXIO (no controlling terminal)", code, shown)
	}

	ws := t.TempDir()
	agent := agentIn(t, ws)
	const marker = "touch-dsh-escaped"
	shown, code, pending := onTerminalToEnd(t, "run", "--workspace", ws, "--env", tiocstiEnv+"="+marker, "--", agent)
	if code != 0 || !strings.Contains(shown, "tiocsti fd2") {
		t.Fatalf("the agent did not run: status %d, terminal showed %q", code, shown)
	}
	// The terminal echoes what is typed into it; typed input not yet read
	// waits in its input queue.
	typed := strings.Contains(shown, marker) || pending != 0
	for _, l := range strings.Split(shown, "\n") {
		typed = typed || strings.HasPrefix(l, "tiocsti ") && strings.HasSuffix(strings.TrimSpace(l), " ok")
	}
	if typed {
		t.Errorf("TIOCSTI inside reached the user's terminal (%d bytes left in its input); terminal showed:\n%s", pending, shown)
	}
}

// ^C on the user's terminal ends the command with SIGINT, and dsh run
// reports it (130), with and without a terminal inside.
func TestRunInterruptFromTerminal(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"pipes", []string{"run", "--", "sh", "-c", "echo ready; exec sleep 60"}},
		{"tty", []string{"run", "-t", "--", "sh", "-c", "echo ready; exec sleep 60"}},
	} {
		t.Run(c.name, func(t *testing.T) { interruptOnTerminal(t, c.args...) })
	}
}

func interruptOnTerminal(t *testing.T, args ...string) {
	t.Helper()
	master, out, cmd := onTerminal(t, 24, 80, args...)
	readUntil(t, out, "ready")
	start := time.Now()
	if _, err := master.Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		if got := cmd.ProcessState.ExitCode(); got != 130 {
			t.Errorf("after ^C dsh %q exited %d, want 130 (SIGINT)", args, got)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("dsh %q took %v to exit after ^C", args, d)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("^C did not end dsh %q", args)
	}
}

// The same on the docker driver, whose processes were never in dsh's
// session: dsh forwards ^C through the world's init.
func TestRunInterruptFromTerminalDocker(t *testing.T) {
	testenv.RequireDocker(t)
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tty  []string
	}{{"pipes", nil}, {"tty", []string{"-t"}}} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--driver", "docker", "--image", "dsh/base:latest", "--workspace", ws}, c.tty...)
			interruptOnTerminal(t, append(args, "--", "sh", "-c", "echo ready; exec sleep 60")...)
		})
	}
}

package pty

import (
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOpenSizeAndEnd(t *testing.T) {
	master, tty, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if err := SetSize(master, 33, 99); err != nil {
		t.Fatal(err)
	}
	ws, err := unix.IoctlGetWinsize(int(tty.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Row != 33 || ws.Col != 99 {
		t.Errorf("terminal side sees %dx%d, want 33x99", ws.Row, ws.Col)
	}
	// A process on the terminal: what it prints comes out of the master,
	// and the master ends with EOF (not EIO) once it is gone.
	cmd := exec.Command("sh", "-c", `test -t 0 && test -t 1 && stty size`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	out, err := io.ReadAll(Reader(master))
	if err != nil {
		t.Fatalf("reading the master: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the process on the terminal: %v (output %q)", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "33 99" {
		t.Errorf("output %q, want the size 33 99", got)
	}
}

func TestDupOutlivesClose(t *testing.T) {
	master, tty, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer tty.Close()
	in, err := Dup(master)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	in.Close()
	// The master still works after its duplicate is closed.
	if err := SetSize(master, 10, 20); err != nil {
		t.Errorf("SetSize after closing the duplicate: %v", err)
	}
	b := make([]byte, 8)
	n, err := tty.Read(b)
	if err != nil || string(b[:n]) != "x\n" {
		t.Errorf("terminal side read %q, %v; want the typed line", b[:n], err)
	}
}

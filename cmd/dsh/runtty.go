package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
)

// hostTerminal is dsh's own terminal for dsh run --tty: the command gets
// a terminal of its own inside the world (never this one, so nothing in
// the world can type into the user's shell), and dsh relays between the
// two: keystrokes in raw mode, output as is, and every change of size.
type hostTerminal struct {
	f     *os.File
	saved *term.State
}

// openHostTerminal checks that in is a terminal and returns it.
func openHostTerminal(in any) (*hostTerminal, error) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, errors.New("--tty needs a terminal on dsh's stdin (it is a pipe or a file here); drop --tty to run with plain pipes")
	}
	return &hostTerminal{f: f}, nil
}

// size is the terminal's size, or 24x80 when it cannot tell.
func (t *hostTerminal) size() sandbox.WindowSize {
	cols, rows, err := term.GetSize(int(t.f.Fd()))
	if err != nil || rows <= 0 || cols <= 0 || rows > 0xffff || cols > 0xffff {
		return sandbox.WindowSize{Rows: 24, Cols: 80}
	}
	return sandbox.WindowSize{Rows: uint16(rows), Cols: uint16(cols)}
}

// raw puts the terminal in raw mode: every key, ^C included, goes to the
// command's terminal, whose line discipline turns it into a signal.
func (t *hostTerminal) raw() error {
	s, err := term.MakeRaw(int(t.f.Fd()))
	if err != nil {
		return err
	}
	t.saved = s
	return nil
}

// restore undoes raw; it is safe to call more than once.
func (t *hostTerminal) restore() {
	if t.saved != nil {
		term.Restore(int(t.f.Fd()), t.saved)
		t.saved = nil
	}
}

// follow passes every size change of the terminal on to r until r ends.
func (t *hostTerminal) follow(r *execworld.Running) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		defer signal.Stop(winch)
		for {
			select {
			case <-winch:
				r.Resize(t.size())
			case <-r.Done():
				return
			}
		}
	}()
}

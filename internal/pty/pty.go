package pty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Open opens a new pseudo-terminal in this process's /dev/pts: the master,
// which the caller reads and writes, and the terminal a process gets as
// its stdio and controlling terminal. Both are close-on-exec.
func Open() (master, tty *os.File, err error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(m)
		return nil, nil, fmt.Errorf("unlocking the terminal: %w", err)
	}
	t, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		unix.Close(m)
		return nil, nil, fmt.Errorf("opening the terminal's process side: %w", errno)
	}
	return os.NewFile(uintptr(m), "/dev/ptmx"), os.NewFile(t, "/dev/pts"), nil
}

// SetSize sets the size of the terminal whose master is master; the
// kernel sends SIGWINCH to its foreground process group.
func SetSize(master *os.File, rows, cols uint16) error {
	return control(master, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
}

// Dup returns a second descriptor of master, for a writer that closes its
// end (end of input) while the output is still being read.
func Dup(master *os.File) (*os.File, error) {
	var nfd int
	err := control(master, func(fd int) (err error) {
		nfd, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("duplicating the terminal: %w", err)
	}
	return os.NewFile(uintptr(nfd), master.Name()), nil
}

// control runs f on f's descriptor without taking it out of the poller
// (os.File.Fd would make it blocking).
func control(file *os.File, f func(fd int) error) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// Reader reads a master until the terminal is gone: a master reads EIO,
// not EOF, once the last holder of the process side has closed it, and
// Reader reports that as io.EOF.
func Reader(master *os.File) io.Reader { return eioReader{master} }

type eioReader struct{ f *os.File }

func (r eioReader) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if errors.Is(err, syscall.EIO) {
		err = io.EOF
	}
	return n, err
}

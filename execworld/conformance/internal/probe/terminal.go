package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// terminal reports what this process can do with terminals: its session
// and controlling terminal (from /proc/self/stat), whether /dev/tty opens
// (and, if it does, the session of the terminal it names), and what
// TIOCSTI and TIOCLINUX do on fds 0-2 and /dev/tty. One line each:
//
//	session PID SID TTY_NR
//	devtty ok SID | devtty ERRNO
//	tiocsti WHERE ok|ERRNO
//	tiocsti-high WHERE ok|ERRNO   (request with bits set above the low 32)
//	tioclinux WHERE ok|ERRNO
func terminal() {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		fmt.Printf("error reading /proc/self/stat: %v\n", oneLine(err))
		return
	}
	// The command name (field 2) may contain spaces; the rest follows ')'.
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	// rest[0] is field 3 (state): session is field 6, tty_nr field 7.
	fmt.Printf("session %d %s %s\n", os.Getpid(), rest[3], rest[4])

	fds := map[string]int{"fd0": 0, "fd1": 1, "fd2": 2}
	order := []string{"fd0", "fd1", "fd2"}
	if fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err != nil {
		fmt.Printf("devtty %s\n", errnoName(err))
	} else {
		sid, err := unix.IoctlGetInt(fd, unix.TIOCGSID)
		if err != nil {
			fmt.Printf("devtty ok sid-unknown-%s\n", errnoName(err))
		} else {
			fmt.Printf("devtty ok %d\n", sid)
		}
		fds["devtty"] = fd
		order = append(order, "devtty")
	}
	// A NUL byte typed into a terminal is harmless to whatever reads it;
	// with echo off it does not garble this report either.
	for _, where := range order {
		if t, err := unix.IoctlGetTermios(fds[where], unix.TCGETS); err == nil {
			t.Lflag &^= unix.ECHO
			unix.IoctlSetTermios(fds[where], unix.TCSETS, t)
		}
	}
	var c byte
	for _, where := range order {
		fd := uintptr(fds[where])
		fmt.Printf("tiocsti %s %s\n", where, ioctl(fd, unix.TIOCSTI, unsafe.Pointer(&c)))
		fmt.Printf("tiocsti-high %s %s\n", where, ioctl(fd, 1<<32|unix.TIOCSTI, unsafe.Pointer(&c)))
		sub := byte(6) // TIOCL_GETSHIFTSTATE: a read-only subcommand
		fmt.Printf("tioclinux %s %s\n", where, ioctl(fd, unix.TIOCLINUX, unsafe.Pointer(&sub)))
	}
}

// ioctl makes the raw system call, so that req reaches the kernel (and
// the seccomp filter) exactly as given, high bits included.
func ioctl(fd, req uintptr, arg unsafe.Pointer) string {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(arg)); e != 0 {
		return errnoName(e)
	}
	return "ok"
}

func errnoName(err error) string {
	if e, ok := err.(unix.Errno); ok {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
		return "errno-" + strconv.Itoa(int(e))
	}
	return oneLine(err)
}

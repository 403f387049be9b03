package main

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// siginfo is the head of siginfo_t: what rt_sigqueueinfo and
// pidfd_send_signal take from the caller.
type siginfo struct {
	signo, errno, code int32
	_                  [128 - 12]byte
}

// forgeinit tries every way a process has to send PID 1 a SIGSEGV (or
// SIGILL) whose si_code says it did not come from kill: a Go init that
// believed one would crash. One line per attempt. Like siginit, it only
// runs when PID 1 is a dsh init.
func forgeinit() {
	if !pid1IsDshInit() {
		return
	}
	info := func(sig unix.Signal) uintptr {
		return uintptr(unsafe.Pointer(&siginfo{signo: int32(sig), code: -1})) // SI_QUEUE
	}
	for _, sig := range []unix.Signal{unix.SIGSEGV, unix.SIGILL} {
		_, _, e := unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, 1, uintptr(sig), info(sig))
		fmt.Printf("rt_sigqueueinfo %d %v\n", sig, errnoText(e))
		_, _, e = unix.Syscall6(unix.SYS_RT_TGSIGQUEUEINFO, 1, 1, uintptr(sig), info(sig), 0, 0)
		fmt.Printf("rt_tgsigqueueinfo %d %v\n", sig, errnoText(e))
	}
	if fd, err := unix.Open("/proc/1", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		_, _, e := unix.Syscall6(unix.SYS_PIDFD_SEND_SIGNAL, uintptr(fd), uintptr(unix.SIGSEGV), info(unix.SIGSEGV), 0, 0, 0)
		fmt.Printf("pidfd_send_signal %v\n", errnoText(e))
		unix.Close(fd)
	}
	// I/O on a pipe signals its owner, here PID 1, with SIGSEGV (POLL_IN).
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err == nil {
		_, err1 := unix.FcntlInt(uintptr(p[0]), unix.F_SETSIG, int(unix.SIGSEGV))
		_, err2 := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, 1)
		_, err3 := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, -1)
		_, err4 := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, unix.O_ASYNC)
		unix.Write(p[1], []byte("x"))
		fmt.Printf("f_setown setsig=%v own1=%v own-1=%v async=%v\n", errText(err1), errText(err2), errText(err3), errText(err4))
	}
	// A child of PID 1's (CLONE_PARENT) whose exit signal is SIGSEGV.
	r, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_PARENT|uintptr(unix.SIGSEGV), 0, 0, 0, 0, 0)
	if e == 0 && r == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	fmt.Printf("clone-parent %v\n", errnoText(e))
	time.Sleep(500 * time.Millisecond)
}

func errnoText(e unix.Errno) string {
	if e == 0 {
		return "sent"
	}
	return e.Error()
}

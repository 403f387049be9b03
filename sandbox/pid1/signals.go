package pid1

import (
	"os/signal"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resetIgnoredSignals sets every signal the init inherited as ignored
// back to its default action. An ignored disposition survives fork and
// exec, so without this the processes the init starts would inherit
// whatever its launcher ignored (GNU make ignores the real-time signals
// 32 and 33, nohup ignores SIGHUP) and pipelines would behave differently
// inside than outside. The Go runtime leaves an inherited SIG_IGN alone
// and keeps no handler of its own for it, so resetting it takes nothing
// from the runtime; as PID 1 of a pid namespace, the init does not
// receive default-action signals from inside the namespace anyway.
func resetIgnoredSignals() {
	// struct kernel_sigaction with a zero handler: SIG_DFL, no flags, no mask.
	var dfl [4]uintptr
	for sig := 1; sig < 65; sig++ {
		s := syscall.Signal(sig)
		if s == syscall.SIGKILL || s == syscall.SIGSTOP || !signal.Ignored(s) {
			continue
		}
		unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	}
}

package pid1

import (
	"log/slog"
	"os"
	"os/signal"
	"slices"
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

// stopSignals are the requests to stop that an init outside a pid
// namespace of its own obeys; see absorbSignals.
var stopSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

// absorbSignals makes every signal another process can send the init a
// no-op, so no process of the world can end, stop or crash it, and
// returns the channel of requests to stop (nil when there are none).
//
// As PID 1 of its own pid namespace, the kernel drops SIGKILL and SIGSTOP
// sent from inside the namespace, and every signal for which the init has
// no handler; the Go runtime has a handler for almost every signal and by
// default exits on SIGTERM, SIGINT and SIGHUP, and crashes (dumping the
// init's goroutines) on SIGQUIT, SIGABRT, SIGTRAP, SIGSYS, and on SIGSEGV,
// SIGBUS, SIGFPE and SIGILL when a process sends them (si_code <= 0, which
// no other process can forge). Notify turns each of those into a
// delivery to a channel drained here, on any thread the sender picks
// (tgkill); a real fault of the init still crashes it, since the runtime
// queues only signals sent by a process. Signals 32 and 34 have no
// handler and are dropped by the kernel. SIGKILL from outside the
// namespace (the driver's own stop, docker rm -f, the OOM killer) still
// ends the init, and so does closing its connection — how drivers stop
// worlds. As PID 1 the init obeys no stop signal: the world's processes
// share its uid and could send one.
//
// Not PID 1 (tests; a runtime that puts another init first), the world's
// processes are in the init's pid namespace and could kill it with
// SIGKILL anyway, so nothing is protected; SIGTERM, SIGINT and SIGHUP then
// stop it as a closed connection does, killing everything it started.
func absorbSignals(log *slog.Logger, asPID1 bool) <-chan os.Signal {
	var stop chan os.Signal
	if !asPID1 {
		stop = make(chan os.Signal, 1)
		signal.Notify(stop, stopSignals...)
	}
	absorbed := make(chan os.Signal, 8)
	for sig := syscall.Signal(1); sig <= 64; sig++ {
		switch {
		case sig == syscall.SIGKILL, sig == syscall.SIGSTOP:
			continue // cannot be caught
		case sig == syscall.SIGCHLD, sig == syscall.SIGURG, sig == syscall.SIGPROF:
			continue // the reaper's, and the runtime's own (harmless when sent)
		case !asPID1 && slices.Contains(stopSignals, os.Signal(sig)):
			continue
		}
		signal.Notify(absorbed, sig)
	}
	go func() {
		for sig := range absorbed {
			log.Debug("ignored a signal sent to the init", "signal", sig)
		}
	}()
	return stop
}

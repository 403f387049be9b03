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
	for sig := 1; sig < 65; sig++ {
		s := syscall.Signal(sig)
		if s != syscall.SIGKILL && s != syscall.SIGSTOP && signal.Ignored(s) {
			setDefault(s)
		}
	}
}

// setDefault gives sig its default action in the kernel, behind the
// runtime's back.
func setDefault(sig syscall.Signal) {
	// struct kernel_sigaction with a zero handler: SIG_DFL, no flags, no mask.
	var dfl [4]uintptr
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
}

// fatalSignals end or crash a Go program when another process sends them
// and nothing was Notified (the runtime's sigtable: _SigKill, _SigThrow,
// _SigPanic).
var fatalSignals = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP,
	syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGTERM,
	syscall.SIGSTKFLT, syscall.SIGSYS,
}

// stopSignals are the requests to stop that an init outside a pid
// namespace of its own obeys; see absorbSignals.
var stopSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

// runtimeFreeSignals are those of fatalSignals, and SIGPIPE, that the
// runtime never needs for itself (it does need SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGTRAP, SIGSTKFLT and SIGSYS: faults of its own); see
// absorbSignals.
var runtimeFreeSignals = []syscall.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGABRT, syscall.SIGTERM, syscall.SIGPIPE,
}

// absorbSignals makes every signal another process can send the init a
// no-op, so no process of the world can end, stop or crash it, and
// returns the channel of requests to stop (nil when there are none).
//
// The Go runtime has a handler for almost every signal; of those, it
// exits on SIGHUP, SIGINT and SIGTERM, and crashes (dumping the init's
// goroutines) on SIGQUIT, SIGABRT, SIGILL, SIGTRAP, SIGSTKFLT and SIGSYS,
// and on SIGSEGV, SIGBUS and SIGFPE when a process sent them (si_code
// SI_USER or SI_TKILL); on every other signal it does nothing unless
// asked (its sigtable). A real fault of the init still crashes it.
// Signals a process could send with another si_code (rt_sigqueueinfo,
// pidfd_send_signal with a siginfo, F_SETOWN/F_SETSIG, a CLONE_PARENT
// child's exit signal), which the runtime would take for a fault, are
// refused by the world filter (filter.go). SIGKILL from outside the
// namespace (the driver's own stop, docker rm -f, the OOM killer) still
// ends the init, and so does closing its connection — how drivers stop
// worlds.
//
// As PID 1 of its own pid namespace the init obeys no stop signal: the
// world's processes share its uid and could send one. The kernel drops
// every signal PID 1 has at its default action (SIGKILL and SIGSTOP too,
// sent from inside), so the init Ignores fatalSignals and SIGPIPE — the
// runtime then drops one a process sent, and returns EPIPE for a write
// to a closed stdout instead of dying — and puts runtimeFreeSignals,
// which Ignore set to SIG_IGN, back to their default action: the kernel
// drops those before any handler, and the processes the init forks
// start with them at their default (an ignored disposition survives
// fork and exec). Neither costs a hand-off to the runtime's signal
// thread, which Notify does for each of those signals (and starting
// that thread, for the first): 0.6 ms of a world's start on a small VM.
//
// Outside a pid namespace a default action would end the init, so the
// signals are Notified, to a channel drained here, on any thread the
// sender picks (tgkill); SIGTERM, SIGINT and SIGHUP to the returned one.
func absorbSignals(log *slog.Logger, asPID1 bool) <-chan os.Signal {
	if asPID1 {
		signal.Ignore(append(fatalSignals, syscall.SIGPIPE)...)
		for _, sig := range runtimeFreeSignals {
			setDefault(sig)
		}
		return nil
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, stopSignals...)
	absorbed := make(chan os.Signal, 8)
	var sigs []os.Signal
	for _, sig := range fatalSignals {
		if !slices.Contains(stopSignals, sig) {
			sigs = append(sigs, sig)
		}
	}
	signal.Notify(absorbed, sigs...)
	go func() {
		for sig := range absorbed {
			log.Debug("ignored a signal sent to the init", "signal", sig)
		}
	}()
	return stop
}

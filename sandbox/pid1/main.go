package pid1

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// Arg is the hidden first argument that makes dsh run as the init:
// `dsh __init`. cmd/dsh dispatches it before building the CLI.
const Arg = "__init"

// Main runs the init with the Config in ConfigEnv (see Run).
func Main() int {
	cfg, err := configFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh __init:", err)
		return 1
	}
	return Run(cfg)
}

// Run sets up the world cfg describes, then runs the init over its own
// stdin and stdout as one connection and
// returns the process exit status: 0 when the client closed the
// connection, 1 when the transport failed. As PID 1 of its own pid
// namespace it ignores every signal a process can send (only SIGKILL from
// outside the namespace ends it); otherwise SIGTERM, SIGINT and SIGHUP end
// it like a closed connection: everything is killed and reaped first.
// Outside a pid namespace it makes itself a child subreaper, so orphans
// stay within its reach. Diagnostics go to stderr; set DSH_INIT_LOG=debug
// for more of them.
func Run(cfg *Config) int {
	// Descriptors the init inherited beyond stdio (a driver's socket, a
	// leaked fd of the runtime) must not reach the processes it starts.
	markCloexec()
	// Opened while the init still owns its /proc entries (see below).
	oom := openOOMScore()
	// The processes it runs share its uid. Not dumpable, the init's
	// /proc/<pid>/{fd,mem,environ} are closed to them and it cannot be
	// ptrace-attached without CAP_SYS_PTRACE: otherwise a process could
	// reopen the init's stdin/stdout through /proc/<pid>/fd and speak on
	// the control connection. execve resets the flag, so the children stay
	// dumpable and debuggable themselves.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "dsh __init: making the init non-dumpable:", err)
		return 1
	}
	// A write to a closed stdout must come back as EPIPE, so Serve can
	// clean up; without a handler, Go would die of SIGPIPE and, outside a
	// pid namespace, leave the children running. Notify (unlike Ignore)
	// keeps SIGPIPE at its default in the children. As PID 1,
	// absorbSignals deals with it with the others.
	asPID1 := os.Getpid() == 1
	if !asPID1 {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	}
	resetIgnoredSignals()
	// Outside a pid namespace, become the subreaper of everything we
	// start, so orphans stay within reach of the final kill.
	if !asPID1 {
		unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	level := slog.LevelWarn
	if os.Getenv("DSH_INIT_LOG") == "debug" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("component", "dsh-init")
	conn := JoinConn(pollable(0, "stdin"), pollable(1, "stdout"))
	// No signal from the world ends the init (see absorbSignals). Outside
	// a pid namespace, a request to stop ends the session as if the client
	// had closed it, so everything is killed and reaped; without this, Go
	// would exit at once and leave the children running. Before setUp,
	// whose Ready may tell the driver the init is complete (native counts
	// its threads then).
	if stop := absorbSignals(log, asPID1); stop != nil {
		go func() {
			sig := <-stop
			log.Warn("terminating on signal; killing every process", "signal", sig)
			conn.Close()
		}()
	}
	// The forking thread is started beside the world's set-up, not on the
	// first command's path.
	var fk *forker
	if cfg.ForkGroup != nil {
		fk = newForker(cfg.ForkGroup)
	}
	if err := cfg.setUp(log); err != nil {
		fmt.Fprintln(os.Stderr, "dsh __init: setting up the world:", err)
		return 1
	}
	if err := Serve(conn, &ServeOptions{Logger: log, oom: oom, Stdio: cfg.Stdio, forker: fk}); err != nil {
		fmt.Fprintln(os.Stderr, "dsh __init:", err)
		return 1
	}
	return 0
}

// markCloexec sets close-on-exec on every descriptor above stderr.
func markCloexec() {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Kernels before 5.11: one by one.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// pollable returns fd as a file in non-blocking mode, so Go's poller
// serves it and Close interrupts a pending Read (a blocking descriptor's
// Read would hold Close off until data arrives). The descriptions behind
// the init's stdin and stdout belong to it alone.
func pollable(fd int, name string) *os.File {
	// If this fails the file still works; only a signal-triggered
	// shutdown then waits for the client.
	unix.SetNonblock(fd, true)
	return os.NewFile(uintptr(fd), name)
}

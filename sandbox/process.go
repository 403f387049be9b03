package sandbox

import (
	"context"
	"fmt"
	"io"
	"syscall"
)

// ProcessSpec describes one process to start inside a sandbox.
type ProcessSpec struct {
	// Argv is the program and its arguments. Argv[0] is resolved inside the
	// sandbox; there is no implicit shell.
	Argv []string
	// Dir is the working directory inside the sandbox. If empty, the
	// workspace root is used.
	Dir string
	// Env is the complete environment of the process, as KEY=VALUE. The
	// host environment never enters a sandbox; the caller builds Env.
	Env []string
	// Stdin reports whether the process gets a stdin pipe. If false, stdin
	// is /dev/null.
	Stdin bool
	// TTY, if set, gives the process a terminal of this size, made inside
	// the sandbox, instead of pipes: its stdin, stdout and stderr are the
	// terminal, the controlling terminal of the session it leads, Stdout
	// carries everything shown on the terminal and Stderr ends empty. With
	// Stdin, what is written to Stdin is typed into it.
	TTY *WindowSize
}

// WindowSize is the size of a terminal in character cells.
type WindowSize struct {
	Rows, Cols uint16
}

// Valid reports whether both dimensions are set.
func (w WindowSize) Valid() bool { return w.Rows > 0 && w.Cols > 0 }

// ExitStatus is how a process ended.
type ExitStatus struct {
	// Code is the exit code, or -1 when the process was killed by a signal.
	Code int
	// Signal is the signal that killed the process, or 0.
	Signal syscall.Signal
}

// ShellCode is the status a shell would report: the exit code, or 128+N
// when the process was killed by signal N.
func (s ExitStatus) ShellCode() int {
	if s.Signal != 0 {
		return 128 + int(s.Signal)
	}
	return s.Code
}

func (s ExitStatus) String() string {
	if s.Signal != 0 {
		return fmt.Sprintf("killed by signal %d (%v)", int(s.Signal), s.Signal)
	}
	return fmt.Sprintf("exit status %d", s.Code)
}

// Process is a process running inside a sandbox, in its own process group.
// In a confining driver it leads a session of its own, with no controlling
// terminal unless ProcessSpec.TTY gave it one.
type Process interface {
	// Stdin is the process's stdin, or nil when ProcessSpec.Stdin was false.
	Stdin() io.WriteCloser
	// Stdout and Stderr are the process's output streams. They reach EOF
	// after the process and every holder of the pipe have exited.
	Stdout() io.Reader
	Stderr() io.Reader
	// Signal sends sig to the process's whole process group.
	Signal(sig syscall.Signal) error
	// Resize changes the size of the process's terminal, which sends
	// SIGWINCH to its foreground process group. It is an error for a
	// process started without ProcessSpec.TTY.
	Resize(size WindowSize) error
	// Wait blocks until the process has exited and returns its status.
	// It may be called more than once.
	Wait() (ExitStatus, error)
}

// Instance is a running sandbox.
type Instance interface {
	// Start starts a process inside the sandbox.
	Start(ctx context.Context, p ProcessSpec) (Process, error)
	// Close kills every process in the sandbox and removes every resource
	// the driver created for it (containers, networks, cgroups). It is
	// idempotent and safe to call concurrently.
	Close() error
}

// OOMCounter is implemented by an Instance that can tell how many
// processes the kernel's OOM killer has killed in the world so far (the
// oom_kill count of its memory cgroup). execworld compares the count
// around a command to report that a SIGKILL was an OOM kill. Drivers that
// cannot tell do not implement it.
type OOMCounter interface {
	OOMKills() int64
}

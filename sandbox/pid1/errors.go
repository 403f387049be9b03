package pid1

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/dsh-dev/dsh/sandbox"
)

var (
	// ErrNotFound means argv[0] was not found (shell code 127). It is
	// sandbox.ErrNotFound, so callers need not know the driver.
	ErrNotFound = sandbox.ErrNotFound
	// ErrNotExecutable means argv[0] exists but cannot be executed: no
	// execute permission, a directory, or not a valid executable (shell
	// code 126). It is sandbox.ErrNotExecutable.
	ErrNotExecutable = sandbox.ErrNotExecutable
	// ErrBadDir means the working directory does not exist or is not a
	// directory.
	ErrBadDir = errors.New("pid1: working directory unusable")
	// ErrInvalidSpec means the process spec itself is invalid (empty
	// argv, NUL bytes, ...).
	ErrInvalidSpec = errors.New("pid1: invalid process spec")
	// ErrClosed is returned after Client.Close.
	ErrClosed = errors.New("pid1: client closed")
	// ErrConnLost means the connection to the init failed before the
	// process's result arrived: the init died, or its transport did.
	// Output streams end with this error instead of io.EOF, so a cut-short
	// stream is never mistaken for a complete one.
	ErrConnLost = errors.New("pid1: connection to init lost")
	// ErrProcessDone is returned by Signal once the process has exited and
	// every holder of its output pipes is gone. It wraps os.ErrProcessDone.
	ErrProcessDone = fmt.Errorf("pid1: process already finished: %w", os.ErrProcessDone)
	// ErrBrokenPipe is returned by writes to a process's stdin once nothing
	// inside the sandbox reads it any more. It wraps syscall.EPIPE, as a
	// write to a local pipe would.
	ErrBrokenPipe = fmt.Errorf("pid1: nothing reads stdin any more: %w", syscall.EPIPE)
)

// StartError is why the init could not start a process. It wraps one of
// ErrNotFound, ErrNotExecutable, ErrBadDir, ErrInvalidSpec, or a generic
// failure (fork, pipes, a closing init).
type StartError struct {
	// Argv0 is the program as the caller named it.
	Argv0 string
	// Dir is the working directory that was requested.
	Dir string
	// Kind is the sentinel the error wraps, or nil for other failures.
	Kind error
	// Msg is the init's description of the failure.
	Msg string
}

func (e *StartError) Error() string {
	return fmt.Sprintf("pid1: starting %q: %s", e.Argv0, e.Msg)
}

func (e *StartError) Unwrap() error { return e.Kind }

// ShellCode is the status a shell reports for this failure: 127 when the
// program was not found, 126 when it cannot be executed, and 125 (the
// runtime itself failed) otherwise.
func (e *StartError) ShellCode() int {
	switch e.Kind {
	case ErrNotFound:
		return 127
	case ErrNotExecutable:
		return 126
	}
	return 125
}

// Wire names of the StartError kinds.
var errorKinds = map[string]error{
	"notfound": ErrNotFound,
	"notexec":  ErrNotExecutable,
	"baddir":   ErrBadDir,
	"invalid":  ErrInvalidSpec,
}

func kindName(kind error) string {
	for name, k := range errorKinds {
		if k == kind {
			return name
		}
	}
	return "failed"
}

package sandbox

import "errors"

// Driver-neutral reasons a process could not start. Every driver's start
// errors match one of them with errors.Is, so callers map them to shell
// statuses without knowing the driver.
var (
	// ErrNotFound means argv[0] was not found in the sandbox (status 127).
	ErrNotFound = errors.New("executable not found")
	// ErrNotExecutable means argv[0] exists but cannot be executed: no
	// execute permission, a directory, or no valid executable format
	// (status 126).
	ErrNotExecutable = errors.New("not executable")
)

// ErrNoTTY is returned by Process.Resize for a process that was started
// without a terminal (ProcessSpec.TTY).
var ErrNoTTY = errors.New("the process has no terminal: start it with ProcessSpec.TTY to resize one")

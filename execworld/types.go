package execworld

import "github.com/dsh-dev/dsh/sandbox"

// The driver-neutral types execworld hands out, under its own names, so
// that a surface (LSP, MCP bridge, web) needs execworld alone.
type (
	// WindowSize is the size of a terminal in character cells (Cmd.TTY,
	// Running.Resize).
	WindowSize = sandbox.WindowSize
	// ExitStatus is how a process ended (Result.Status).
	ExitStatus = sandbox.ExitStatus
)

// ErrNoTTY is returned by Running.Resize for a command started without a
// terminal (Cmd.TTY).
var ErrNoTTY = sandbox.ErrNoTTY

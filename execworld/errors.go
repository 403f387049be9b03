package execworld

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test for them with errors.Is.
var (
	// ErrClosed is returned by every operation on a closed World, and by
	// the second Close.
	ErrClosed = errors.New("execworld: world is closed")
	// ErrEscape means a path tried to leave the workspace: "..", an
	// absolute path or symlink, or a magic link. The kernel refused it.
	ErrEscape = errors.New("execworld: path escapes the workspace")
	// ErrNotRegular means the path names something other than a regular
	// file (a directory, FIFO, socket or device) where a file was needed.
	ErrNotRegular = errors.New("execworld: not a regular file")
	// ErrNotText means the content holds a NUL byte or is not valid UTF-8.
	ErrNotText = errors.New("execworld: not a text file")
	// ErrVersionMismatch means the file changed since the expected version
	// was read (or exists when it was expected to be absent).
	ErrVersionMismatch = errors.New("execworld: file changed since it was read")
	// ErrInvalidCmd means a Cmd was rejected before anything started.
	ErrInvalidCmd = errors.New("execworld: invalid command")
)

// PathError records a failed filesystem operation on a workspace path.
type PathError struct {
	Op   string // "read", "write", "edit", "list", "stat", "open"
	Path string // the path as the caller gave it
	Err  error
}

func (e *PathError) Error() string { return "execworld: " + e.Op + " " + e.Path + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }

// TooLargeError means a file is larger than the byte cap of the read.
// Reads never truncate silently.
type TooLargeError struct {
	Path  string
	Size  int64 // the size seen (at least Limit+1)
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("execworld: %s is %d bytes, over the %d-byte limit; read a smaller file or raise the limit", e.Path, e.Size, e.Limit)
}

// EditError means an exact-string edit did not find exactly one match.
type EditError struct {
	Path    string
	Matches int // 0: not found; >1: ambiguous
}

func (e *EditError) Error() string {
	if e.Matches == 0 {
		return fmt.Sprintf("execworld: edit %s: the old text was not found; copy it exactly from a fresh read", e.Path)
	}
	return fmt.Sprintf("execworld: edit %s: the old text matches %d places; include more surrounding text so it matches exactly one", e.Path, e.Matches)
}

// StartError means a process could not be started. ShellCode maps it to
// the status a shell reports: 127 when the program was not found, 126
// when it is not executable, 125 otherwise (dsh itself failed).
type StartError struct {
	Argv0 string
	Code  int // 125, 126 or 127
	Err   error
}

func (e *StartError) Error() string {
	switch e.Code {
	case 127:
		return fmt.Sprintf("execworld: %s: command not found: %v", e.Argv0, e.Err)
	case 126:
		return fmt.Sprintf("execworld: %s: not executable: %v", e.Argv0, e.Err)
	}
	return fmt.Sprintf("execworld: starting %s: %v", e.Argv0, e.Err)
}
func (e *StartError) Unwrap() error { return e.Err }

// ShellCode is the status a shell would report for this failure.
func (e *StartError) ShellCode() int { return e.Code }

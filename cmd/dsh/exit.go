package main

import (
	"errors"
	"fmt"
)

// exitError makes dsh exit with a specific status. An empty msg prints
// nothing (the command already reported).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// exitf returns an error that makes dsh print the message and exit with code.
func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// exitCode returns an error that makes dsh exit with code silently.
func exitCode(code int) error { return &exitError{code: code} }

func asExitError(err error, target **exitError) bool { return errors.As(err, target) }

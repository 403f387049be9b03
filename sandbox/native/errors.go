package native

import (
	"errors"
	"fmt"
)

// ErrUnavailable reports that this machine cannot set up native
// confinement. The wrapping error names the missing kernel setting or
// privilege and how to provide it.
var ErrUnavailable = errors.New("native: confinement unavailable")

// ErrUnsupportedSpec reports a Spec field the native driver cannot honour.
var ErrUnsupportedSpec = errors.New("native: unsupported spec")

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("native: sandbox closed")

// unavailableError says which step could not be set up, why, and how to
// fix it. errors.Is(err, ErrUnavailable) holds.
type unavailableError struct {
	Step string // what dsh tried, e.g. "create user namespace"
	Err  error  // the kernel's answer
	Fix  string // what the user can do
}

func (e *unavailableError) Error() string {
	msg := fmt.Sprintf("native: cannot %s", e.Step)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

func (e *unavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

// specError names the Spec field that cannot be honoured and what to do.
type specError struct {
	Field string
	Msg   string
}

func (e *specError) Error() string { return fmt.Sprintf("native: Spec.%s: %s", e.Field, e.Msg) }

func (e *specError) Unwrap() error { return ErrUnsupportedSpec }

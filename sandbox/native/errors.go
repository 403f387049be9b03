package native

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
)

// ErrUnavailable reports that this machine cannot set up native
// confinement. The wrapping error names the missing kernel setting or
// privilege and how to provide it.
var ErrUnavailable = errors.New("native: confinement unavailable")

// ErrUnsupportedSpec reports a Spec field the native driver cannot
// honour. It is sandbox.ErrInvalidSpec: one sentinel for every driver.
var ErrUnsupportedSpec = sandbox.ErrInvalidSpec

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
// When the rule is every driver's (sandbox.Validate), Cause is its
// *sandbox.SpecError.
type specError struct {
	Field string
	Msg   string
	Cause error
}

func (e *specError) Error() string { return fmt.Sprintf("native: Spec.%s: %s", e.Field, e.Msg) }

func (e *specError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrUnsupportedSpec}
	}
	return []error{ErrUnsupportedSpec, e.Cause}
}

// invalid makes an error of sandbox.Validate this driver's.
func invalid(err error) error {
	var se *sandbox.SpecError
	if !errors.As(err, &se) {
		return err
	}
	return &specError{Field: se.Field, Msg: strings.TrimPrefix(se.Error(), "Spec."+se.Field+": "), Cause: se}
}

package netpolicy

import (
	"errors"
	"fmt"
)

var (
	// ErrDenied is matched (errors.Is) by every error that reports a
	// destination the policy refused. The concrete type is *DeniedError.
	ErrDenied = errors.New("netpolicy: denied")
	// ErrInvalidTarget is matched by every error about a URL, host or
	// port that dsh refuses to interpret. The concrete type is
	// *TargetError.
	ErrInvalidTarget = errors.New("netpolicy: invalid target")
	// ErrInvalidPolicy is matched by the error New returns for a Config
	// with bad entries. The concrete type is *PolicyError.
	ErrInvalidPolicy = errors.New("netpolicy: invalid policy")
)

// DeniedError reports a refused destination with the decision that
// refused it.
type DeniedError struct{ Decision Decision }

func (e *DeniedError) Error() string {
	d := e.Decision
	dest := d.Host
	if d.Addr.IsValid() {
		if dest == "" || dest == d.Addr.String() {
			dest = d.Addr.String()
		} else {
			dest += " (" + d.Addr.String() + ")"
		}
	}
	if d.Port != 0 {
		dest = fmt.Sprintf("%s port %d", dest, d.Port)
	}
	return fmt.Sprintf("netpolicy: connection to %s denied: %s [rule %s]", dest, d.Reason, d.Rule)
}

// Is reports whether target is ErrDenied.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// TargetError reports an input that is not a valid destination. It keeps
// the input and says what is wrong with it.
type TargetError struct {
	Input  string // the text as given
	Reason string // what is wrong, and where useful how to write it instead
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("netpolicy: invalid target %q: %s", e.Input, e.Reason)
}

// Is reports whether target is ErrInvalidTarget.
func (e *TargetError) Is(target error) bool { return target == ErrInvalidTarget }

func invalidf(input, format string, args ...any) *TargetError {
	return &TargetError{Input: input, Reason: fmt.Sprintf(format, args...)}
}

// PolicyError lists every problem New found in a Config, so a user fixes
// them in one pass.
type PolicyError struct {
	Problems []string
}

func (e *PolicyError) Error() string {
	s := "netpolicy: invalid policy:"
	if len(e.Problems) == 1 {
		return s + " " + e.Problems[0]
	}
	for _, p := range e.Problems {
		s += "\n  - " + p
	}
	return s
}

// Is reports whether target is ErrInvalidPolicy.
func (e *PolicyError) Is(target error) bool { return target == ErrInvalidPolicy }

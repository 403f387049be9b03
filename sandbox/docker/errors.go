package docker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
)

var (
	// ErrImageNotFound reports that a world's image is not present locally.
	// The driver never pulls.
	ErrImageNotFound = errors.New("docker: image not found")
	// ErrInitNotStatic reports that the init binary would need a dynamic
	// loader, which the world's image may not have.
	ErrInitNotStatic = errors.New("docker: init binary is not statically linked")
	// ErrClosed reports use of a world after Close.
	ErrClosed = errors.New("docker: world closed")
	// ErrRemoteEngine reports a Docker engine on another host, which the
	// driver cannot mount host files into.
	ErrRemoteEngine = errors.New("docker: remote engine not supported")
	// ErrInvalidSpec reports a Spec field this driver cannot honour. It
	// is sandbox.ErrInvalidSpec: one sentinel for every driver.
	ErrInvalidSpec = sandbox.ErrInvalidSpec
)

// imageError names the missing image and how to build it.
type imageError struct{ image string }

func (e *imageError) Error() string {
	return fmt.Sprintf("docker: image %q not found locally (dsh never pulls images); build it with: make images", e.image)
}

func (e *imageError) Unwrap() error { return ErrImageNotFound }

// specError names the Spec field at fault. When the rule is every
// driver's (sandbox.Validate), cause is its *sandbox.SpecError.
type specError struct {
	field, msg string
	cause      error
}

func (e *specError) Error() string { return fmt.Sprintf("docker: spec %s: %s", e.field, e.msg) }

func (e *specError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInvalidSpec}
	}
	return []error{ErrInvalidSpec, e.cause}
}

// invalid makes an error of sandbox.Validate this driver's.
func invalid(err error) error {
	var se *sandbox.SpecError
	if !errors.As(err, &se) {
		return err
	}
	return &specError{se.Field, strings.TrimPrefix(se.Error(), "Spec."+se.Field+": "), se}
}

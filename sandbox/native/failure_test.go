package native

import (
	"encoding/json"
	"errors"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
)

// TestInitFailureBecomesTheDriversError: what the init writes on the
// ready pipe comes back as the error the driver has always returned.
func TestInitFailureBecomesTheDriversError(t *testing.T) {
	wire := func(f nsinit.Failure) []byte {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	err := initError(wire(nsinit.Failure{Unavailable: true, Step: "install the seccomp filter", Err: syscall.EINVAL.Error(), Fix: "use --driver docker"}))
	var ue *unavailableError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &ue) || ue.Step != "install the seccomp filter" || ue.Fix != "use --driver docker" {
		t.Errorf("unavailable failure = %#v, want an ErrUnavailable naming step and fix", err)
	}
	if want := "native: cannot install the seccomp filter: invalid argument; use --driver docker"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	err = initError(wire(nsinit.Failure{Err: "mounting /dev: permission denied"}))
	if errors.Is(err, ErrUnavailable) || err.Error() != "native: setting up the sandbox: mounting /dev: permission denied" {
		t.Errorf("setup failure = %q", err)
	}
	if err := initError([]byte("not json")); err.Error() != "native: setting up the sandbox: not json" {
		t.Errorf("foreign message = %q", err)
	}
}

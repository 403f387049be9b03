package native

import (
	"errors"
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
)

// A Spec refused by the rules of every driver is this driver's
// unsupported-spec error and the shared *sandbox.SpecError at once.
func TestCheckSpecUsesTheSharedValidation(t *testing.T) {
	_, err := checkSpec(sandbox.DefaultSpec("/etc"))
	var se *sandbox.SpecError
	if !errors.Is(err, ErrUnsupportedSpec) || !errors.As(err, &se) || se.Field != "Workspace" {
		t.Fatalf("checkSpec(workspace /etc) = %v, want ErrUnsupportedSpec and a Workspace *sandbox.SpecError", err)
	}
	ws := t.TempDir()
	if real, err := checkSpec(sandbox.DefaultSpec(ws)); err != nil || real != ws {
		t.Fatalf("checkSpec(%s) = %q, %v; want the real path and nil", ws, real, err)
	}
}

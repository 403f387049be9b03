package native

import (
	"testing"

	"github.com/dsh-dev/dsh/execworld/conformance"
	"github.com/dsh-dev/dsh/internal/testenv"
)

// TestConformance runs the shared suite every confining driver passes.
func TestConformance(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	// The default state directory, as dsh uses it: whether worlds can
	// see each other's state there is one of the checks.
	conformance.Run(t, New(&Options{Executable: testExe(t)}), conformance.Options{})
}

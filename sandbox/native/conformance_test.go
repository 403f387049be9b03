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
	conformance.Run(t, New(&Options{Executable: testExe(t), StateDir: stateDir(t)}), conformance.Options{})
}

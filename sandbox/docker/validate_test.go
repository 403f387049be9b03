package docker

import (
	"errors"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-dev/dsh/sandbox"
)

// The conversion refuses a limit no kernel enforces with this driver's
// invalid-spec error, which is the shared *sandbox.SpecError too.
func TestContainerConfigRefusesUnenforcedLimits(t *testing.T) {
	spec := sandbox.DefaultSpec(t.TempDir())
	q := int64(-1 << 63) // what int64(NaN * period) gives
	spec.Resources.CPU = &specs.LinuxCPU{Quota: &q}
	_, _, err := containerConfig(spec, &containerPlan{Image: spec.Image})
	var se *sandbox.SpecError
	if !errors.Is(err, ErrInvalidSpec) || !errors.As(err, &se) || se.Field != "Resources.CPU.Quota" {
		t.Fatalf("containerConfig with quota %d = %v, want ErrInvalidSpec and a Resources.CPU.Quota *sandbox.SpecError", q, err)
	}
}

package nsinit

import (
	"fmt"

	"github.com/dsh-dev/dsh/sandbox"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// setRlimits applies the Spec's rlimits to the init; every process of the
// sandbox inherits them. A hard limit above the caller's own is capped
// at the caller's.
func setRlimits(rl []specs.POSIXRlimit) error {
	for _, r := range rl {
		res, ok := sandbox.RlimitResource(r.Type)
		if !ok {
			return fmt.Errorf("unknown rlimit %q", r.Type)
		}
		want := unix.Rlimit{Cur: r.Soft, Max: r.Hard}
		var cur unix.Rlimit
		if err := unix.Prlimit(0, res, nil, &cur); err == nil && want.Max > cur.Max {
			// Raising a hard limit needs CAP_SYS_RESOURCE on the host;
			// staying at the caller's lower limit confines more.
			want.Max = cur.Max
			want.Cur = min(want.Cur, cur.Max)
		}
		if err := unix.Prlimit(0, res, &want, nil); err != nil {
			return fmt.Errorf("setting %s to %d/%d: %w", r.Type, r.Soft, r.Hard, err)
		}
	}
	// A core dump of a sandboxed process would be written by the host's
	// core_pattern handler, outside the sandbox.
	return unix.Prlimit(0, unix.RLIMIT_CORE, &unix.Rlimit{}, nil)
}

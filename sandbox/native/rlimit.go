package native

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

var rlimitNames = map[string]int{
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_CPU": unix.RLIMIT_CPU,
	"RLIMIT_DATA": unix.RLIMIT_DATA, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS,
	"RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK, "RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE, "RLIMIT_NICE": unix.RLIMIT_NICE,
	"RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_RSS": unix.RLIMIT_RSS,
	"RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO, "RLIMIT_RTTIME": unix.RLIMIT_RTTIME, "RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_STACK": unix.RLIMIT_STACK,
}

// setRlimits applies the Spec's rlimits to the init; every process of the
// sandbox inherits them. A hard limit above the caller's own is capped
// at the caller's.
func setRlimits(rl []specs.POSIXRlimit) error {
	for _, r := range rl {
		res, ok := rlimitNames[r.Type]
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

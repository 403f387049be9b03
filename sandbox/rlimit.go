package sandbox

import (
	"fmt"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// rlimitResources are the rlimits a Spec may set, by OCI name.
var rlimitResources = map[string]int{
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_CPU": unix.RLIMIT_CPU,
	"RLIMIT_DATA": unix.RLIMIT_DATA, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS,
	"RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK, "RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE, "RLIMIT_NICE": unix.RLIMIT_NICE,
	"RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_RSS": unix.RLIMIT_RSS,
	"RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO, "RLIMIT_RTTIME": unix.RLIMIT_RTTIME, "RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_STACK": unix.RLIMIT_STACK,
}

// RlimitResource returns the resource number of the rlimit called name
// (RLIMIT_NOFILE, …).
func RlimitResource(name string) (int, bool) {
	r, ok := rlimitResources[name]
	return r, ok
}

// CheckRlimits checks that every rlimit of a Spec is one the kernel has.
func CheckRlimits(rl []specs.POSIXRlimit) error {
	for i, r := range rl {
		if _, ok := rlimitResources[r.Type]; !ok {
			names := make([]string, 0, len(rlimitResources))
			for n := range rlimitResources {
				names = append(names, n)
			}
			slices.Sort(names)
			return &SpecError{Field: fmt.Sprintf("Rlimits[%d]", i), Msg: fmt.Sprintf("unknown rlimit %q", r.Type), Fix: "use one of " + strings.Join(names, ", ")}
		}
	}
	return nil
}

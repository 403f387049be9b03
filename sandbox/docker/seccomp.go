package docker

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/dsh-dev/dsh/sandbox"
	mobyseccomp "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// defaultProfile is docker's default allowlist without any syscall of
// the contract every driver keeps (sandbox.DeniedSyscalls): docker's
// allows some of them (ptrace, process_vm_*, kcmp, … from kernel 4.8 on),
// others only with capabilities a world never has.
var defaultProfile = sync.OnceValues(func() (string, error) {
	p := mobyseccomp.DefaultProfile()
	for _, sc := range p.Syscalls {
		if sc.Action != specs.ActAllow {
			continue
		}
		sc.Names = slices.DeleteFunc(sc.Names, func(n string) bool { return slices.Contains(sandbox.DeniedSyscalls, n) })
	}
	// Rules left with no names would be rejected by the daemon. (Name is
	// the legacy single-name form; a rule using it still names a syscall.)
	//lint:ignore SA1019 the legacy field must be read to keep such rules
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(sc *mobyseccomp.Syscall) bool { return len(sc.Names) == 0 && sc.Name == "" })
	b, err := json.Marshal(p)
	return string(b), err
})

package docker

import (
	"encoding/json"
	"slices"
	"sync"

	mobyseccomp "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// alsoDenied are syscalls docker's default profile allows (most of them
// from kernel 4.8 on) that the Spec's contract denies in every driver:
// tracing and reading other processes' memory. Every other syscall the
// contract names (mount, unshare of namespaces, bpf, keyctl, kexec,
// io_uring, open_by_handle_at, …) docker's allowlist already refuses
// without capabilities.
var alsoDenied = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	"userfaultfd", "name_to_handle_at",
}

var defaultProfile = sync.OnceValues(func() (string, error) {
	p := mobyseccomp.DefaultProfile()
	for _, sc := range p.Syscalls {
		if sc.Action != specs.ActAllow {
			continue
		}
		sc.Names = slices.DeleteFunc(sc.Names, func(n string) bool { return slices.Contains(alsoDenied, n) })
	}
	// Rules left with no names would be rejected by the daemon. (Name is
	// the legacy single-name form; a rule using it still names a syscall.)
	//lint:ignore SA1019 the legacy field must be read to keep such rules
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(sc *mobyseccomp.Syscall) bool { return len(sc.Names) == 0 && sc.Name == "" })
	b, err := json.Marshal(p)
	return string(b), err
})

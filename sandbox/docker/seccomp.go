package docker

import (
	"encoding/json"
	"slices"
	"sync"

	mobyseccomp "github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
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
		sc.Names = slices.DeleteFunc(sc.Names, func(n string) bool {
			return slices.Contains(alsoDenied, n) || n == "ioctl" && len(sc.Args) == 0
		})
	}
	p.Syscalls = append(p.Syscalls, ioctlRules()...)
	// Rules left with no names would be rejected by the daemon. (Name is
	// the legacy single-name form; a rule using it still names a syscall.)
	//lint:ignore SA1019 the legacy field must be read to keep such rules
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(sc *mobyseccomp.Syscall) bool { return len(sc.Names) == 0 && sc.Name == "" })
	b, err := json.Marshal(p)
	return string(b), err
})

// deniedIoctls are refused (EPERM, the profile's default errno) in every
// world: TIOCSTI types into a terminal's input (which another session's
// shell may read), TIOCLINUX reaches the virtual console.
var deniedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX}

// ioctlRules replace the profile's unconditional allow of ioctl with
// allow rules that match every request but deniedIoctls. (An errno rule
// with arguments beside an unconditional allow is lost: libseccomp keeps
// the allow.) The kernel takes the request as an unsigned int, so only
// its low 32 bits count, and bits set above them must neither slip a
// denied request past nor refuse an allowed one (C callers sign-extend an
// int request). runc ORs rules and admits one comparison per argument in
// a rule, so the allowed set is written as masked equalities on bit
// prefixes of the low 32 bits: every prefix that leaves the path to a
// denied value.
func ioctlRules() []*mobyseccomp.Syscall {
	var rules []*mobyseccomp.Syscall
	var cover func(prefix uint32, depth int, denied []uint32)
	cover = func(prefix uint32, depth int, denied []uint32) {
		switch {
		case len(denied) == 0:
			rule := &mobyseccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: []string{"ioctl"}, Action: specs.ActAllow}}
			if depth > 0 {
				mask := uint64(0xffffffff) << (32 - depth) & 0xffffffff
				rule.Args = []specs.LinuxSeccompArg{{Index: 1, Value: mask, ValueTwo: uint64(prefix), Op: specs.OpMaskedEqual}}
			}
			rules = append(rules, rule)
		case depth < 32:
			bit := uint32(1) << (31 - depth)
			var zero, one []uint32
			for _, v := range denied {
				if v&bit == 0 {
					zero = append(zero, v)
				} else {
					one = append(one, v)
				}
			}
			cover(prefix, depth+1, zero)
			cover(prefix|bit, depth+1, one)
		}
	}
	cover(0, 0, deniedIoctls)
	return rules
}

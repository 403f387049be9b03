package native

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/dsh-dev/dsh/sandbox"
	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// namespaceFlags are the CLONE_NEW* bits: clone and unshare fail when any
// is set, so no process in a sandbox creates a namespace.
var namespaceFlags = []uint64{
	unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	unix.CLONE_NEWIPC, unix.CLONE_NEWUTS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// filterProgram returns the sandbox's seccomp program, which the init
// loads (nsinit.Config.Seccomp): assembled here, so that the init, whose
// start every world waits for, carries no assembler (the tables of
// go-seccomp-bpf cost its start 0.4 ms). go-seccomp-bpf
// assembles the rules; in front of them goes an architecture check that
// kills any syscall made through another ABI (i386 int 0x80 on amd64),
// because the library's own check lets other architectures fall through
// to the default action, which for a deny list is "allow".
//
// With noSysVShm, shmget is refused too: System V shared memory the
// driver could not bound (see Config.NoSysVShm).
func filterProgram(noSysVShm bool) ([]unix.SockFilter, error) {
	f := &filters[0]
	if noSysVShm {
		f = &filters[1]
	}
	f.once.Do(func() { f.prog, f.err = assembleFilter(noSysVShm) })
	return f.prog, f.err
}

// filters are the two programs filterProgram assembles, each once per
// process (its callers only read them): Prestart begins the one its
// world will take.
var filters [2]struct {
	once sync.Once
	prog []unix.SockFilter
	err  error
}

func assembleFilter(noSysVShm bool) ([]unix.SockFilter, error) {
	var withFlags []seccomp.NameWithConditions
	for _, name := range []string{"unshare", "clone"} {
		for _, f := range namespaceFlags {
			withFlags = append(withFlags, seccomp.NameWithConditions{
				Name:       name,
				Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: f}},
			})
		}
	}
	denied := sandbox.DeniedSyscalls
	if noSysVShm {
		denied = append(append([]string(nil), denied...), "shmget")
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: denied, Action: seccomp.ActionErrno},
			{NamesWithCondtions: withFlags, Action: seccomp.ActionErrno},
		},
	}
	insts, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assembling seccomp policy: %w", err)
	}
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, &unavailableError{Step: "build the seccomp filter", Err: fmt.Errorf("architecture %s is not supported", runtime.GOARCH), Fix: "the native driver supports amd64 and arm64; use --driver docker"}
	}
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		// clone3 passes its flags in memory a filter cannot read. ENOSYS
		// (not EPERM) makes libc and Go fall back to clone, which is checked.
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3, SkipFalse: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}
	raw, err := bpf.Assemble(append(guard, insts...))
	if err != nil {
		return nil, fmt.Errorf("assembling seccomp program: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

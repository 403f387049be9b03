package native

import (
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/dsh-dev/dsh/sandbox"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// namespaceFlags are the CLONE_NEW* bits: clone and unshare fail when any
// is set, so no process in a sandbox creates a namespace.
const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// filterProgram returns the sandbox's seccomp program, which the init
// loads (nsinit.Config.Seccomp): assembled here, so that the init, whose
// start every world waits for, carries no assembler. It refuses
// sandbox.DeniedSyscalls and new namespaces, behind an architecture check
// that kills any syscall made through another ABI (i386 int 0x80 on
// amd64) and refuses x32's, whose numbers the deny list does not name.
// Written by hand with x/net/bpf, as the init's world filter is (package
// pid1): a general assembler's syscall tables cost every dsh start 0.2 ms
// of package initialisation.
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
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, &unavailableError{Step: "build the seccomp filter", Err: fmt.Errorf("architecture %s is not supported", runtime.GOARCH), Fix: "the native driver supports amd64 and arm64; use --driver docker"}
	}
	names := sandbox.DeniedSyscalls
	if noSysVShm {
		names = append(slices.Clone(names), "shmget")
	}
	var denied []uint32
	for _, name := range names {
		nr, ok := syscallNumbers[name]
		if !ok {
			nr, ok = archSyscalls[name]
		}
		switch {
		case ok:
			denied = append(denied, nr)
		case !slices.Contains(archAbsent, name):
			// A name added to the deny list without its number here
			// would be let through: refuse to build the filter.
			return nil, fmt.Errorf("assembling the seccomp filter: no number for the denied syscall %s on %s", name, runtime.GOARCH)
		}
	}
	if len(denied) > 255 {
		// A jump skips at most 255 instructions (below).
		return nil, fmt.Errorf("assembling the seccomp filter: %d denied syscalls, at most 255", len(denied))
	}
	eperm := uint32(unix.SECCOMP_RET_ERRNO | unix.EPERM)
	enosys := uint32(unix.SECCOMP_RET_ERRNO | unix.ENOSYS)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	}
	if runtime.GOARCH == "amd64" {
		// x32 calls share amd64's architecture value, with other numbers.
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: enosys})
	}
	prog = append(prog,
		// clone3 passes its flags in memory a filter cannot read. ENOSYS
		// (not EPERM) makes libc and Go fall back to clone, which is checked.
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_CLONE3, SkipTrue: 1},
		bpf.RetConstant{Val: enosys})
	// Each denied number jumps to the one EPERM after the list.
	for i, nr := range denied {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: uint8(len(denied) - i)})
	}
	prog = append(prog,
		bpf.Jump{Skip: 1},
		bpf.RetConstant{Val: eperm},
		// unshare and clone (its flags are the first argument on amd64 and
		// arm64; the namespace bits are all in its low word) with any
		// CLONE_NEW* bit.
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_UNSHARE, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_CLONE, SkipTrue: 3},
		bpf.LoadAbsolute{Off: 16, Size: 4}, // seccomp_data.args[0], low word (little-endian)
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: namespaceFlags, SkipFalse: 1},
		bpf.RetConstant{Val: eperm},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	)
	raw, err := bpf.Assemble(prog)
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

// x32Bit marks x32 system calls on amd64.
const x32Bit = 0x40000000

// syscallNumbers are the numbers of the syscalls the filter refuses that
// every supported architecture has; archSyscalls adds those only some
// have, and archAbsent names those this one lacks (nothing to refuse).
var syscallNumbers = map[string]uint32{
	"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT,
	"chroot": unix.SYS_CHROOT, "setns": unix.SYS_SETNS,
	"fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT,
	"fspick": unix.SYS_FSPICK, "move_mount": unix.SYS_MOVE_MOUNT, "open_tree": unix.SYS_OPEN_TREE,
	"mount_setattr": unix.SYS_MOUNT_SETATTR,
	"ptrace":        unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV,
	"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV, "pidfd_getfd": unix.SYS_PIDFD_GETFD, "kcmp": unix.SYS_KCMP,
	"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD,
	"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE,
	"bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN, "userfaultfd": unix.SYS_USERFAULTFD,
	"keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY,
	"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER,
	"io_uring_register": unix.SYS_IO_URING_REGISTER,
	"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
	"swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF, "reboot": unix.SYS_REBOOT, "acct": unix.SYS_ACCT,
	"settimeofday": unix.SYS_SETTIMEOFDAY, "clock_settime": unix.SYS_CLOCK_SETTIME, "adjtimex": unix.SYS_ADJTIMEX,
	"lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE, "quotactl": unix.SYS_QUOTACTL, "syslog": unix.SYS_SYSLOG,
	"vhangup": unix.SYS_VHANGUP,
	"shmget":  unix.SYS_SHMGET,
}

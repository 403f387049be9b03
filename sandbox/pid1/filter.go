package pid1

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The world filter: a seccomp layer the init installs on itself before it
// starts anything, for every driver, on top of the driver's own filter
// (native's deny list, docker's profile). Every process of the world
// inherits it. It allows exactly the socket families a world needs —
// inet and inet6, netlink's route protocol for address queries, and unix
// sockets only where the Config allows them — and refuses every other
// family (vsock is machine-wide; packet, alg, bluetooth, tipc, … reach
// kernel or host surface no tool needs). A unix socket a world cannot
// create cannot connect to any host socket, wherever it is: a path-based
// socket is not scoped by the network namespace, and connect needs no
// write access to the mount, so only refusing the socket itself closes
// that door. Socket pairs stay (pipelines, runtimes and event loops use
// them), but only the connection-oriented types, which cannot be
// re-addressed to a host socket as a datagram socket can. Also refused:
// TIOCSTI and TIOCLINUX, which push input into a terminal; io_uring,
// whose operations would bypass every per-syscall rule here; and every
// way to send the init (PID 1, process group 1) a signal whose si_code
// is not SI_USER or SI_TKILL — rt_sigqueueinfo and rt_tgsigqueueinfo to
// pid 1, pidfd_send_signal with a siginfo, F_SETOWN to 1 or -1 and
// F_SETOWN_EX, FIOSETOWN and SIOCSPGRP, and clone with CLONE_PARENT (a
// child of the init's whose exit signal the caller picks) — because Go's
// runtime takes such a SIGSEGV, SIGBUS or SIGILL for a fault of its own
// and crashes (see signals.go); clone3, whose flags a filter cannot
// read, fails with ENOSYS, so C libraries and Go fall back to clone.
// And no set-user-ID, set-group-ID bits through any call that sets a
// file's mode (see filter_mode.go).

// seccomp_data offsets (include/uapi/linux/seccomp.h); arguments are 64
// bits wide, and the kernel reads only the low half of the int arguments
// compared here, which is what the filter loads (little-endian on every
// supported architecture).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
	offArg2 = 32
)

// fioSetOwn is FIOSETOWN (uapi asm-generic/sockios.h), which x/sys/unix
// does not name; SIOCSPGRP is its socket twin.
const fioSetOwn = 0x8901

// x32Bit marks x32 system calls on amd64: the same architecture value,
// other numbers.
const x32Bit = 0x40000000

var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// retIf returns r when the accumulator equals v.
func retIf(v, r uint32) []bpf.Instruction {
	return []bpf.Instruction{
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: v, SkipTrue: 1},
		bpf.RetConstant{Val: r},
	}
}

// onSyscall runs block (which must end in a return) for system call nr.
func onSyscall(nr uint32, block []bpf.Instruction) []bpf.Instruction {
	return append([]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: uint8(len(block))}}, block...)
}

func cat(parts ...[]bpf.Instruction) []bpf.Instruction {
	var out []bpf.Instruction
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// worldFilter assembles the world filter; unixSockets allows unix
// sockets of every kind.
func worldFilter(unixSockets bool) ([]bpf.RawInstruction, error) {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("the world filter supports amd64 and arm64, not %s", runtime.GOARCH)
	}
	eperm := retErrno(unix.EPERM)
	unixAction := eperm
	if unixSockets {
		unixAction = retAllow
	}
	socket := cat(
		[]bpf.Instruction{bpf.LoadAbsolute{Off: offArg0, Size: 4}},
		retIf(unix.AF_INET, retAllow),
		retIf(unix.AF_INET6, retAllow),
		retIf(unix.AF_UNIX, unixAction),
		[]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.AF_NETLINK, SkipTrue: 4}},
		[]bpf.Instruction{bpf.LoadAbsolute{Off: offArg2, Size: 4}},
		retIf(unix.NETLINK_ROUTE, retAllow),
		[]bpf.Instruction{bpf.RetConstant{Val: retErrno(unix.EPROTONOSUPPORT)}},
		[]bpf.Instruction{bpf.RetConstant{Val: retErrno(unix.EAFNOSUPPORT)}},
	)
	pair := cat(
		[]bpf.Instruction{
			bpf.LoadAbsolute{Off: offArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipTrue: 1},
			bpf.RetConstant{Val: retErrno(unix.EAFNOSUPPORT)},
		},
	)
	if unixSockets {
		pair = append(pair, bpf.RetConstant{Val: retAllow})
	} else {
		pair = cat(pair,
			[]bpf.Instruction{
				bpf.LoadAbsolute{Off: offArg1, Size: 4},
				bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf}, // SOCK_TYPE_MASK
			},
			retIf(unix.SOCK_STREAM, retAllow),
			retIf(unix.SOCK_SEQPACKET, retAllow),
			[]bpf.Instruction{bpf.RetConstant{Val: retErrno(unix.EPERM)}},
		)
	}
	ioctl := cat(
		[]bpf.Instruction{bpf.LoadAbsolute{Off: offArg1, Size: 4}},
		retIf(unix.TIOCSTI, eperm),
		retIf(unix.TIOCLINUX, eperm),
		retIf(fioSetOwn, eperm),
		retIf(unix.SIOCSPGRP, eperm),
		[]bpf.Instruction{bpf.RetConstant{Val: retAllow}},
	)
	// pid (or tgid) 1: the init.
	toInit := cat(
		[]bpf.Instruction{bpf.LoadAbsolute{Off: offArg0, Size: 4}},
		retIf(1, eperm),
		[]bpf.Instruction{bpf.RetConstant{Val: retAllow}},
	)
	pidfdSignal := []bpf.Instruction{ // a siginfo (arg2) of the caller's making
		bpf.LoadAbsolute{Off: offArg2, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0, SkipTrue: 2},
		bpf.LoadAbsolute{Off: offArg2 + 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1},
		bpf.RetConstant{Val: eperm},
		bpf.RetConstant{Val: retAllow},
	}
	fcntl := cat(
		[]bpf.Instruction{bpf.LoadAbsolute{Off: offArg1, Size: 4}},
		retIf(unix.F_SETOWN_EX, eperm),
		[]bpf.Instruction{
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.F_SETOWN, SkipTrue: 5},
			bpf.LoadAbsolute{Off: offArg2, Size: 4},
		},
		retIf(1, eperm),
		retIf(0xffffffff, eperm), // -1: process group 1
		[]bpf.Instruction{bpf.RetConstant{Val: retAllow}},
	)
	clone := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_PARENT, SkipFalse: 1},
		bpf.RetConstant{Val: eperm},
		bpf.RetConstant{Val: retAllow},
	}
	prog := cat(
		[]bpf.Instruction{
			bpf.LoadAbsolute{Off: offArch, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
			bpf.RetConstant{Val: retKill},
			bpf.LoadAbsolute{Off: offNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: retKill},
		},
		onSyscall(unix.SYS_SOCKET, socket),
		onSyscall(unix.SYS_SOCKETPAIR, pair),
		onSyscall(unix.SYS_IOCTL, ioctl),
		onSyscall(unix.SYS_RT_SIGQUEUEINFO, toInit),
		onSyscall(unix.SYS_RT_TGSIGQUEUEINFO, toInit),
		onSyscall(unix.SYS_PIDFD_SEND_SIGNAL, pidfdSignal),
		onSyscall(unix.SYS_FCNTL, fcntl),
		onSyscall(unix.SYS_CLONE, clone),
		modeRules(),
		retIf(unix.SYS_CLONE3, retErrno(unix.ENOSYS)),
		retIf(unix.SYS_IO_URING_SETUP, retErrno(unix.EPERM)),
		retIf(unix.SYS_IO_URING_ENTER, retErrno(unix.EPERM)),
		retIf(unix.SYS_IO_URING_REGISTER, retErrno(unix.EPERM)),
		[]bpf.Instruction{bpf.RetConstant{Val: retAllow}},
	)
	return bpf.Assemble(prog)
}

// installWorldFilter sets no_new_privs (needed to install a filter
// without privilege, and already set by every confining driver) and
// installs the world filter on every thread of the init.
func installWorldFilter(unixSockets bool) error {
	raw, err := worldFilter(unixSockets)
	if err != nil {
		return err
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("installing the world's seccomp filter: %w", e)
	}
	if r != 0 {
		return fmt.Errorf("installing the world's seccomp filter: thread %d could not be synchronised", r)
	}
	return nil
}

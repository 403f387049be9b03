package pid1

import (
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// No privilege bits leave a world. A world writes its workspace, which
// the host's users see: a set-user-ID or set-group-ID file made there is
// run by a host user with the world's owner (root for a root dsh's
// native world, whose workspace is idmapped to its owner). So every call
// that sets a file's mode refuses, with EPERM, a mode with S_ISUID or
// S_ISGID: chmod, fchmod, fchmodat and fchmodat2; open, openat and creat
// when they create a file (O_CREAT or O_TMPFILE); mknod and mknodat
// (a regular file needs no capability). openat2 passes its mode in a
// struct a filter cannot read, so it fails with ENOSYS and C libraries
// fall back to openat. Not filtered, because the kernel already decides:
// mkdir and mkdirat, whose mode the kernel masks to the permission and
// sticky bits (a directory is set-group-ID only by inheriting the bit
// from a parent that has it, which only chmod could give it); and
// security.capability xattrs (file capabilities), which need
// CAP_SETFCAP, which no world process has — the conformance check
// NoPrivilegeBitsLeaveAWorld proves both. The checks read only the low
// 32 bits of each argument: the kernel's mode_t and flags are 32 bits.

// privBits are the mode bits that hand out an identity.
const privBits = unix.S_ISUID | unix.S_ISGID

// oTmpfile is __O_TMPFILE, O_TMPFILE without O_DIRECTORY (which x/sys
// folds into O_TMPFILE and which plain opens of directories set).
const oTmpfile = unix.O_TMPFILE &^ unix.O_DIRECTORY

// modeCall is a system call that sets a mode: the argument with the
// mode, and for the open family the argument whose flags say whether
// the mode is used (flags < 0: always).
type modeCall struct {
	nr          uint32
	mode, flags int
}

// modeCalls are the calls of every architecture; legacyModeCalls (per
// architecture) adds chmod, open, creat and mknod where they exist.
var modeCalls = []modeCall{
	{unix.SYS_FCHMOD, 1, -1},
	{unix.SYS_FCHMODAT, 2, -1},
	{unix.SYS_FCHMODAT2, 2, -1},
	{unix.SYS_OPENAT, 3, 2},
	{unix.SYS_MKNODAT, 2, -1},
}

func argOff(i int) uint32 { return uint32(offArg0 + 8*i) }

// modeRules refuses privilege bits in every call of modeCalls and
// legacyModeCalls, and openat2.
func modeRules() []bpf.Instruction {
	eperm := retErrno(unix.EPERM)
	var out []bpf.Instruction
	for _, c := range append(append([]modeCall(nil), modeCalls...), legacyModeCalls...) {
		var block []bpf.Instruction
		if c.flags >= 0 {
			block = append(block,
				bpf.LoadAbsolute{Off: argOff(c.flags), Size: 4},
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.O_CREAT | oTmpfile, SkipTrue: 1},
				bpf.RetConstant{Val: retAllow},
			)
		}
		block = append(block,
			bpf.LoadAbsolute{Off: argOff(c.mode), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: privBits, SkipFalse: 1},
			bpf.RetConstant{Val: eperm},
			bpf.RetConstant{Val: retAllow},
		)
		out = append(out, onSyscall(c.nr, block)...)
	}
	return append(out, retIf(unix.SYS_OPENAT2, retErrno(unix.ENOSYS))...)
}

// Package initspawn starts a native world's init: what dsh hands it at
// its spawn (the descriptors, flags and first message of the contract
// with package nsinit), the source of its binary, the spawner thread it
// is forked from, born in the world's cgroup v1 groups, and its id maps.
//
// It imports only the standard library packages that Go initialises
// first (os, syscall, sync and those with no initialisation at all) and
// initbin, so the package initialisation of dsh reaches it within its
// first two milliseconds, where the native driver comes after almost
// every other package (it needs net, whose initialisation waits for the
// last package in import-path order). That is what lets a dsh run line
// begin its init before the rest of dsh is initialised (Begin, Take).
package initspawn

import (
	"sync"
	"syscall"
)

// Arg is the hidden first argument that makes a binary run as the init:
// the driver re-executes dsh (or a test binary) with it, and the binary
// dispatches it to nsinit.Main before anything else.
const Arg = "__native-init"

// Descriptors the driver passes to stage 1 (ExtraFiles).
const (
	FDSync  = 3 // the ids byte, then the release (see package nsinit); EOF = abort
	FDReady = 4 // 0x00 when serving, 0x01 before exec mode's execve; else a Failure
	FDExe   = 5 // the binary itself, executed as /proc/self/fd/5; closed at once
	// FDBroker is the egress broker connection (sandbox.ServeEgress),
	// present only for a world with egress.
	FDBroker = 6
	// FDStdio is the init's end of the stdio socket (pid1's direct
	// stdio: the pipes of the world's processes passed to dsh), present
	// in serve mode only; fd 6 is then closed in a world without egress.
	FDStdio = 7
)

// The first message on FDSync, once dsh has written the init's id maps
// (it executes the init before it can write them): BecomeRoot tells the
// init to take uid and gid 0 of its user namespace (a root dsh's init
// still has host uid 0, which the maps leave unmapped), KeepIDs to keep
// the caller's, which the maps map to themselves.
const (
	BecomeRoot byte = 'r'
	KeepIDs    byte = 'k'
)

// RootEnv names, at the spawn, the mount point of the world's root (the
// state directory): the init makes the host's view there before its
// release.
const RootEnv = "DSH_NATIVE_ROOT"

// Path and Argv are how the init is executed: through its descriptor
// (the mapped init may not be allowed to look up a path).
const Path = "/proc/self/fd/5"

// Argv is the init's command line.
func Argv() []string { return []string{"dsh-init", Arg} }

// Env is the init's environment, for a world whose state directory is
// base. One P: the init only relays I/O, and every thread it has costs a
// round in the all-threads credential drop.
func Env(base string) []string { return []string{"GOMAXPROCS=1", RootEnv + "=" + base} }

// CloneFlags are the namespaces of every world.
const CloneFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP

// Capabilities (linux/capability.h) stage 1 needs.
const (
	capDACOverride = 1
	capSetgid      = 6
	capSetuid      = 7
	capSetpcap     = 8
	capNetAdmin    = 12
	capSysAdmin    = 21
	capSysResource = 24
)

// setupCaps are raised as ambient capabilities for stage 1 only: the
// init is not uid 0 of its namespace at its execve (an unprivileged
// caller's maps its own uid; a root caller's is still host uid 0, which
// the maps, written after the execve, leave unmapped), so execve would
// otherwise strip the capabilities the user namespace grants. Stage 1
// clears them before anything of the sandbox runs.
var setupCaps = []uintptr{
	capSysAdmin, capNetAdmin, capSetuid, capSetgid, capSetpcap, capDACOverride, capSysResource,
}

// rootSetupCaps are a root caller's: every capability of dsh's bounding
// set, what the namespace's root would get from execve. Its setup does
// as that root what setupCaps do not cover: giving an overlay
// workspace's upper layer the workspace's owner, and the copy-up of the
// overlay, which runs with the capabilities the init mounted it with.
var rootSetupCaps = sync.OnceValue(func() []uintptr {
	const prCapbsetRead = 23
	var caps []uintptr
	for c := uintptr(0); c < 64; c++ {
		r, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetRead, c, 0)
		if e == syscall.EINVAL {
			break // past the last capability the kernel knows
		}
		if e == 0 && r == 1 {
			caps = append(caps, c)
		}
	}
	return caps
})

// Attr is how the init is cloned: for a root caller (mapped) or not,
// born in the cgroup v2 group cgroupFD (-1: none).
func Attr(mapped bool, cgroupFD int) *syscall.SysProcAttr {
	sys := &syscall.SysProcAttr{
		// The child runs on dsh's memory until its execve (CLONE_VM,
		// CLONE_VFORK), as Go's exec does without a user namespace: no
		// copy of dsh's page tables, and no copy-on-write faults in dsh
		// while the init starts. Go adds neither once the flags hold
		// CLONE_NEWUSER, because its child waits for the parent to
		// write the id maps; this one waits for nothing: dsh writes the
		// maps once it has executed the init (MapIDs), and the init
		// takes its ids after them (nsinit).
		Cloneflags:  CloneFlags | syscall.CLONE_VM | syscall.CLONE_VFORK,
		AmbientCaps: setupCaps,
		// A session of its own, with no controlling terminal: nothing in
		// the world shares the user's terminal (its /dev/tty, TIOCSTI,
		// settings) or its process group (^C reaches dsh alone, which
		// forwards it to the command).
		Setsid: true,
	}
	if mapped {
		sys.AmbientCaps = rootSetupCaps()
	}
	if cgroupFD >= 0 {
		// cgroup v2: born in its cgroup (clone3 CLONE_INTO_CGROUP), so
		// its cgroup namespace is rooted at the world's own group.
		sys.UseCgroupFD, sys.CgroupFD = true, cgroupFD
	}
	return sys
}

// wrap is fmt.Errorf("%s: %w", msg, err) without fmt, whose reflect is
// initialised late.
func wrap(msg string, err error) error { return &wrapped{msg, err} }

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg + ": " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

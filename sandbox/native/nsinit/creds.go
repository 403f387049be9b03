package nsinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// lastCap bounds the capability numbers dropped from the bounding set
// when /proc/sys/kernel/cap_last_cap cannot be read; numbers the kernel
// does not know return EINVAL and end the loop.
const lastCap = 63

// Securebits (linux/securebits.h): root gets no capabilities from execve
// or setuid, and no descendant of the init can change that.
const (
	secbitNoRoot                  = 1 << 0
	secbitNoRootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7

	securebits = secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
)

// syscaller makes one syscall: on the calling thread only (threadSyscall)
// or on every thread of the process (syscall.AllThreadsSyscall).
type syscaller func(trap, a1, a2, a3 uintptr) (r1, r2 uintptr, err syscall.Errno)

func threadSyscall(trap, a1, a2, a3 uintptr) (uintptr, uintptr, syscall.Errno) {
	return unix.RawSyscall(trap, a1, a2, a3)
}

// AllThreadsAvailable reports whether credentials can be changed on every
// thread at once: Go can do it unless cgo is linked (dsh is built with
// CGO_ENABLED=0; test binaries often are not).
func AllThreadsAvailable() bool {
	_, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_GET_NO_NEW_PRIVS, 0, 0)
	return e != syscall.ENOTSUP
}

// dropExecPrivileges empties the bounding and ambient capability sets,
// locks securebits and sets no_new_privs on the threads sys reaches.
// None of these touch the effective set the setup still uses: they only
// limit what a later execve (or a child's) can grant. So the init does
// them in package initialisation, on every thread while the runtime has
// only its first one or two (see init in init.go): each
// syscall.AllThreadsSyscall is one signal round over all threads, and
// the 41 bounding-set drops dominate confinement time. Threads started
// later are cloned from confined ones and inherit all four.
//
// They need CAP_SETPCAP, so they go before the identity change and the
// capset that remove it.
func dropExecPrivileges(sys syscaller) error {
	last := lastCap
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v < lastCap {
			last = v
		}
	}
	for c := 0; c <= last; c++ {
		if _, _, e := sys(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); e != 0 {
			if e == unix.EINVAL {
				break
			}
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, e)
		}
	}
	if _, _, e := sys(unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, securebits, 0); e != 0 {
		return fmt.Errorf("locking securebits: %w", e)
	}
	if _, _, e := sys(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); e != 0 {
		return fmt.Errorf("clearing ambient capabilities: %w", e)
	}
	if _, _, e := sys(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e != 0 {
		return fmt.Errorf("setting no_new_privs: %w", e)
	}
	return nil
}

// execPrivilegesDropped reports whether what dropExecPrivileges does is
// already done on the calling thread: dsh-init does it at its entry point,
// before the runtime starts a second thread (cmd/dsh-init). It is enough
// to look at the first thread during package initialisation: every other
// thread was cloned from it after the entry point ran, and none can undo
// any of it (the bounding set only shrinks, securebits are locked with
// the ambient raise forbidden, no_new_privs cannot be unset).
func execPrivilegesDropped() bool {
	for c := 0; c <= lastCap; c++ {
		r, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_READ, uintptr(c), 0)
		if e == unix.EINVAL {
			break
		}
		if e != 0 || r != 0 {
			return false
		}
		if r, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c)); e != 0 || r != 0 {
			return false
		}
	}
	if r, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_GET_SECUREBITS, 0, 0); e != 0 || r&securebits != securebits {
		return false
	}
	r, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_GET_NO_NEW_PRIVS, 0, 0)
	return e == 0 && r == 1
}

// dropPrivileges switches the threads sys reaches to uid/gid with no
// capability left; dropExecPrivileges must have run on them first. With
// threadSyscall the calling OS thread must be locked and must call
// execve next: credentials are per thread, and with cgo linked Go cannot
// change those of every thread, so only the thread execve keeps is
// confined. With syscall.AllThreadsSyscall every thread is, and the init
// may go on without execve. Either way the caller must be the locked
// thread that lives as long as the init (see the parent-death signal).
func dropPrivileges(sys syscaller, uid, gid uint32, groups []uint32) error {
	if err := setIdentity(sys, uid, gid, groups); err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // all zero: no effective, permitted or inheritable capability
	if _, _, e := sys(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("clearing capabilities: %w", e)
	}
	// Changing the euid cleared the parent-death signal; the sandbox must
	// still die with dsh. One thread is enough: when dsh's spawner thread
	// exits, the kernel sends each thread's parent-death signal (if any)
	// to the whole init process, and this thread — locked, running the
	// main goroutine — exists as long as the init does.
	if _, _, e := threadSyscall(unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0); e != 0 {
		return fmt.Errorf("setting the parent-death signal: %w", e)
	}
	return nil
}

// setIdentity switches the threads sys reaches to uid/gid. The
// supplementary groups are replaced only where the user namespace allows
// setgroups (a root caller); an unprivileged caller's map denies it and
// keeps none mapped.
//
// An id the calling thread already holds is left as it is. Every earlier
// change of the init's ids was made on all of its threads at once (the
// syscall package's calls in awaitIDs), so the calling thread's ids are
// every thread's; and the ids a world runs as are most often those the
// init already took (uid and gid 0 of a root caller's namespace, the
// caller's own otherwise). An all-threads call that changes nothing would
// still signal every thread and wait for each, ~70 µs on the critical path
// of a world's start. TestInitThreadsAreConfined reads every thread's ids.
func setIdentity(sys syscaller, uid, gid uint32, groups []uint32) error {
	if setgroupsAllowed() && !holdsGroups(groups) {
		var p unsafe.Pointer
		if len(groups) > 0 {
			p = unsafe.Pointer(&groups[0])
		}
		if _, _, e := sys(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(p), 0); e != 0 {
			return fmt.Errorf("setting supplementary groups: %w", e)
		}
	}
	if !holdsID(unix.Getresgid, gid) {
		if _, _, e := sys(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
			return fmt.Errorf("setting gid %d: %w", gid, e)
		}
	}
	if !holdsID(unix.Getresuid, uid) {
		if _, _, e := sys(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
			return fmt.Errorf("setting uid %d: %w", uid, e)
		}
	}
	return nil
}

// holdsID reports whether the real, effective and saved ids get returns
// for the calling thread are all id.
func holdsID(get func() (int, int, int), id uint32) bool {
	r, e, s := get()
	return r == int(id) && e == int(id) && s == int(id)
}

// holdsGroups reports whether the calling thread's supplementary groups
// are exactly groups, in order (the kernel keeps them sorted; a list in
// another order is set again, harmlessly).
func holdsGroups(groups []uint32) bool {
	have, err := unix.Getgroups()
	if err != nil || len(have) != len(groups) {
		return false
	}
	for i, g := range have {
		if uint32(g) != groups[i] {
			return false
		}
	}
	return true
}

func setgroupsAllowed() bool {
	b, err := os.ReadFile("/proc/self/setgroups")
	return err == nil && string(b) == "allow\n"
}

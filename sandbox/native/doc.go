// Package native is dsh's daemonless sandbox driver for Linux: the default
// behind `dsh run`.
//
// Open re-executes the running binary (dsh, or a test binary whose TestMain
// dispatches [InitArg] to [InitMain]) as the init of a new sandbox, in new
// user, mount, pid, net, ipc, uts and cgroup namespaces. This package is
// the host side: it plans the world, makes its cgroup, protected paths and
// id mapping, and starts the init as ordered steps on a cleanup stack
// (spawn.go), undone in reverse when a step fails. The init itself, the
// code that runs inside the namespaces, is package nsinit; the two speak
// only through nsinit.Config (JSON, sent with the init's release on the
// sync socket) and nsinit.Failure (JSON on the ready pipe, turned back
// into this package's errors, ErrUnavailable with the step and fix). The
// init is spawned first, needing nothing of the world but who it runs as
// (initproc.go, and package initspawn, which dsh run's package
// initialisation already reaches before this package's: Prestart takes
// the init it spawned), while the host side makes the world's state. The
// init runs in
// two stages:
//
//  1. Setup (privileged inside the user namespace only): wait until the
//     parent has written its id maps (it executes the init first, on its
//     own memory: CLONE_VM|CLONE_VFORK) and, for a root dsh, take uid and
//     gid 0 of the namespace; wait until the parent releases it with its
//     Config (in exec mode once it is in the
//     world's cgroup;
//     a serving init is placed in it while it sets up, and the driver
//     waits for that before the world's first process); bind the host root
//     read-only (recursively, nosuid, nodev); put empty read-only tmpfs or
//     /dev/null over every mask; bind the workspace read-write at its own
//     path; add tmpfs /tmp, a private /proc (with /proc/sys read-only and
//     the kernel's sensitive files masked) and a minimal /dev; pivot_root;
//     bring loopback up; set hostname and rlimits; switch user; drop every
//     capability (bounding, ambient, inheritable, effective, permitted);
//     lock the securebits; set no_new_privs; install the seccomp filter
//     (assembled by this package, seccomp.go).
//     Credentials are per thread. In dsh (built without cgo) every thread
//     is confined at once (syscall.AllThreadsSyscall, seccomp TSYNC) and
//     the same process goes on to stage 2. Where cgo is linked (some test
//     binaries) that is impossible, so the changes are made on the one
//     locked thread that then re-executes the binary for stage 2; execve
//     leaves exactly that thread.
//  2. Serve (already confined): pid1.Run marks the init non-dumpable,
//     starts the egress relay (127.0.0.1:port inside, its streams from
//     the broker connection the init inherits as descriptor nsinit.FDBroker)
//     and installs the world filter; on cgroup v2 the init creates the
//     OS threads it will need (so a fork bomb at the pids limit cannot
//     make the Go runtime fail to start one; on v1 the processes are
//     forked into a group of their own instead) and serves package pid1 over its
//     stdin/stdout, with direct stdio: a process's pipes are passed to
//     dsh on the stdio socket (nsinit.FDStdio, a SOCK_SEQPACKET pair the
//     driver made), so dsh reads and writes them with no hop through the
//     init. Processes with a terminal are relayed.
//
// DSH_NATIVE_TRACE=1 in dsh's environment makes the init print how long
// each setup step took to Options.Stderr (dsh's stderr when that is nil),
// and the driver print the wall, user and kernel time of each host step
// of a world's start and close to dsh's stderr (steptrace.go).
//
// # Identity
//
// A user namespace is always created, also when dsh runs as root: every
// capability the init holds is then relative to a namespace the kernel
// does not trust for host resources, so a capability that survives by
// mistake grants nothing outside. An unprivileged caller maps only its
// own uid and gid (setgroups denied) and its world runs as the caller;
// per-uid kernel limits (inotify instances, RLIMIT_NPROC) are then shared
// with the caller's own processes, which no unprivileged mechanism can
// change. A root caller's world never holds host root: its ids 0-65535
// map to an unprivileged host range (Options.IDBase, else the /etc/subuid
// and /etc/subgid range of user "dsh" or "root", else DefaultIDBase), so
// host files of every id outside the range show as the overflow id and
// are protected by their permission bits (root-only keys, other users'
// files), and per-uid limits are the range's own. dsh makes the
// workspace an idmapped mount through the world's user namespace
// (open_tree and mount_setattr on the host, Linux 5.12+, a file system
// that supports idmapping; otherwise Open fails with ErrUnavailable) and
// passes it to the init over the sync socket, which attaches it with
// move_mount: owners look the same inside, the world runs as the
// workspace's owner unless Spec.User says otherwise, and what it creates
// belongs to that owner on the host. rootMasks are hidden as a second
// layer.
//
// # Home directories
//
// Every home (the effective $HOME, the caller's passwd home and, under
// sudo, the sudo user's) is covered by an empty read-only tmpfs; only the
// Spec.HomeAllow locations (default sandbox.DefaultHomeAllow, toolchains,
// config key sandbox.home.allow) that exist as directories are bound back
// read-only, unless a mask covers them. A workspace inside a home stays
// reachable. Device nodes in /dev and /dev/null over masked files are
// read-only binds: their mode, owner and times cannot change, while I/O
// on them is unaffected.
//
// # Limits
//
// Memory, pids and cpu limits are set through containerd/cgroups: cgroup1
// on v1 and hybrid hosts, cgroup2 on unified hosts. The parent creates the
// cgroup and places the init in it before the init proceeds (a sync
// pipe), so nothing in a world ever runs unlimited. A Spec that asks for
// limits fails closed where cgroups cannot be written (typically an
// unprivileged caller on a v1 host); a Spec with no Resources runs
// without a cgroup, and its processes still die with the init. The pids
// limit a Spec names is for the world's processes. On v1 they have a
// group of their own inside the world's, limited to exactly that plus
// the init's one thread that forks them there (pid1's forker); the
// world's limit adds a reserve for the init's other threads. On v2 the
// cgroup's limit is that plus the init's own threads.
//
// # Crash safety
//
// The init gets SIGKILL when dsh dies (PR_SET_PDEATHSIG) and the pid
// namespace dies with it; the control connection closing does the same.
// Cgroups and state directories are named after their owner's pid and
// start time (and the world ID), and [Driver.Reap] — called once by
// whoever opens worlds (sandbox.Reaper) — removes those whose owner is
// gone.
//
// [Probe] reports what this kernel offers (user namespaces, cgroup version
// and controllers, seccomp, landlock, overlayfs, pivot_root) for
// `dsh doctor`.
package native

// Package native is dsh's daemonless sandbox driver for Linux: the default
// behind `dsh run`.
//
// Open re-executes the running binary (dsh, or a test binary whose TestMain
// dispatches [InitArg] to [InitMain]) as the init of a new sandbox, in new
// user, mount, pid, net, ipc, uts and cgroup namespaces. The init runs in
// two stages:
//
//  1. Setup (privileged inside the user namespace only): wait until the
//     parent has placed it in the world's cgroup; bind the host root
//     read-only (recursively, nosuid, nodev); put empty read-only tmpfs or
//     /dev/null over every mask; bind the workspace read-write at its own
//     path; add tmpfs /tmp, a private /proc (with /proc/sys read-only and
//     the kernel's sensitive files masked) and a minimal /dev; pivot_root;
//     bring loopback up; set hostname and rlimits; switch user; drop every
//     capability (bounding, ambient, inheritable, effective, permitted);
//     lock the securebits; set no_new_privs; install the seccomp filter.
//     Credentials are per thread. In dsh (built without cgo) every thread
//     is confined at once (syscall.AllThreadsSyscall, seccomp TSYNC) and
//     the same process goes on to stage 2. Where cgo is linked (some test
//     binaries) that is impossible, so the changes are made on the one
//     locked thread that then re-executes the binary for stage 2; execve
//     leaves exactly that thread.
//  2. Serve (already confined): the init marks itself non-dumpable,
//     starts the egress forwarder (127.0.0.1:port inside to the world's
//     unix socket outside), creates the OS threads it will need (so a
//     fork bomb at the pids limit cannot make the Go runtime fail to
//     start one) and serves package pid1 over its stdin/stdout.
//
// DSH_NATIVE_TRACE=1 in dsh's environment makes the init print how long
// each setup step took to Options.Stderr.
//
// # Identity
//
// A user namespace is always created, also when dsh runs as root: every
// capability the init holds is then relative to a namespace the kernel
// does not trust for host resources, so a capability that survives by
// mistake grants nothing outside. The caller's identity is mapped: an
// unprivileged caller maps only its own uid and gid (setgroups denied); a
// root caller maps the identity range 0-65535, so file owners look the
// same inside and Spec.User may name another user. Processes run as
// Spec.User, or as the caller. When that is uid 0 on the host, root-only
// secret files (shadow, ssh host keys) are masked in addition to
// Spec.Masks, since uid 0 reads them without any capability.
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
// limit a Spec names is for the world's processes: the cgroup's limit is
// that plus the init's own threads.
//
// # Crash safety
//
// The init gets SIGKILL when dsh dies (PR_SET_PDEATHSIG) and the pid
// namespace dies with it; the control connection closing does the same.
// Cgroups and state directories are named after their owner's pid and
// start time, and Open reaps those whose owner is gone.
//
// [Probe] reports what this kernel offers (user namespaces, cgroup version
// and controllers, seccomp, landlock, overlayfs, pivot_root) for
// `dsh doctor`.
package native

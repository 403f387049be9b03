// Package nsinit is the native sandbox's init: the code that runs inside
// the new namespaces, after the driver (package native) has cloned it.
//
// The driver re-executes the running binary with [Arg] as its first
// argument; the binary dispatches it to [Main] (dsh through native's
// InitMain, test binaries from TestMain). Everything the init does was
// decided on the host: it inherits the descriptors FDSync, FDReady,
// FDExe, FDBroker and FDStdio, waits on FDSync until dsh has written its
// id maps ([BecomeRoot], [KeepIDs]), and then for its release there: a
// [Config] (JSON, at most [MaxConfig] bytes), with a root dsh's detached
// mounts (in
// exec mode the init is in its cgroup by then, a serving init is placed
// in it while it sets up, and runs nothing of the world before dsh asks,
// which dsh does only once it is), and then runs two stages:
//
//  1. Setup (privileged inside the user namespace only): build the root
//     (mounts.go), pivot_root, hostname, loopback, rlimits, then drop
//     every privilege (creds.go) and install the seccomp filter
//     (seccomp.go). Where every thread can be confined at once (built
//     without cgo) the same process serves; else the locked thread
//     re-executes the binary for stage 2 ([StageServe]).
//  2. Serve: package pid1 over stdin/stdout, with the egress relay and
//     the world filter, and with direct stdio on FDStdio (the pipes of
//     the world's processes passed to dsh, see pid1's direct.go); the
//     init reports readiness with 0x00 on FDReady.
//
// A failure of either stage is written on FDReady as a [Failure] (JSON),
// which the driver decodes into its own typed errors. nsinit imports
// sandbox and pid1, never the driver.
package nsinit

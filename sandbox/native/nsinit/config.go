package nsinit

import (
	"encoding/json"
	"fmt"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Arg is the hidden first argument that makes a binary run as the init:
// the driver re-executes dsh (or a test binary) with it, and the binary
// dispatches it to Main before anything else.
const Arg = initspawn.Arg

// Stages of the init, in os.Args[2]. Stage 1 has no argument.
const (
	StageServe = "serve" // stage 2: confined, serves pid1
	StageNoop  = "noop"  // exits 0: proves a probe sandbox came up
)

// Descriptors the driver passes to stage 1 (initspawn has their roles).
const (
	FDSync   = initspawn.FDSync
	FDReady  = initspawn.FDReady
	FDExe    = initspawn.FDExe
	FDBroker = initspawn.FDBroker
	FDStdio  = initspawn.FDStdio
)

// The first message on FDSync, once dsh has written the init's id maps
// (it executes the init before it can write them): BecomeRoot tells the
// init to take uid and gid 0 of its user namespace (a root dsh's init
// still has host uid 0, which the maps leave unmapped), KeepIDs to keep
// the caller's, which the maps map to themselves.
const (
	BecomeRoot = initspawn.BecomeRoot
	KeepIDs    = initspawn.KeepIDs
)

// MaxConfig bounds a Config as the driver sends it (JSON, the release on
// the sync socket): what one environment string could carry when the
// Config came that way, far above what a world's masks and mounts need.
const MaxConfig = 128 << 10

// InitThreads is how many OS threads the init creates up front where
// its threads share one cgroup with the world's processes (cgroup v2). Go
// starts a thread whenever a goroutine blocks in a syscall and no idle
// one is left, and dies if the kernel refuses; under a fork bomb the
// world's pids limit would refuse it. Threads created now are reused
// later, so the init never needs a new one at the limit. The driver adds
// room for them to the world's pids limit. On cgroup v1 the world's
// processes have a group of their own instead (Config.ForkGroup).
const InitThreads = 12

// Config is everything stage 1 needs, decided by the driver on the host
// side so the init makes no policy decisions of its own.
type Config struct {
	// Root is the empty host directory the new root is assembled on.
	Root string
	// Workspace is the real (symlink-free) host path of the workspace.
	Workspace string
	Hostname  string
	// Masks are real host paths that exist; ancestors of the workspace
	// come first (see mounts.go).
	Masks   []string
	Mounts  []specs.Mount
	Rlimits []specs.POSIXRlimit
	// Allow are real host paths of home locations bound back read-only
	// over the masked homes.
	Allow []string
	// Trees is set when the driver sends, with the sync byte, a detached
	// mount of the workspace (idmapped) and of each Allow entry.
	Trees bool
	// trees are those descriptors, as stage 1 received them.
	trees []int
	// UID, GID and Groups are the identity processes run as, in the user
	// namespace.
	UID, GID uint32
	Groups   []uint32
	// Egress reports whether the init inherits an egress broker
	// connection (FDBroker); ProxyPort is where its relay listens inside.
	Egress    bool
	ProxyPort int
	// UnixSockets is Spec.UnixSockets.
	UnixSockets bool
	// Stdio reports whether the init inherits the stdio socket
	// (FDStdio).
	Stdio bool
	// ForkGroup reports whether the release carries, after the trees,
	// the tasks file of the world's processes' own cgroup (cgroup v1):
	// pid1 forks every process from one thread that joins it, so the
	// init's other threads stay in the world's group, with room the
	// processes cannot take, and need not be made up front.
	ForkGroup bool
	// forkGroup is that descriptor, as stage 1 received it (-1: none).
	forkGroup int
	// Exec, when set, replaces stage 2: stage 1 executes this argv
	// directly (with ExecEnv) as the confined PID 1. Used by the driver's
	// probe and by tests of the setup stage.
	Exec    []string
	ExecEnv []string
	// WorkspaceMode is Spec.WorkspaceMode; OverlaySize is the upper
	// layer's bound in bytes (Spec.UpperSize).
	WorkspaceMode string
	OverlaySize   int64
	// upperFD is the overlay's upper tmpfs, sent to dsh (-1: none).
	upperFD int
	// Trace makes stage 1 print how long each setup step took to its
	// stderr.
	Trace bool
	// TraceSpawn is when the driver began the spawn (Unix nanoseconds),
	// for the trace's first step: the execve and the runtime's start.
	TraceSpawn int64 `json:",omitempty"`
	// RootView, when set, replaces the host's root with a minimal one
	// (Spec.Root minimal, rootview.go).
	RootView *RootView
	// Shm is the world's /dev/shm, a tmpfs as sandbox.Bounds sized it
	// with the Spec's tmpfs mounts (Mounts).
	Shm specs.Mount
	// IPC are sysctls of the world's IPC namespace (kernel.shm*), as
	// sandbox.Bounds decided them; stage 1 sets them.
	IPC map[string]string
	// Seccomp is the sandbox's seccomp program, assembled by the driver
	// (EncodeFilter); stage 1 loads it before anything of the world runs.
	Seccomp []byte
	// Protected are the binds over the workspace's protected paths
	// (sandbox.PrepareProtected), in order, made right after the
	// workspace is mounted.
	Protected []sandbox.ProtectedMount
}

// Encode returns c as the driver sends it.
func (c *Config) Encode() ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding init config: %w", err)
	}
	return b, nil
}

func decodeConfig(b []byte) (*Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("native init: decoding the configuration dsh sent: %w", err)
	}
	return &c, nil
}

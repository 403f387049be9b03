package sandbox

import (
	"net"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Spec is the single description of a sandbox. Every driver derives its
// configuration from it; a field a driver cannot honour is an error from
// that driver's Open, never silently dropped.
type Spec struct {
	// Workspace is the absolute host path of the workspace. It is mounted
	// read-write at the same path inside the sandbox, so paths mean the
	// same thing inside and out.
	Workspace string
	// AllowHomeWorkspace accepts a home directory itself (/root, /home/u,
	// $HOME) as Workspace. Without it such a workspace is refused: the
	// world could read and rewrite every dotfile and credential in it.
	AllowHomeWorkspace bool
	// Image is the container image (docker driver). Images are never
	// pulled implicitly.
	Image string
	// Hostname inside the sandbox. If empty, "dsh" is used.
	Hostname string
	// Env is the base environment of every process (PATH, HOME, …),
	// KEY=VALUE. Process environments are built on top of it.
	Env []string
	// User runs processes as this user. If nil, drivers use an unprivileged
	// user (the image's non-root user for docker, the caller's mapped
	// identity for native).
	User *specs.User
	// ReadonlyRoot makes the root filesystem read-only.
	ReadonlyRoot bool
	// NoNewPrivileges sets no_new_privs on every process.
	NoNewPrivileges bool
	// Capabilities kept by processes; nil or empty sets mean none.
	Capabilities *specs.LinuxCapabilities
	// Mounts added to the sandbox (tmpfs /tmp, read-only binds, …).
	// Drivers mount every writable tmpfs as Bounds sizes it: together
	// with the world's /dev/shm and System V shared memory within the
	// WriteLimit and within the memory limit less a reserve
	// (MemoryReserve), so a world that fills them gets ENOSPC, never an
	// OOM kill of its init. A size= here is the most a mount gets;
	// without one it gets a share of the budget.
	Mounts []specs.Mount
	// Masks are host paths hidden inside the sandbox (an empty directory
	// or /dev/null over them): credentials, sockets, /root.
	Masks []string
	// HomeAllow are the only locations of the host's home directories a
	// world may read ("~/path", read-only); the rest of every home is
	// hidden. Drivers that show no host home (docker) ignore it.
	HomeAllow []string
	// Resources are the cgroup limits: memory, pids, cpu.
	Resources *specs.LinuxResources
	// Rlimits applied to every process.
	Rlimits []specs.POSIXRlimit
	// Seccomp is the syscall filter. If nil, the driver's default filter is
	// used; every driver's default denies at least DeniedSyscalls (mount,
	// pivot_root, ptrace, process_vm_*, kexec, bpf, perf_event_open,
	// keyctl, io_uring, open_by_handle_at, …) and new namespaces. Whatever
	// the filter, the init's world filter (package pid1) is stacked on
	// it in every driver: only the socket families a world needs, and no
	// TIOCSTI, TIOCLINUX or io_uring.
	Seccomp *specs.LinuxSeccomp
	// UnixSockets lets the world's processes create unix sockets. If
	// false (the default), the init's world filter refuses them, and that
	// is what keeps every host unix socket out of reach: a path-based
	// socket is scoped by no namespace, and connect needs no write access
	// to the mount, so a read-only view does not stop it. If true, a
	// world can connect to any socket in its view that its identity may
	// write, including sockets in its workspace.
	UnixSockets bool
	// Egress gives the world the egress proxy at the one in-world address
	// (HTTP_PROXY and HTTPS_PROXY point at it), served by the
	// EgressServer the caller passes in OpenOptions. If false, the world
	// has no network at all.
	Egress bool
	// Labels are attached to every resource a driver creates, beside
	// dsh's own labels, so leftovers can be found and reaped.
	Labels map[string]string
	// Root is the world's view of the host's root file system: RootHost
	// ("" too), the host's root read-only with masks; or RootMinimal,
	// only the host's programs and libraries (/usr, /bin, /sbin, /lib*)
	// and an allow-list of /etc (sandbox/native/rootview.go), beside
	// /tmp, /dev, /proc, the workspace and Mounts. A driver whose root
	// is not the host's (an image) refuses RootMinimal: its root is
	// already its own.
	Root string
	// WriteLimit bounds what a world writes, in bytes; 0 means no bound
	// beyond the sizes of its tmpfs mounts and its memory limit. No file
	// grows past it: every process runs with RLIMIT_FSIZE at it (soft and
	// hard, or a lower one of Rlimits), so a write past it fails with
	// EFBIG (a process that does not ignore SIGXFSZ is killed by it). And
	// the world's writable tmpfs mounts (those of Mounts, and /dev/shm)
	// and its System V shared memory hold no more than it together: see
	// Bounds, which every driver applies.
	WriteLimit int64
	// Protected are workspace paths (relative, a trailing slash marking
	// a directory) that are read-only in the world, whether they exist
	// or not: see PrepareProtected, which every driver applies. nil or
	// empty protects nothing; DefaultSpec sets DefaultProtected.
	Protected []string
	// WorkspaceMode is how the world sees its workspace: WorkspaceRW
	// (the default, also ""), WorkspaceRO (a read-only mount: every
	// write fails with EROFS), or WorkspaceOverlay (a copy-on-write
	// overlay whose upper layer lives in dsh's state, bounded by
	// OverlaySize; the real workspace is untouched, and the instance is
	// an Overlay that hands the upper layer out once the world stops).
	WorkspaceMode WorkspaceMode
	// OverlaySize bounds the upper layer of an overlay workspace, in
	// bytes: a write past it fails with ENOSPC and the world goes on. 0
	// means DefaultOverlaySize. Ignored in the other modes.
	OverlaySize int64
}

// EgressServer serves an egress proxy on a listener (package netpolicy's
// Proxy implements it). Serve returns when the listener is closed. It is
// passed beside the Spec (OpenOptions.Egress), never in it: a Spec is
// data.
type EgressServer interface {
	Serve(l net.Listener) error
}

// Default limits of a sandbox. DefaultSpec grants DefaultCPUs, or every
// CPU of a host with fewer.
const (
	DefaultMemoryBytes = 2 << 30 // 2 GiB
	DefaultPids        = 1024
	DefaultCPUs        = 2.0
)

// DefaultMasks are host locations that hold credentials or control
// sockets. They are hidden in every sandbox; "~" is the invoking user's
// home directory.
var DefaultMasks = []string{
	"~/.ssh", "~/.aws", "~/.gnupg", "~/.docker", "~/.kube",
	"~/.config/gcloud", "~/.azure", "~/.netrc", "~/.git-credentials",
	"~/.npmrc", "~/.pypirc",
	"/root",
	"/var/run/docker.sock", "/run/docker.sock",
	"/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock",
	"/run/docker", "/var/lib/docker",
}

// DefaultHomeAllow are toolchain locations under the home a world sees
// by default: compilers, interpreters and the binaries they install,
// never the directories beside them where tools keep credentials
// (~/.cargo holds credentials.toml, hence only ~/.cargo/bin; no
// ~/.config, ~/.npm, ~/.m2 or ~/.gradle).
var DefaultHomeAllow = []string{
	"~/go", "~/.cargo/bin", "~/.rustup", "~/.local/bin", "~/.nvm", "~/.pyenv",
	"~/.deno/bin", "~/.bun/bin", "~/.volta", "~/.sdkman/candidates",
}

// DefaultSpec returns the hardened default Spec for a workspace: read-only
// root, tmpfs /tmp, no capabilities, no_new_privs, the driver's default
// seccomp filter, the default limits, write limit, masks and protected
// paths, and no
// network.
func DefaultSpec(workspace string) *Spec {
	mem := int64(DefaultMemoryBytes)
	pids := int64(DefaultPids)
	quota, period := CPUQuota(min(DefaultCPUs, float64(HostCPUs())))
	return &Spec{
		Workspace: workspace,
		Image:     "dsh/base:latest",
		Hostname:  "dsh",
		// HOME is the world's private, writable /tmp: tools keep caches and
		// dotfiles under $HOME, and the host's home is never the world's.
		Env:             []string{"PATH=" + DefaultPath, "LANG=C.UTF-8", "HOME=/tmp"},
		ReadonlyRoot:    true,
		NoNewPrivileges: true,
		Capabilities:    &specs.LinuxCapabilities{},
		Mounts: []specs.Mount{{
			Destination: "/tmp",
			Type:        "tmpfs",
			Source:      "tmpfs",
			Options:     []string{"nosuid", "nodev", "mode=1777", "size=536870912"},
		}},
		Masks:     append([]string(nil), DefaultMasks...),
		HomeAllow: append([]string(nil), DefaultHomeAllow...),
		Resources: &specs.LinuxResources{
			Memory: &specs.LinuxMemory{Limit: &mem},
			Pids:   &specs.LinuxPids{Limit: &pids},
			CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
		},
		Rlimits:    []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 65536, Soft: 65536}},
		WriteLimit: DefaultWriteLimit,
		Protected:  append([]string(nil), DefaultProtected...),
	}
}

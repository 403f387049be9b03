package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
)

// initMountPath is where the init binary appears inside every world.
const initMountPath = "/.dsh/dsh"

// resolvConfPath is the world's resolver configuration: no nameserver, so
// a lookup fails at once instead of reaching docker's embedded resolver.
const resolvConfPath = "/etc/resolv.conf"

// noDNS is the content of a world's resolv.conf. With no nameserver line
// the C library tries 127.0.0.1:53 inside the world's network namespace,
// where nothing listens, and Go's resolver does the same.
const noDNS = "# dsh: this world has no DNS; names are resolved only by the egress proxy (HTTP_PROXY).\noptions attempts:1 timeout:1\n"

// dockerDevBytes is the size of the tmpfs docker mounts at a
// container's /dev (root-owned, mode 0755).
const dockerDevBytes = 64 << 20

// containerPlan is everything the driver decided about one world's
// container before asking the daemon for it.
type containerPlan struct {
	Name       string
	Image      string
	User       string   // "uid:gid" or the image's user
	InitPath   string   // host path of the static init binary
	Entrypoint []string // PID 1's argv
	Env        []string // environment of PID 1 (spec env plus proxy variables)
	ResolvConf string   // host path of the world's resolv.conf; "" keeps docker's
	EgressDir  string   // host directory holding the egress socket; "" for none
	Labels     map[string]string
	Home       string // invoking user's home, for "~" in masks
	// Protected are the binds over the workspace's protected paths
	// (sandbox.PrepareProtected).
	Protected []sandbox.ProtectedMount
	// WorkspaceSource is the host path bound at the workspace: the
	// overlay's mount point in overlay mode, "" for the workspace itself.
	WorkspaceSource string
}

// containerConfig turns a Spec and a plan into the Engine API's container
// configuration. It is pure (no daemon, no filesystem writes) so the
// conversion can be tested field by field.
func containerConfig(spec *sandbox.Spec, p *containerPlan) (*container.Config, *container.HostConfig, error) {
	if err := checkUnsupported(spec); err != nil {
		return nil, nil, err
	}
	// The write budget (package sandbox): the Spec's tmpfs mounts and
	// /dev/shm sized, RLIMIT_FSIZE among the rlimits. A root world can
	// also write docker's own /dev, a tmpfs of dockerDevBytes the Engine
	// API cannot size: it comes off the budget first.
	var unsized int64
	if uid, _, _ := strings.Cut(p.User, ":"); uid == "0" || uid == "root" {
		unsized = dockerDevBytes
	}
	bounds := sandbox.Bounds(spec, unsized)
	sized := *spec
	sized.Mounts, sized.Rlimits = bounds.Mounts, bounds.Rlimits
	spec = &sized
	hostname := spec.Hostname
	if hostname == "" {
		hostname = "dsh"
	}
	cfg := &container.Config{
		Hostname:     hostname,
		User:         p.User,
		Image:        p.Image,
		Entrypoint:   p.Entrypoint,
		Cmd:          nil,
		Env:          p.Env,
		WorkingDir:   spec.Workspace,
		Labels:       p.Labels,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		// The init's control connection is the container's stdin/stdout.
		// StdinOnce closes stdin when dsh's attach connection ends, so a
		// crashed dsh makes the init kill everything and exit.
		OpenStdin:       true,
		StdinOnce:       true,
		Tty:             false,
		NetworkDisabled: true,
	}
	host := &container.HostConfig{
		// Loopback only. A world reaches out solely through the egress
		// socket mounted into it (see egress.go).
		NetworkMode:    "none",
		ReadonlyRootfs: spec.ReadonlyRoot,
		CapDrop:        []string{"ALL"},
		CapAdd:         capabilities(spec.Capabilities),
		IpcMode:        container.IPCModePrivate,
		CgroupnsMode:   container.CgroupnsModePrivate,
		// The attach stream carries every byte of every process's output;
		// a log driver would copy it all to the daemon's disk.
		LogConfig: container.LogConfig{Type: "none"},
		// Removed by the daemon as soon as the init exits, which it does
		// when dsh's connection ends: a crashed dsh leaves no container.
		AutoRemove: true,
		// The world's own /dev/shm (docker's would be ShmSize, with no
		// inode limit): a private IPC namespace still gets it.
		Tmpfs: map[string]string{bounds.Shm.Destination: strings.Join(bounds.Shm.Options, ",")},
		// System V shared memory bounded and removed with its last
		// process, in the world's private IPC namespace.
		Sysctls: bounds.IPC,
	}
	if spec.NoNewPrivileges {
		host.SecurityOpt = append(host.SecurityOpt, "no-new-privileges:true")
	}
	// The driver's default filter is docker's default allowlist with the
	// Spec contract's extra denials (seccomp.go); a Spec's own filter
	// replaces it.
	profile, err := defaultProfile()
	if spec.Seccomp != nil {
		var b []byte
		b, err = json.Marshal(spec.Seccomp)
		profile = string(b)
	}
	if err != nil {
		return nil, nil, &specError{field: "Seccomp", msg: err.Error()}
	}
	host.SecurityOpt = append(host.SecurityOpt, "seccomp="+profile)
	if err := resources(spec, host); err != nil {
		return nil, nil, err
	}
	host.Mounts = append(host.Mounts,
		mount.Mount{Type: mount.TypeBind, Source: p.InitPath, Target: initMountPath, ReadOnly: true},
		workspaceMount(spec, p.WorkspaceSource),
	)
	host.Mounts = append(host.Mounts, protectedMounts(p.Protected, spec.Workspace, p.WorkspaceSource)...)
	if p.EgressDir != "" {
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: p.EgressDir, Target: egressMountPath, ReadOnly: true})
	}
	if p.ResolvConf != "" {
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: p.ResolvConf, Target: resolvConfPath, ReadOnly: true})
	}
	for i, m := range spec.Mounts {
		if filepath.Clean(m.Destination) == filepath.Clean(spec.Workspace) {
			if m.Type == "tmpfs" {
				// A workspace at /tmp is already the writable /tmp; a
				// tmpfs there would hide it.
				continue
			}
			return nil, nil, &specError{field: fmt.Sprintf("Mounts[%d] (%s)", i, m.Destination), msg: "mounted over the workspace"}
		}
		if err := addMount(host, m); err != nil {
			return nil, nil, &specError{field: fmt.Sprintf("Mounts[%d] (%s)", i, m.Destination), msg: err.Error()}
		}
	}
	host.Mounts = append(host.Mounts, maskMounts(spec, p.Home)...)
	return cfg, host, nil
}

// checkUnsupported rejects Spec fields the docker driver cannot honour,
// so nothing is silently dropped.
func checkUnsupported(spec *sandbox.Spec) error {
	if spec.Workspace == "" || !filepath.IsAbs(spec.Workspace) {
		return &specError{field: "Workspace", msg: fmt.Sprintf("%q must be an absolute host path", spec.Workspace)}
	}
	if spec.Image == "" {
		return &specError{field: "Image", msg: "empty; set an image such as dsh/base:latest"}
	}
	if spec.Root == sandbox.RootMinimal {
		return &specError{field: "Root", msg: "minimal: the docker driver's root is the image, which already shows nothing of the host's root; leave Root empty, or use the native driver for a minimal view of the host"}
	}
	if r := spec.Resources; r != nil {
		if len(r.Devices) > 0 || len(r.HugepageLimits) > 0 || r.BlockIO != nil || r.Network != nil || len(r.Rdma) > 0 || len(r.Unified) > 0 {
			return &specError{field: "Resources", msg: "only memory, pids and cpu limits are supported by the docker driver"}
		}
	}
	return nil
}

// capabilities lists the capabilities a Spec keeps; docker adds them to
// every set after dropping ALL.
func capabilities(c *specs.LinuxCapabilities) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, set := range [][]string{c.Bounding, c.Effective, c.Permitted} {
		for _, name := range set {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

func resources(spec *sandbox.Spec, host *container.HostConfig) error {
	r := spec.Resources
	// Open checked the Spec already; the conversion checks again so it
	// never turns a limit the kernel would not enforce into none.
	if err := sandbox.CheckResources(r); err != nil {
		return invalid(err)
	}
	if r != nil && r.Memory != nil && r.Memory.Limit != nil {
		host.Memory = *r.Memory.Limit
		// No swap: a memory bomb is OOM-killed at the limit instead of
		// thrashing the host's swap.
		host.MemorySwap = *r.Memory.Limit
	}
	if r != nil && r.Pids != nil && r.Pids.Limit != nil {
		n := *r.Pids.Limit
		host.PidsLimit = &n
	}
	if r != nil && r.CPU != nil && r.CPU.Quota != nil {
		period := uint64(sandbox.DefaultCPUPeriod)
		if r.CPU.Period != nil {
			period = *r.CPU.Period
		}
		host.CPUQuota = *r.CPU.Quota
		host.CPUPeriod = int64(period)
	}
	for i, rl := range spec.Rlimits {
		name, ok := strings.CutPrefix(rl.Type, "RLIMIT_")
		if !ok {
			return &specError{field: fmt.Sprintf("Rlimits[%d]", i), msg: fmt.Sprintf("type %q is not RLIMIT_*", rl.Type)}
		}
		soft, hard := clampRlimit(rl.Type, rl.Soft, rl.Hard)
		host.Ulimits = append(host.Ulimits, &container.Ulimit{Name: strings.ToLower(name), Soft: int64(soft), Hard: int64(hard)})
	}
	return nil
}

// clampRlimit lowers a limit to this process's own hard limit. The daemon
// here is usually started from the same session, and runc fails to start
// a container whose limit exceeds what it may raise to; a lower limit is
// only stricter, so clamping never weakens confinement.
func clampRlimit(typ string, soft, hard uint64) (uint64, uint64) {
	res, ok := sandbox.RlimitResource(typ)
	if !ok {
		return soft, hard
	}
	var cur unix.Rlimit
	if unix.Getrlimit(res, &cur) != nil || cur.Max == unix.RLIM_INFINITY {
		return soft, hard
	}
	return min(soft, cur.Max), min(hard, cur.Max)
}

// addMount converts one OCI mount (sandbox.CheckMounts has checked it):
// a tmpfs takes every option as docker's tmpfs options; a bind takes ro
// and nothing else the engine can express. The Engine API (1.41 and
// later) has no nosuid, nodev or noexec for a bind mount, so they are
// refused here rather than dropped: a world would run set-uid programs,
// open devices or execute files the Spec forbids.
func addMount(host *container.HostConfig, m specs.Mount) error {
	opts, err := sandbox.ParseMountOptions(m.Options)
	if err != nil {
		return err
	}
	switch {
	case m.Type == "tmpfs":
		opts := slices.Clone(m.Options)
		// Docker adds noexec to tmpfs mounts unless told "exec"; honour
		// the Spec, which says noexec explicitly when it wants it.
		if !slices.Contains(opts, "noexec") && !slices.Contains(opts, "exec") {
			opts = append(opts, "exec")
		}
		host.Tmpfs[m.Destination] = strings.Join(opts, ",")
	case sandbox.IsBind(m):
		var cannot []string
		for _, o := range []struct {
			set  bool
			name string
		}{{opts.NoSuid, "nosuid"}, {opts.NoDev, "nodev"}, {opts.NoExec, "noexec"}} {
			if o.set {
				cannot = append(cannot, o.name)
			}
		}
		if len(cannot) > 0 {
			return fmt.Errorf("option %s on the bind of %s: the Docker Engine API cannot set it on a bind mount; drop it, or use the native driver, which honours it", strings.Join(cannot, ", "), m.Source)
		}
		host.Mounts = append(host.Mounts, mount.Mount{
			Type:     mount.TypeBind,
			Source:   m.Source,
			Target:   m.Destination,
			ReadOnly: opts.ReadOnly,
		})
	default:
		return fmt.Errorf("type %q is not supported (tmpfs or bind)", m.Type)
	}
	return nil
}

// maskMounts hides the Spec's masked host paths. A world sees no host
// file outside its workspace and its bind mounts, so only masks below
// those can expose anything: a directory is covered by an empty read-only
// tmpfs, anything else by /dev/null. Paths that do not exist are skipped.
func maskMounts(spec *sandbox.Spec, home string) []mount.Mount {
	roots := []string{spec.Workspace}
	for _, m := range spec.Mounts {
		if m.Type == "bind" || m.Type == "" {
			roots = append(roots, m.Source)
		}
	}
	var out []mount.Mount
	for _, mask := range spec.Masks {
		p := mask
		if rest, ok := strings.CutPrefix(mask, "~"); ok {
			if home == "" {
				continue
			}
			p = filepath.Join(home, rest)
		}
		if !filepath.IsAbs(p) || !under(p, roots) {
			continue
		}
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if fi.IsDir() {
			out = append(out, mount.Mount{Type: mount.TypeTmpfs, Target: p, ReadOnly: true,
				TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 4096, Mode: 0o500}})
		} else {
			out = append(out, mount.Mount{Type: mount.TypeBind, Source: os.DevNull, Target: p, ReadOnly: true})
		}
	}
	return out
}

// under reports whether p is one of roots or below one of them.
func under(p string, roots []string) bool {
	p = filepath.Clean(p)
	for _, r := range roots {
		r = filepath.Clean(r)
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// workspaceMount binds the workspace at its own path: read-only in
// WorkspaceRO, the overlay's mount point (src) in WorkspaceOverlay.
func workspaceMount(spec *sandbox.Spec, src string) mount.Mount {
	m := mount.Mount{Type: mount.TypeBind, Source: spec.Workspace, Target: spec.Workspace}
	if src != "" {
		m.Source = src
	}
	m.ReadOnly = spec.Mode() == sandbox.WorkspaceRO
	return m
}

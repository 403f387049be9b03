package sandbox

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// ErrInvalidSpec is matched (errors.Is) by every *SpecError: a Spec that
// no driver may open.
var ErrInvalidSpec = errors.New("invalid sandbox spec")

// SpecError names the Spec field at fault, what is wrong with it and why
// that matters, and how to fix it.
type SpecError struct {
	Field string // e.g. "Workspace", "Resources.CPU.Quota"
	Msg   string // what is wrong, and why
	Fix   string // what to do instead
}

func (e *SpecError) Error() string {
	s := "Spec." + e.Field + ": " + e.Msg
	if e.Fix != "" {
		s += "; " + e.Fix
	}
	return s
}

func (e *SpecError) Unwrap() error { return ErrInvalidSpec }

// Validate checks what every driver requires of a Spec, whatever it
// confines: the workspace (see CheckWorkspace), the limits (see
// CheckResources), the mounts (CheckMounts) and the rlimits
// (CheckRlimits). A driver then refuses, naming the field, what is
// narrower for it; it never drops what it cannot express. It returns the workspace's real path, which a driver
// mounts. Every driver calls it from its Open, so a Spec one driver
// refuses no other driver opens.
func Validate(s *Spec) (workspace string, err error) {
	if s == nil {
		return "", &SpecError{Field: "(nil)", Msg: "no spec given", Fix: "use sandbox.DefaultSpec(workspace)"}
	}
	ws, err := CheckWorkspace(s.Workspace, s.AllowHomeWorkspace)
	if err != nil {
		return "", err
	}
	if err := CheckResources(s.Resources); err != nil {
		return "", err
	}
	if err := CheckMounts(s.Mounts); err != nil {
		return "", err
	}
	if err := checkViews(s); err != nil {
		return "", err
	}
	if err := CheckWriteBudget(s); err != nil {
		return "", err
	}
	if err := CheckProtected(s.Protected); err != nil {
		return "", err
	}
	if err := CheckWorkspaceMode(s); err != nil {
		return "", err
	}
	return ws, CheckRlimits(s.Rlimits)
}

// Limits every driver accepts. A limit the kernel could not take, or one
// that would not limit anything, is an error at Open, never a silent "no
// limit".
const (
	// MinMemoryBytes is the smallest memory limit: the init (a Go program
	// serving the world's processes) and a shell need a few MiB of it.
	MinMemoryBytes = 8 << 20
	// MaxPids is the kernel's PID_MAX_LIMIT; pids.max takes nothing above.
	MaxPids = 1 << 22
	// MinCPUs is the smallest CPU limit: the kernel's minimum quota of
	// 1 ms per 100 ms period.
	MinCPUs = 0.01
	// MinCPUPeriod and MaxCPUPeriod bound the CFS period (µs), as the
	// kernel does; MinCPUQuota is its smallest quota (µs).
	MinCPUPeriod = 1000
	MaxCPUPeriod = 1000000
	MinCPUQuota  = 1000
	// DefaultCPUPeriod is the period used when a Spec names none (µs).
	DefaultCPUPeriod = 100000
)

// HostCPUs is the number of CPUs this process may run on: the most CPU
// time a limit can grant.
func HostCPUs() int { return runtime.NumCPU() }

// CheckMemory checks a memory limit in bytes. Its message names no field:
// the Spec and the configuration add their own.
func CheckMemory(n int64) error {
	if n < MinMemoryBytes {
		return fmt.Errorf("%d bytes is below the minimum of %d MiB (the world's init needs room); use a size of at least 8MiB", n, MinMemoryBytes>>20)
	}
	return nil
}

// CheckPids checks a limit on the number of processes.
func CheckPids(n int64) error {
	if n < 1 || n > MaxPids {
		return fmt.Errorf("%d is not a number of processes the kernel can limit to; use 1 to %d", n, MaxPids)
	}
	return nil
}

// CheckCPUs checks a CPU limit in CPUs' worth of time: finite, at least
// MinCPUs, at most the host's CPUs (more would not limit anything).
func CheckCPUs(cpus float64) error {
	host := HostCPUs()
	if math.IsNaN(cpus) || math.IsInf(cpus, 0) || cpus < MinCPUs || cpus > float64(host) {
		return fmt.Errorf("%v is not a CPU limit this host can apply; use %v to %d, this host's CPUs", cpus, MinCPUs, host)
	}
	return nil
}

// CPUQuota turns a CPU limit that passed CheckCPUs into a CFS quota and
// period (µs).
func CPUQuota(cpus float64) (quota int64, period uint64) {
	return int64(math.Round(cpus * DefaultCPUPeriod)), DefaultCPUPeriod
}

// CheckResources checks the limits of a Spec. A nil Resources, or a nil
// controller or limit in it, means no limit of that kind; a limit that
// is set must be one the kernel enforces.
func CheckResources(r *specs.LinuxResources) error {
	if r == nil {
		return nil
	}
	noLimit := "leave it nil for no limit of this kind"
	if m := r.Memory; m != nil && m.Limit != nil {
		if err := CheckMemory(*m.Limit); err != nil {
			return &SpecError{Field: "Resources.Memory.Limit", Msg: err.Error(), Fix: noLimit}
		}
	}
	if p := r.Pids; p != nil && p.Limit != nil {
		if err := CheckPids(*p.Limit); err != nil {
			return &SpecError{Field: "Resources.Pids.Limit", Msg: err.Error(), Fix: noLimit}
		}
	}
	if c := r.CPU; c != nil {
		period := uint64(DefaultCPUPeriod)
		if c.Period != nil {
			period = *c.Period
			if period < MinCPUPeriod || period > MaxCPUPeriod {
				return &SpecError{Field: "Resources.CPU.Period", Msg: fmt.Sprintf("%d µs is outside the kernel's range %d to %d", period, MinCPUPeriod, MaxCPUPeriod), Fix: "use 100000, or leave it nil"}
			}
		}
		if c.Quota != nil {
			q := *c.Quota
			if q < MinCPUQuota {
				// A NaN or infinite CPU count converts to a negative quota.
				return &SpecError{Field: "Resources.CPU.Quota", Msg: fmt.Sprintf("%d µs is below the kernel's minimum of %d µs (zero and negative quotas would mean no limit)", q, MinCPUQuota), Fix: noLimit}
			}
			if err := CheckCPUs(float64(q) / float64(period)); err != nil {
				return &SpecError{Field: "Resources.CPU.Quota", Msg: fmt.Sprintf("%d µs per %d µs period: %v", q, period, err), Fix: noLimit}
			}
		}
	}
	return nil
}

// Workspace locations a world may not write. A workspace is judged by
// its real path (symlinks resolved).
var (
	// systemTrees are refused with everything inside them: the host's
	// programs, libraries and configuration, boot files, kernel
	// interfaces and runtime state (sockets of services). Any top-level
	// lib* directory counts too.
	systemTrees = []string{
		"/etc", "/usr", "/bin", "/sbin", "/boot", "/sys", "/proc", "/dev", "/run",
		"/var/run", "/var/lock", "/var/log", "/var/cache", "/var/spool", "/var/mail",
		"/var/lib/docker", "/var/lib/containerd",
	}
	// systemDirs are refused themselves, but directories inside them are
	// where projects live (/var/tmp/ci-job, /var/lib/jenkins/workspace/x,
	// /opt/app, /srv/site, /home/u/proj).
	systemDirs = []string{"/", "/var", "/var/lib", "/var/tmp", "/tmp", "/home", "/opt", "/srv"}
)

// pseudoFS are kernel interface file systems, by statfs magic number: a
// workspace on one (wherever it is mounted) gives a world kernel knobs,
// such as cgroup.procs to leave its cgroup.
var pseudoFS = map[int64]string{
	0x9fa0: "proc", 0x62656572: "sysfs", 0x27e0eb: "cgroup", 0x63677270: "cgroup2",
	0x1cd1: "devpts", 0x64626720: "debugfs", 0x74726163: "tracefs", 0x73636673: "securityfs",
	0xcafe4a11: "bpf", 0xde5e81e4: "efivarfs", 0x6165676c: "pstore", 0x62656570: "configfs",
	0x65735543: "fusectl", 0x42494e4d: "binfmt_misc", 0x6e736673: "nsfs", 0x19800202: "mqueue",
}

// CheckWorkspace checks a Spec's workspace and returns its real path:
// absolute, an existing directory, not a system location (whose files a
// world could rewrite) and not a home directory itself (every dotfile and
// credential of the user) unless allowHome says that is meant.
func CheckWorkspace(path string, allowHome bool) (string, error) {
	bad := func(msg, fix string) (string, error) {
		return "", &SpecError{Field: "Workspace", Msg: msg, Fix: fix}
	}
	project := "use a project directory (such as /srv/app, /home/you/project or /var/tmp/job) as the workspace"
	if path == "" || !filepath.IsAbs(path) {
		return bad(fmt.Sprintf("%q is not an absolute path", path), "give the workspace as an absolute host path")
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return bad(fmt.Sprintf("%q: %v", path, err), "create the directory or use another workspace")
	}
	fi, err := os.Stat(real)
	if err != nil {
		return bad(fmt.Sprintf("%q: %v", path, err), "create the directory or use another workspace")
	}
	if !fi.IsDir() {
		return bad(fmt.Sprintf("%q is not a directory", path), project)
	}
	name := real
	if real != path {
		name = fmt.Sprintf("%s (%s)", path, real)
	}
	if sys := systemLocation(real); sys != "" {
		where := "is the system location"
		if sys != real {
			where = "is inside the system location"
		}
		return bad(fmt.Sprintf("%s %s %s: %s", name, where, sys, systemWhy(sys)), project)
	}
	if state := StateOverlap(real); state != "" {
		return bad(fmt.Sprintf("%s is, holds or lies in %s, dsh's own state: %s", name, state, StateWhy), project)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(real, &st); err != nil {
		return bad(fmt.Sprintf("%s: %v", name, err), project)
	} else if fs, ok := pseudoFS[int64(st.Type)]; ok {
		return bad(fmt.Sprintf("%s is on a %s file system: a world would write kernel settings (such as leaving its cgroup)", name, fs), project)
	}
	if !allowHome && isHome(real) {
		return bad(fmt.Sprintf("%s is a home directory: a world could read and rewrite every dotfile and credential in it (shell startup files, keys, tokens)", name),
			"use a project directory inside it, or, if the whole home is meant, set Spec.AllowHomeWorkspace (dsh run --workspace-home)")
	}
	return real, nil
}

// systemLocation returns the system location that real is, or is inside
// of, or "".
func systemLocation(real string) string {
	for _, d := range systemDirs {
		if real == d {
			return d
		}
	}
	top, _, _ := strings.Cut(strings.TrimPrefix(real, "/"), "/")
	if strings.HasPrefix(top, "lib") {
		return "/" + top
	}
	for _, t := range systemTrees {
		if real == t || strings.HasPrefix(real, t+"/") {
			return t
		}
	}
	return ""
}

// StateDirs are every directory a native driver keeps uid's state in
// when it is not told another (sandbox/native's stateBase picks the first
// it may use): the mount point of each world's root. None depends on the
// environment, so every dsh of uid checks its workspaces against the
// same ones.
func StateDirs(uid int) []string {
	return []string{"/run/dsh-native", "/run/user/" + strconv.Itoa(uid) + "/dsh-native", "/tmp/dsh-native-" + strconv.Itoa(uid)}
}

// StateWhy says what a world could do with dsh's state writable.
const StateWhy = "a world could replace other worlds' roots, or rename the directory away from under its mask and make its own in its place"

// StateOverlap returns the native state directory that path is, is
// inside of, or contains, or "": the caller's (StateDirs) or any uid's
// under /tmp. path is cleaned and its symbolic links resolved (as far as
// it exists). No workspace or writable bind may overlap one; reading one
// shows only empty mount points.
func StateOverlap(path string) string {
	real := realPath(filepath.Clean(path))
	for _, tmp := range []string{"/tmp", realPath("/tmp")} {
		if IsWithin(tmp, real) {
			return tmp + "/dsh-native-*"
		}
		rest, ok := strings.CutPrefix(real, tmp+"/")
		if !ok {
			continue
		}
		if top, _, _ := strings.Cut(rest, "/"); strings.HasPrefix(top, "dsh-native-") {
			return tmp + "/" + top
		}
	}
	for _, d := range StateDirs(os.Getuid()) {
		for _, d := range []string{d, realPath(d)} {
			if IsWithin(real, d) || IsWithin(d, real) {
				return d
			}
		}
	}
	return ""
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// systemWhy says what a world could do with a system location writable.
func systemWhy(sys string) string {
	switch sys {
	case "/sys", "/proc":
		return "a world could change kernel settings, and through /sys/fs/cgroup leave its cgroup and limits"
	case "/dev":
		return "a world could reach the host's devices"
	case "/run", "/var/run", "/var/lock":
		return "a world could reach and replace the sockets and state of the host's services"
	case "/", "/var", "/var/lib", "/home", "/opt", "/srv", "/tmp", "/var/tmp":
		return "it holds the host's or other users' files, which a world could rewrite"
	}
	return "a world could rewrite the host's system files"
}

// isHome reports whether real is a home directory: /root, a directory
// directly in /home, the caller's $HOME or passwd home, or under sudo
// the home of the user who ran sudo.
func isHome(real string) bool {
	homes := []string{"/root", os.Getenv("HOME")}
	if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil {
		homes = append(homes, u.HomeDir)
	}
	if id := os.Getenv("SUDO_UID"); id != "" {
		if u, err := user.LookupId(id); err == nil {
			homes = append(homes, u.HomeDir)
		}
	}
	if h, err := filepath.EvalSymlinks("/home"); err == nil && filepath.Dir(real) == h {
		return true
	}
	for _, h := range homes {
		if h == "" || !filepath.IsAbs(h) {
			continue
		}
		if r, err := filepath.EvalSymlinks(h); err == nil && r == real {
			return true
		}
	}
	return false
}

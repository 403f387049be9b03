package native

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
)

// Report says what native confinement this machine offers. Every field
// is filled by Probe; Problems lists, for each missing piece, what is
// missing and how to fix it. `dsh doctor` prints it.
type Report struct {
	// UserNamespaces reports whether this caller can create user
	// namespaces (UserNSDetail says why not).
	UserNamespaces bool
	UserNSDetail   string
	// CgroupVersion is "v1", "hybrid" (v1 controllers beside an empty
	// v2 tree), "v2", or "none".
	CgroupVersion string
	// CgroupControllers are the enabled controllers dsh uses that exist.
	CgroupControllers []string
	// CgroupWritable reports whether this caller can create world cgroups
	// (needed for memory/pids/cpu limits).
	CgroupWritable bool
	// Seccomp reports whether seccomp filters are supported.
	Seccomp bool
	// LandlockABI is the Landlock ABI version, 0 when unavailable.
	LandlockABI int
	// Overlayfs reports whether the kernel offers overlayfs.
	Overlayfs bool
	// PivotRoot reports whether a trial sandbox came up: namespaces,
	// read-only root, masks, pivot_root, capabilities and seccomp.
	PivotRoot bool
	// TrialError is the trial sandbox's error, if any.
	TrialError string
	// TrialTime is how long the trial sandbox took to start and exit.
	TrialTime time.Duration
	// Problems are the missing pieces, each with its fix.
	Problems []string
}

// Ready reports whether the native driver can run a world with limits.
func (r *Report) Ready() bool {
	return r.UserNamespaces && r.PivotRoot && r.Seccomp && r.CgroupWritable
}

// Probe reports what the native driver can do here (sandbox.Prober): the
// pieces Inspect finds, which host identity worlds hold, and what they
// see of the home (Options.Masks, Options.HomeAllow). With
// Options.NoLimits, worlds need no cgroup, so an unwritable cgroup
// hierarchy does not keep the driver from being ready.
func (d *Driver) Probe(ctx context.Context) sandbox.ProbeReport {
	r := d.Inspect(ctx)
	rep := sandbox.ProbeReport{Driver: d.Name(), Confines: true, Ready: r.Ready()}
	if d.opts.NoLimits {
		rep.Ready = r.UserNamespaces && r.PivotRoot && r.Seccomp
	}
	rep.Add("user namespaces", r.UserNamespaces, r.UserNSDetail)
	cg := r.CgroupVersion
	if len(r.CgroupControllers) > 0 {
		cg += " (" + strings.Join(r.CgroupControllers, ", ") + ")"
	}
	if !r.CgroupWritable {
		cg += ", not writable by this user"
	}
	if d.opts.NoLimits {
		cg += "; limits are off (sandbox.limits.off), so worlds run without memory, pids and cpu limits"
	}
	rep.Add("cgroups", r.CgroupWritable || d.opts.NoLimits, cg)
	rep.Add("seccomp", r.Seccomp, "")
	landlock := "unavailable (optional)"
	if r.LandlockABI > 0 {
		landlock = fmt.Sprintf("ABI %d", r.LandlockABI)
	}
	rep.Add("landlock", r.LandlockABI > 0, landlock)
	rep.Add("overlayfs", r.Overlayfs, "")
	trial := fmt.Sprintf("trial sandbox up and down in %v", r.TrialTime.Round(100_000))
	if r.TrialError != "" {
		trial = r.TrialError
	}
	rep.Add("pivot_root", r.PivotRoot, trial)
	rep.Add("identity", true, IdentityView(d.opts.IDBase))
	homes, readable := HomeView(append(slices.Clone(sandbox.DefaultMasks), d.opts.Masks...), d.opts.HomeAllow)
	home := "hidden: " + strings.Join(homes, ", ") + "; readable (read-only): "
	if len(readable) == 0 {
		home += "nothing"
	} else {
		home += strings.Join(readable, ", ")
	}
	rep.Add("home", true, home+" (sandbox.home.allow)")
	if !rep.Ready {
		rep.Problems = r.Problems
	}
	return rep
}

// Inspect inspects the kernel and starts one trial sandbox (no limits,
// no network) to prove the whole setup works here. It never prints.
func (d *Driver) Inspect(ctx context.Context) *Report {
	r := &Report{}
	r.UserNamespaces, r.UserNSDetail = userNSAllowed()
	if !r.UserNamespaces {
		r.Problems = append(r.Problems, r.UserNSDetail)
	}
	parent, err := d.cgroupParent()
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
	}
	switch cgroups.Mode() {
	case cgroups.Unified:
		r.CgroupVersion = "v2"
		if b, err := os.ReadFile(cgroupRoot + "/cgroup.controllers"); err == nil {
			for _, c := range strings.Fields(string(b)) {
				if c == "memory" || c == "pids" || c == "cpu" {
					r.CgroupControllers = append(r.CgroupControllers, c)
				}
			}
		}
		r.CgroupWritable = parent != "" && cgroupWritable(cgroupRoot, parent)
	case cgroups.Legacy, cgroups.Hybrid:
		r.CgroupVersion = "v1"
		if cgroups.Mode() == cgroups.Hybrid {
			r.CgroupVersion = "hybrid"
		}
		r.CgroupControllers = v1Enabled()
		r.CgroupWritable = parent != ""
		for _, c := range v1Controllers {
			r.CgroupWritable = r.CgroupWritable && cgroupWritable(filepath.Join(cgroupRoot, c), parent)
		}
	default:
		r.CgroupVersion = "none"
	}
	if !r.CgroupWritable {
		r.Problems = append(r.Problems, "cgroups are not writable by this user: "+cgroupFix)
	}
	r.Seccomp = seccompSupported()
	if !r.Seccomp {
		r.Problems = append(r.Problems, "seccomp filters are unavailable: the kernel needs CONFIG_SECCOMP_FILTER")
	}
	// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
	// returns the ABI version.
	if v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION); e == 0 {
		r.LandlockABI = int(v)
	}
	r.Overlayfs = hasFilesystem("overlay")

	if r.UserNamespaces {
		start := time.Now()
		err := d.trial(ctx)
		r.TrialTime = time.Since(start)
		r.PivotRoot = err == nil
		if err != nil {
			r.TrialError = err.Error()
			r.Problems = append(r.Problems, "trial sandbox failed: "+err.Error())
		}
	}
	return r
}

// trial runs the init's noop stage confined: proof that every setup step
// works, without limits so it also works where cgroups are not writable.
func (d *Driver) trial(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "dsh-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec := sandbox.DefaultSpec(dir)
	spec.Resources = nil
	return d.runOnce(ctx, spec, []string{"/proc/self/exe", InitArg, nsinit.StageNoop}, nil, nil)
}

// userNSAllowed reports whether this caller may create user namespaces,
// and if not, which setting forbids it and how to change it.
func userNSAllowed() (bool, string) {
	if v, ok := readInt("/proc/sys/user/max_user_namespaces"); ok && v == 0 {
		return false, "user namespaces are disabled (user.max_user_namespaces=0); enable them with: sysctl -w user.max_user_namespaces=15000"
	}
	if os.Geteuid() == 0 {
		return true, ""
	}
	if v, ok := readInt("/proc/sys/kernel/unprivileged_userns_clone"); ok && v == 0 {
		return false, "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0); enable them with: sysctl -w kernel.unprivileged_userns_clone=1, or run dsh as root"
	}
	if v, ok := readInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && v == 1 {
		return false, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1); allow them with: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for dsh granting userns, or run dsh as root"
	}
	return true, ""
}

// cgroupWritable reports whether this caller can make world cgroups
// under parent in hierarchy: the nearest existing directory of that path
// (parent itself once delegated) must be writable.
func cgroupWritable(hierarchy, parent string) bool {
	for p := filepath.Join(hierarchy, parent); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			return writableDir(p)
		}
		if p == hierarchy || p == "/" {
			return false
		}
	}
}

func readInt(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return v, err == nil
}

func v1Enabled() []string {
	f, err := os.Open("/proc/cgroups")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) == 4 && fl[3] == "1" {
			for _, c := range v1Controllers {
				if fl[0] == c {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func seccompSupported() bool {
	// PR_GET_SECCOMP works wherever seccomp is built in; the filter mode
	// itself is proven by the trial sandbox.
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return err == nil
}

func hasFilesystem(name string) bool {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == name {
			return true
		}
	}
	return false
}

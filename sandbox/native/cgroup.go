package native

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// cgroupRoot is where cgroup hierarchies are mounted; cgroupParent is the
// default group under which every world's cgroup lives (one per world,
// named by the world id); Options.CgroupParent replaces it.
const (
	cgroupRoot   = initspawn.CgroupRoot
	cgroupParent = initspawn.CgroupParent
)

// drainTimeout bounds how long destroy waits for killed processes to
// leave the cgroup before removing it.
const drainTimeout = 5 * time.Second

// worldCgroup is a world's cgroup on either hierarchy.
type worldCgroup interface {
	// add places pid in the cgroup.
	add(pid int) error
	// limit sets the limits r.
	limit(r *specs.LinuxResources) error
	// dirFD returns a descriptor of the cgroup directory for clone3's
	// CLONE_INTO_CGROUP (v2 only), or -1.
	dirFD() int
	// setPids changes the pids limit.
	setPids(n int64) error
	// takeForkGroup hands over the tasks file of the world's processes'
	// own group, which limit made with exactly their pids limit (cgroup
	// v1), for the init's forking thread to join (pid1.Config.ForkGroup);
	// the caller closes it. Nil where there is none (cgroup v2, or no
	// pids limit).
	takeForkGroup() *os.File
	// destroy kills every process in the cgroup and removes it.
	destroy() error
	// freeze and thaw stop and restart every process in the cgroup
	// (freeze.go); killFrozen SIGKILLs every member of a frozen cgroup
	// and thaws it, so the kills land before anything runs again.
	freeze() error
	thaw() error
	killFrozen()
}

// pidsReserve is added to a world's pids limit for the init's threads.
// On cgroup v1 the world's processes have a group of their own inside,
// procsGroup, limited to exactly what the Spec names, and the reserve is
// the room of the init's runtime to start threads whenever it needs
// them. Where the init shares a group with them (v2), the reserve holds
// it while it starts its idle threads (nsinit.InitThreads and the
// runtime's few); once it serves, the driver lowers the limit to the
// Spec's plus the threads the init really has (fitPids).
const pidsReserve = nsinit.InitThreads + 16

// procsGroup is the world's processes' group in a world's cgroup v1 pids
// hierarchy (cgroupV1.limit).
const procsGroup = "procs"

// limits keeps the controllers the native driver sets (memory, pids,
// cpu) and reports whether any limit is requested at all. The values
// were checked by sandbox.Validate: a limit that is set is one the
// kernel enforces.
func limits(r *specs.LinuxResources) (*specs.LinuxResources, bool, error) {
	if r == nil {
		return nil, false, nil
	}
	if len(r.Devices) > 0 || r.BlockIO != nil || len(r.HugepageLimits) > 0 || r.Network != nil || len(r.Rdma) > 0 || len(r.Unified) > 0 {
		return nil, false, &specError{Field: "Resources", Msg: "only memory, pids and cpu limits are supported by the native driver"}
	}
	out := &specs.LinuxResources{}
	if m := r.Memory; m != nil && m.Limit != nil {
		out.Memory = &specs.LinuxMemory{Limit: m.Limit, Swap: m.Limit} // no swap beyond the limit
	}
	if p := r.Pids; p != nil && p.Limit != nil {
		n := *p.Limit + pidsReserve
		out.Pids = &specs.LinuxPids{Limit: &n}
	}
	if c := r.CPU; c != nil && c.Quota != nil {
		out.CPU = &specs.LinuxCPU{Quota: c.Quota, Period: c.Period}
	}
	return out, out.Memory != nil || out.Pids != nil || out.CPU != nil, nil
}

// cgroupFix is the advice given when limits cannot be set.
// A world without limits (Spec.Resources nil) needs no cgroup.
const cgroupFix = "memory/pids/cpu limits need a writable cgroup: run dsh as root, or on a cgroup v2 host " +
	"inside a delegated scope (systemd-run --user --scope -p Delegate=yes dsh ...), or use --driver docker; " +
	"or, knowingly, run without resource limits: dsh run --no-limits (config sandbox.limits.off: true)"

func unified() bool { return cgroups.Mode() == cgroups.Unified }

// checkCgroupParent accepts a cgroup path relative to each hierarchy's
// root that stays inside it.
func checkCgroupParent(p string) error {
	if p == "" || filepath.IsAbs(p) || filepath.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("native: Options.CgroupParent %q must be a clean relative path inside the cgroup hierarchy, such as %q", p, cgroupParent)
	}
	return nil
}

// newCgroup creates the world's cgroup under parent with the given limits.
func newCgroup(parent, id string, r *specs.LinuxResources) (worldCgroup, error) {
	if unified() {
		return newCgroupV2(cgroupRoot, parent, id, cgroup2.ToResources(r))
	}
	if cgroups.Mode() == cgroups.Unavailable {
		return nil, &unavailableError{Step: "find a cgroup hierarchy", Err: errors.New("no cgroup file system at " + cgroupRoot), Fix: cgroupFix}
	}
	if err := requireV1(); err != nil {
		return nil, err
	}
	c, err := cgroup1.New(cgroup1.StaticPath("/"+parent+"/"+id), r, cgroup1.WithHierarchy(v1Hierarchy))
	if err != nil {
		return nil, &unavailableError{Step: "create cgroup v1 " + parent + "/" + id, Err: err, Fix: cgroupFix}
	}
	return newCgroupV1(c, parent, id), nil
}

// newCgroupFor creates the world's cgroup under parent ready for the
// limits r — on v2 with their controllers enabled in its parents'
// cgroup.subtree_control, as the library does when it sets them — but
// sets none of them: limit does, once the init is spawned (makeCgroup).
func newCgroupFor(parent, id string, r *specs.LinuxResources) (worldCgroup, error) {
	if !unified() {
		return newCgroup(parent, id, &specs.LinuxResources{})
	}
	return newCgroupV2For(cgroupRoot, parent, id, r)
}

// newCgroupV2For is newCgroupFor on the unified hierarchy mounted at
// mountpoint.
func newCgroupV2For(mountpoint, parent, id string, r *specs.LinuxResources) (*cgroupV2, error) {
	g, err := newCgroupV2(mountpoint, parent, id, &cgroup2.Resources{})
	if err != nil {
		return nil, err
	}
	if r == nil {
		return g, nil
	}
	if err := g.m.ToggleControllers(cgroup2.ToResources(r).EnabledControllers(), cgroup2.Enable); err != nil {
		_ = g.m.Delete()
		return nil, &unavailableError{Step: "enable the cgroup v2 controllers of " + parent + "/" + id, Err: err, Fix: cgroupFix}
	}
	return g, nil
}

// newCgroupV2 creates a world cgroup on the unified hierarchy mounted at
// mountpoint.
func newCgroupV2(mountpoint, parent, id string, r *cgroup2.Resources) (*cgroupV2, error) {
	m, err := cgroup2.NewManager(mountpoint, "/"+parent+"/"+id, r)
	if err != nil {
		return nil, &unavailableError{Step: "create cgroup v2 " + parent + "/" + id, Err: err, Fix: cgroupFix}
	}
	return &cgroupV2{m: m, path: filepath.Join(mountpoint, parent, id), fd: -1}, nil
}

// v1Controllers are the hierarchies a world joins on cgroup v1: the
// three it limits and the freezer that makes killing race-free.
var v1Controllers = initspawn.V1Controllers

func v1Hierarchy() ([]cgroup1.Subsystem, error) {
	return []cgroup1.Subsystem{
		// Without swap accounting (no memory.memsw.*) the limit bounds
		// RAM only; failing there would make limits unusable on such
		// hosts for no gain in confinement of memory itself.
		cgroup1.NewMemory(cgroupRoot, cgroup1.OptionalSwap()), cgroup1.NewPids(cgroupRoot),
		cgroup1.NewCpu(cgroupRoot), cgroup1.NewFreezer(cgroupRoot),
	}, nil
}

func requireV1() error {
	for _, c := range v1Controllers {
		if _, err := os.Stat(filepath.Join(cgroupRoot, c)); err != nil {
			return &unavailableError{Step: "use the cgroup v1 " + c + " controller", Err: err, Fix: "mount it (or boot with it enabled), or use --driver docker"}
		}
	}
	return nil
}

// loadCgroup finds an existing world cgroup under parent (for reaping).
func loadCgroup(parent, id string) (worldCgroup, error) {
	if unified() {
		m, err := cgroup2.Load("/" + parent + "/" + id)
		if err != nil {
			return nil, err
		}
		return &cgroupV2{m: m, path: filepath.Join(cgroupRoot, parent, id), fd: -1}, nil
	}
	c, err := cgroup1.Load(cgroup1.StaticPath("/"+parent+"/"+id), cgroup1.WithHierarchy(v1Hierarchy),
		func(c *cgroup1.InitConfig) error { c.InitCheck = cgroup1.AllowAny; return nil })
	if err != nil {
		return nil, err
	}
	return newCgroupV1(c, parent, id), nil
}

// leftoverCgroups lists the world ids that have a cgroup under parent.
func leftoverCgroups(parent string) []string {
	dirs := []string{filepath.Join(cgroupRoot, parent)}
	if !unified() {
		dirs = dirs[:0]
		for _, c := range v1Controllers {
			dirs = append(dirs, filepath.Join(cgroupRoot, c, parent))
		}
	}
	seen := map[string]bool{}
	var ids []string
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.IsDir() && !seen[e.Name()] {
				seen[e.Name()] = true
				ids = append(ids, e.Name())
			}
		}
	}
	return ids
}

type cgroupV1 struct {
	c cgroup1.Cgroup
	// dirs are the group's directories, one per hierarchy, in the order
	// removeEmpty removes them: freezer first, memory last.
	dirs []string
	// procs is the world's processes' group in the pids hierarchy, made
	// by limit, and tasks its tasks file (nil until then).
	procs string
	tasks *os.File
}

func newCgroupV1(c cgroup1.Cgroup, parent, id string) *cgroupV1 {
	return &cgroupV1{c: c, dirs: initspawn.V1Dirs(func(string) string { return filepath.Join(parent, id) }),
		procs: filepath.Join(cgroupRoot, "pids", parent, id, procsGroup)}
}

// add moves pid into the group by writing its cgroup.procs in every
// hierarchy itself: the library's AddProc holds the group's lock for the
// whole move (an RCU grace period of the kernel per write), which would
// keep limit waiting while a prestarted init is placed (preCgroup).
func (g *cgroupV1) add(pid int) error {
	for _, d := range g.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return err
		}
	}
	return nil
}

// limit gives the group the limits r. With a pids limit it makes the
// world's processes' group inside, limited to exactly the Spec's (r's
// without the reserve) plus the one thread of the init that forks them
// there, and opens its tasks file for that thread (takeForkGroup): a
// thread's children start in its group, and the kernel checks the
// group's limit at the fork. The init's other threads stay outside, in
// the reserve, which the processes cannot reach.
func (g *cgroupV1) limit(r *specs.LinuxResources) error {
	if err := g.c.Update(r); err != nil {
		return err
	}
	if r.Pids == nil || r.Pids.Limit == nil {
		return nil
	}
	if err := os.Mkdir(g.procs, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	forker := int64(1)
	max := strconv.FormatInt(*r.Pids.Limit-pidsReserve+forker, 10)
	if err := os.WriteFile(filepath.Join(g.procs, "pids.max"), []byte(max), 0); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(g.procs, "tasks"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if g.tasks != nil {
		g.tasks.Close()
	}
	g.tasks = f
	return nil
}

func (g *cgroupV1) takeForkGroup() *os.File {
	f := g.tasks
	g.tasks = nil
	return f
}

func (g *cgroupV1) dirFD() int { return -1 }

func (g *cgroupV1) setPids(n int64) error {
	return g.c.Update(&specs.LinuxResources{Pids: &specs.LinuxPids{Limit: &n}})
}

// destroy freezes the group so nothing can fork while it is being
// killed, SIGKILLs every member, thaws it so the kills are delivered, and
// removes it once empty.
func (g *cgroupV1) destroy() error {
	if g.tasks != nil {
		g.tasks.Close()
		g.tasks = nil
	}
	if g.removeEmpty() {
		// Already empty: the usual case, the init's death emptied it.
		return nil
	}
	_ = g.c.Freeze()
	procs, _ := g.c.Processes(cgroup1.Freezer, true)
	killMembers(procs)
	_ = g.c.Thaw()
	deadline := time.Now().Add(drainTimeout)
	for {
		procs, err := g.c.Processes(cgroup1.Memory, true)
		if err != nil || len(procs) == 0 || time.Now().After(deadline) {
			break
		}
		killMembers(procs)
		time.Sleep(5 * time.Millisecond)
	}
	return g.remove()
}

// killMembers SIGKILLs the processes of a v1 group but dsh itself: a
// v1 group lists the process of each thread in it, and the spawner
// thread is in a world's group while it forks the init (spawner.go).
func killMembers(procs []cgroup1.Process) {
	for _, p := range procs {
		if p.Pid != os.Getpid() {
			_ = syscall.Kill(p.Pid, syscall.SIGKILL)
		}
	}
}

// removeEmpty removes the group with one rmdir per hierarchy and reports
// whether it is gone. The kernel refuses (EBUSY) to remove a cgroup that
// still holds a process or a child group, so success needs no check of
// its members first; the library's Processes and Delete walk and stat
// every file of all four directories, ~2 ms per world on this VM. The
// freezer goes first and memory last: if any removal is refused, destroy
// goes on with freeze-and-kill, which finds stragglers in the memory
// group, and the library's Delete skips hierarchies already removed.
func (g *cgroupV1) removeEmpty() bool {
	for _, d := range append([]string{g.procs}, g.dirs...) {
		if err := syscall.Rmdir(d); err != nil && err != syscall.ENOENT {
			return false
		}
	}
	return true
}

func (g *cgroupV1) remove() error {
	_ = syscall.Rmdir(g.procs) // emptied with the rest; the library removes no child group
	if err := g.c.Delete(); err != nil && !errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return fmt.Errorf("native: removing cgroup: %w", err)
	}
	return nil
}

type cgroupV2 struct {
	m    *cgroup2.Manager
	path string
	fd   int
}

func (g *cgroupV2) add(pid int) error { return g.m.AddProc(uint64(pid)) }

func (g *cgroupV2) limit(r *specs.LinuxResources) error { return g.m.Update(cgroup2.ToResources(r)) }

func (g *cgroupV2) setPids(n int64) error {
	return g.m.Update(&cgroup2.Resources{Pids: &cgroup2.Pids{Max: n}})
}

func (g *cgroupV2) takeForkGroup() *os.File { return nil }

func (g *cgroupV2) dirFD() int {
	if g.fd < 0 {
		if fd, err := syscall.Open(g.path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0); err == nil {
			g.fd = fd
		}
	}
	return g.fd
}

// destroy uses cgroup.kill (or the library's freeze-and-kill fallback on
// kernels before 5.14) and removes the group once empty.
func (g *cgroupV2) destroy() error {
	if g.fd >= 0 {
		syscall.Close(g.fd)
		g.fd = -1
	}
	_ = g.m.Kill()
	deadline := time.Now().Add(drainTimeout)
	for {
		procs, err := g.m.Procs(true)
		if err != nil || len(procs) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := g.m.Delete(); err != nil {
		return fmt.Errorf("native: removing cgroup: %w", err)
	}
	return nil
}

// fitPids sets the world's pids limit to want plus the threads the init
// has now (it created all it will need before reporting ready).
func fitPids(cg worldCgroup, initPid int, want int64) error {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(initPid) + "/status")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return err
			}
			return cg.setPids(want + n)
		}
	}
	return errors.New("no Threads line in /proc/PID/status")
}

// v1Groups are the directories of a cgroup v1 world's group, nil on v2.
func v1Groups(cg worldCgroup) []string {
	if g, ok := cg.(*cgroupV1); ok {
		return g.dirs
	}
	return nil
}

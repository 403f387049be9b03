package native

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
)

// The v2 code path on this hybrid host's (controller-less) unified
// hierarchy: a process born in the world's cgroup through
// CLONE_INTO_CGROUP, and destroy killing it and removing the group.
func TestCgroupV2BornInsideKillAndRemove(t *testing.T) {
	mount := v2Mount(t)
	id, err := stateName(sandbox.NewWorldID())
	if err != nil {
		t.Fatal(err)
	}
	cg, err := newCgroupV2(mount, cgroupParent, id, &cgroup2.Resources{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cg.destroy() })
	cmd := exec.Command("sleep", "100")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cg.dirFD()}
	if _, err := startPinned(cmd, nil, nil); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	b, _ := os.ReadFile("/proc/" + itoa(cmd.Process.Pid) + "/cgroup")
	if !strings.Contains(string(b), "0::/"+cgroupParent+"/"+id+"\n") {
		t.Errorf("process was not born in the world's cgroup: %s", b)
	}
	if err := cg.destroy(); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(cmd.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(cmd.Process.Pid) {
		t.Error("process in the destroyed cgroup survived")
	}
	if _, err := os.Stat(filepath.Join(mount, cgroupParent, id)); err == nil {
		t.Error("cgroup directory survived destroy")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// v1Only skips the test but on a cgroup v1 host, as root with cgroups.
func v1Only(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireCgroups(t)
	if unified() {
		t.Skip("cgroup v1 only")
	}
}

// v2Mount is where the unified hierarchy is mounted (on this hybrid
// host, without controllers); the test is skipped where there is none.
func v2Mount(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t)
	mount := cgroupRoot
	if !unified() {
		mount = filepath.Join(cgroupRoot, "unified")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mount, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Skipf("no cgroup v2 hierarchy at %s", mount)
	}
	return mount
}

// On cgroup v1, destroy of a group that still holds a process — the
// first rmdir is refused — kills the process and removes every
// hierarchy's directory; of an empty group it removes them all.
func TestCgroupV1DestroyKillsMembersAndRemoves(t *testing.T) {
	v1Only(t)
	limit := int64(64)
	for _, member := range []bool{true, false} {
		id, err := stateName(sandbox.NewWorldID())
		if err != nil {
			t.Fatal(err)
		}
		cg, err := newCgroup(cgroupParent, id, &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: &limit}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cg.destroy() })
		var cmd *exec.Cmd
		if member {
			cmd = exec.Command("sleep", "100")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go cmd.Wait()
			if err := cg.add(cmd.Process.Pid); err != nil {
				t.Fatal(err)
			}
		}
		if err := cg.destroy(); err != nil {
			t.Fatalf("destroy (member %v): %v", member, err)
		}
		if member {
			deadline := time.Now().Add(5 * time.Second)
			for alive(cmd.Process.Pid) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if alive(cmd.Process.Pid) {
				t.Error("process in the destroyed cgroup survived")
			}
		}
		for _, c := range v1Controllers {
			if _, err := os.Stat(filepath.Join(cgroupRoot, c, cgroupParent, id)); err == nil {
				t.Errorf("cgroup %s/%s/%s survived destroy (member %v)", c, cgroupParent, id, member)
			}
		}
	}
}

// A cgroup parent outside the hierarchy (or not a plain path) is refused
// before anything is created, naming the option.
func TestCgroupParentMustStayInside(t *testing.T) {
	ws := t.TempDir()
	for _, p := range []string{"/dsh-native", "..", "../x", "a/../../b", "a//b", "a/"} {
		_, err := New(&Options{Executable: initExe(t), StateDir: stateDir(t), CgroupParent: p}).Open(context.Background(), sandbox.DefaultSpec(ws), nil)
		if err == nil || !strings.Contains(err.Error(), "Options.CgroupParent") {
			t.Errorf("Open with CgroupParent %q = %v, want a refusal naming Options.CgroupParent", p, err)
		}
	}
}

// On cgroup v1 the spawner forks a child inside the groups it is given
// (moving there and back itself), and where it may not move into them
// it starts the child where it is, for its pid to be placed; either way
// no thread of dsh is left outside its own groups.
func TestSpawnerStartsInV1Groups(t *testing.T) {
	v1Only(t)
	id, err := stateName(sandbox.NewWorldID())
	if err != nil {
		t.Fatal(err)
	}
	g, err := newCgroup(cgroupParent, id, &specs.LinuxResources{})
	if err != nil {
		t.Fatal(err)
	}
	cg := g.(*cgroupV1)
	t.Cleanup(func() { cg.destroy() })
	home := threadsGroups(t)
	start := func(dirs []string) (int, bool) {
		cmd := exec.Command("sleep", "100")
		born, err := startPinned(cmd, dirs, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid, born
	}

	pid, born := start(cg.dirs)
	if !born || !initspawn.BornIn(pid, cg.dirs) {
		t.Error("the spawner did not report the child born in the groups")
	}
	if got, want := groupsOf(t, "/proc/"+itoa(pid)+"/cgroup"), "/"+cgroupParent+"/"+id; !allAre(got, want) {
		t.Errorf("the child started in %v, not %s in every hierarchy", got, want)
	}

	missing := []string{}
	for _, d := range cg.dirs {
		missing = append(missing, d+"-missing")
	}
	pid, born = start(missing)
	if born {
		t.Error("the spawner reported a child born in groups that do not exist")
	}
	if got := groupsOf(t, "/proc/"+itoa(pid)+"/cgroup"); !sameGroups(got, home) {
		t.Errorf("the fallback child started in %v, not dsh's own %v", got, home)
	}
	// What the spawner reads back before it reports a child born inside.
	if initspawn.BornIn(pid, cg.dirs) {
		t.Error("bornIn took a child outside the groups for one inside")
	}
	if got := threadsGroups(t); !sameGroups(got, home) {
		t.Errorf("dsh's threads are in %v after the spawns, not %v", got, home)
	}
}

// groupsOf reads a /proc cgroup file: controller → group, for the
// hierarchies a world joins.
func groupsOf(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 {
			for _, c := range strings.Split(f[1], ",") {
				if slices.Contains(v1Controllers, c) {
					in[c] = f[2]
				}
			}
		}
	}
	return in
}

// threadsGroups is groupsOf every thread of this process, which must all
// be in the same groups.
func threadsGroups(t *testing.T) map[string]string {
	t.Helper()
	files, _ := filepath.Glob("/proc/self/task/*/cgroup")
	var first map[string]string
	for _, f := range files {
		g := groupsOf(t, f)
		if first == nil {
			first = g
		} else if !sameGroups(g, first) {
			t.Errorf("thread %s is in %v, the others in %v", f, g, first)
		}
	}
	return first
}

func allAre(m map[string]string, v string) bool {
	for _, c := range v1Controllers {
		if m[c] != v {
			return false
		}
	}
	return true
}

func sameGroups(a, b map[string]string) bool {
	for _, c := range v1Controllers {
		if a[c] != b[c] {
			return false
		}
	}
	return true
}

// A world's limits are set once its init is spawned, before its release:
// the fork (a copy of dsh's page tables, charged to the memory group the
// forking thread is in) and the child until its execve are held neither
// to the world's memory limit nor to its cpu quota, which would make one
// world's quota slow the spawner every world shares. The world still
// runs inside them.
func TestLimitsSetAfterTheSpawn(t *testing.T) {
	v1Only(t)
	var atSpawn map[string]string
	beforeSpawn = func(cg worldCgroup) {
		atSpawn = v1Limits(t, cg)
	}
	t.Cleanup(func() { beforeSpawn = func(worldCgroup) {} })
	spec := sandbox.DefaultSpec(t.TempDir())
	in, err := New(nil).Open(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if atSpawn == nil {
		t.Fatal("the world's init was not spawned in a cgroup")
	}
	opened := v1Limits(t, in.(*instance).l.cg)
	for file, v := range atSpawn {
		if v == opened[file] {
			t.Errorf("%s was already %s when the init was spawned", file, v)
		}
	}
	if got, want := opened["memory.limit_in_bytes"], strconv.FormatInt(*spec.Resources.Memory.Limit, 10); got != want {
		t.Errorf("the open world's memory limit is %s, want %s", got, want)
	}
	if got, want := opened["cpu.cfs_quota_us"], strconv.FormatInt(*spec.Resources.CPU.Quota, 10); got != want {
		t.Errorf("the open world's cpu quota is %s, want %s", got, want)
	}
}

// v1Limits reads a v1 world group's memory limit and cpu quota.
func v1Limits(t *testing.T, cg worldCgroup) map[string]string {
	t.Helper()
	g, ok := cg.(*cgroupV1)
	if !ok {
		t.Fatalf("not a cgroup v1 group: %T", cg)
	}
	out := map[string]string{}
	for _, d := range g.dirs {
		for _, f := range []string{"memory.limit_in_bytes", "cpu.cfs_quota_us"} {
			if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
				out[f] = strings.TrimSpace(string(b))
			}
		}
	}
	if len(out) != 2 {
		t.Fatalf("read %v from %v", out, g.dirs)
	}
	return out
}

// On cgroup v2 a world's group is made before its spawn without its
// limits, but with the controllers they need enabled in its parents'
// cgroup.subtree_control (the library enables them only for limits it
// sets, and writes no missing file later). This hybrid host's unified
// hierarchy has no controller at all: asking for one fails, naming the
// step, and leaves no group behind; asking for none succeeds.
func TestCgroupV2MadeForItsControllers(t *testing.T) {
	mount := v2Mount(t)
	if b, _ := os.ReadFile(filepath.Join(mount, "cgroup.controllers")); strings.Contains(string(b), "pids") {
		g, err := newCgroupV2For(mount, cgroupParent, mustStateName(t), &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: new(int64)}})
		if err != nil {
			t.Fatal(err)
		}
		defer g.destroy()
		if _, err := os.Stat(filepath.Join(g.path, "pids.max")); err != nil {
			t.Errorf("the pids controller is not enabled for the group: %v", err)
		}
		return
	}
	id := mustStateName(t)
	if _, err := newCgroupV2For(mount, cgroupParent, id, &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: new(int64)}}); err == nil || !strings.Contains(err.Error(), "enable the cgroup v2 controllers") {
		t.Errorf("a group needing a controller the hierarchy lacks: %v", err)
	}
	if _, err := os.Stat(filepath.Join(mount, cgroupParent, id)); !os.IsNotExist(err) {
		t.Errorf("the refused group was left behind: %v", err)
	}
	g, err := newCgroupV2For(mount, cgroupParent, mustStateName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	g.destroy()
}

func mustStateName(t *testing.T) string {
	t.Helper()
	id, err := stateName(sandbox.NewWorldID())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

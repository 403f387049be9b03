package native

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// prestarted begins a Prestart (the test binary as the init) for a
// world with limits or without, and returns its init's pid once it runs,
// and its cgroup.
func prestarted(t *testing.T, limited bool) (int, *preCgroup) {
	t.Helper()
	t.Cleanup(DropPrestart)
	Prestart(limited)
	prestart.mu.Lock()
	done := prestart.done
	prestart.mu.Unlock()
	if done == nil {
		t.Fatal("Prestart began nothing")
	}
	<-done
	prestart.mu.Lock()
	ip := prestart.ip
	prestart.mu.Unlock()
	if ip == nil {
		t.Fatal("Prestart made no init")
	}
	if err := ip.wait(); err != nil {
		t.Fatalf("the prestarted init did not start: %v", err)
	}
	return ip.cmd.Process.Pid, ip.pre
}

// gone reports whether pid no longer exists (it was waited for).
func gone(pid int) bool { return unix.Kill(pid, 0) == unix.ESRCH }

// TestPrestartIsTaken: a world of a Driver with default Options runs on
// the init Prestart began, which waited for it with nothing of the world.
func TestPrestartIsTaken(t *testing.T) {
	pid, _ := prestarted(t, true)
	spec := sandbox.DefaultSpec(t.TempDir())
	in, err := New(nil).Open(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if got := in.(*instance).l.cmd.Process.Pid; got != pid {
		t.Errorf("the world's init is %d, not the prestarted %d", got, pid)
	}
	if out, errOut, st := run(t, in, spec.Env, "sh", "-c", "echo ok"); st.Code != 0 || out != "ok\n" {
		t.Fatalf("run: %v %q %q", st, out, errOut)
	}
	// The cgroup Prestart made and placed the init in is the world's:
	// named after it, with the Spec's limits.
	l := in.(*instance).l
	if l.cg == nil {
		t.Fatal("the world has no cgroup")
	}
	procs, err := os.ReadFile(filepath.Join(cgroupRoot, "memory", cgroupParent, l.id, "cgroup.procs"))
	if err != nil || !strings.Contains("\n"+string(procs), "\n"+strconv.Itoa(pid)+"\n") {
		t.Errorf("the init %d is not in the world's memory cgroup %s: %q %v", pid, l.id, procs, err)
	}
	limit, err := os.ReadFile(filepath.Join(cgroupRoot, "memory", cgroupParent, l.id, "memory.limit_in_bytes"))
	if want := strconv.FormatInt(*spec.Resources.Memory.Limit, 10); err != nil || strings.TrimSpace(string(limit)) != want {
		t.Errorf("the world's memory limit is %q (%v), want the Spec's %s", limit, err, want)
	}
}

// TestPrestartForAnotherWorld: an init prestarted for a default Driver
// never serves a world it was not spawned for — here one whose ids
// come from another host range — and is killed instead; as is one no
// world takes (DropPrestart).
func TestPrestartForAnotherWorld(t *testing.T) {
	testenv.RequireRoot(t) // a root dsh maps its worlds to a host range
	pid, _ := prestarted(t, true)
	const base = 500000
	spec := sandbox.DefaultSpec(t.TempDir())
	in, err := New(&Options{IDBase: base, StateDir: stateDir(t)}).Open(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	initPid := in.(*instance).l.cmd.Process.Pid
	if initPid == pid {
		t.Fatal("the world took an init prestarted for another id range")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(initPid) + "/uid_map")
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(b)); len(f) < 2 || f[1] != strconv.Itoa(base) {
		t.Errorf("the world's uid map is %q, want its range at %d", b, base)
	}
	if !gone(pid) {
		t.Error("the prestarted init no world took is still there")
	}
	// (Its cgroup's name is this world's too: the world was minted the
	// reserved ID. DropPrestart below checks that the group goes.)

	pid, pre := prestarted(t, true)
	DropPrestart()
	if !gone(pid) {
		t.Error("DropPrestart left the prestarted init")
	}
	if pre != nil {
		if _, err := os.Stat(filepath.Join(cgroupRoot, "pids", cgroupParent, pre.id)); !os.IsNotExist(err) {
			t.Errorf("DropPrestart left the prestarted init's cgroup %s (%v)", pre.id, err)
		}
	}
}

// openWithoutLimits opens a world of a default Driver without limits, as
// dsh run --no-limits does, closed when the test ends.
func openWithoutLimits(t *testing.T) (*launch, sandbox.Instance) {
	t.Helper()
	spec := sandbox.DefaultSpec(t.TempDir())
	spec.Resources = nil
	in, err := New(nil).Open(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in.(*instance).l, in
}

// TestPrestartNotTakenWithoutLimits: a world without limits has no
// cgroup, so it does not take an init that was joined to one; that init
// and its cgroup are removed.
func TestPrestartNotTakenWithoutLimits(t *testing.T) {
	pid, pre := prestarted(t, true)
	l, _ := openWithoutLimits(t)
	if l.cmd.Process.Pid == pid {
		t.Error("a world without limits took the init prestarted in a cgroup")
	}
	if l.cg != nil {
		t.Error("a world without limits has a cgroup")
	}
	if !gone(pid) {
		t.Error("the prestarted init no world took is still there")
	}
	if pre != nil {
		if _, err := os.Stat(filepath.Join(cgroupRoot, "pids", cgroupParent, pre.id)); !os.IsNotExist(err) {
			t.Errorf("the prestarted init's cgroup %s is still there (%v)", pre.id, err)
		}
	}
}

// TestPrestartWithoutLimitsIsTaken: an init prestarted for a world
// without limits is spawned in no cgroup, and such a world takes it.
func TestPrestartWithoutLimitsIsTaken(t *testing.T) {
	v1Only(t) // v2 prestarts nothing
	pid, pre := prestarted(t, false)
	if pre != nil {
		t.Errorf("an init prestarted for a world without limits has a cgroup (%s)", pre.id)
	}
	if in, self := groupsOf(t, "/proc/"+strconv.Itoa(pid)+"/cgroup"), groupsOf(t, "/proc/self/cgroup"); !sameGroups(in, self) {
		t.Errorf("the init prestarted without limits is in the groups %v, not in this process's %v", in, self)
	}
	l, in := openWithoutLimits(t)
	if l.cmd.Process.Pid != pid {
		t.Errorf("the world without limits runs init %d, not the one prestarted for it (%d)", l.cmd.Process.Pid, pid)
	}
	if l.cg != nil {
		t.Error("a world without limits has a cgroup")
	}
	if out, errOut, st := run(t, in, sandbox.DefaultSpec("").Env, "sh", "-c", "echo ok"); st.Code != 0 || out != "ok\n" {
		t.Fatalf("run: %v %q %q", st, out, errOut)
	}
}

// TestPrestartWithoutLimitsNotTakenWithLimits: a world with limits does
// not take an init prestarted in no cgroup (its limits would hold only
// once the init was moved into its cgroup); it runs its own, born in
// its cgroup, and the prestarted one is killed.
func TestPrestartWithoutLimitsNotTakenWithLimits(t *testing.T) {
	v1Only(t)
	pid, _ := prestarted(t, false)
	in, err := New(nil).Open(context.Background(), sandbox.DefaultSpec(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	l := in.(*instance).l
	if l.cmd.Process.Pid == pid {
		t.Error("a world with limits took the init prestarted in no cgroup")
	}
	if l.cg == nil {
		t.Fatal("a world with limits has no cgroup")
	}
	if in, want := groupsOf(t, "/proc/"+strconv.Itoa(l.cmd.Process.Pid)+"/cgroup"), "/"+cgroupParent+"/"+l.id; !allAre(in, want) {
		t.Errorf("the world's init is in the groups %v, want its world's %s", in, want)
	}
	if !gone(pid) {
		t.Error("the prestarted init no world took is still there")
	}
}

// sliceWriter is an io.Writer of a type == cannot compare.
type sliceWriter struct{ _ []byte }

func (w sliceWriter) Write(p []byte) (int, error) { return len(p), nil }

// An init is the same for another Driver's world only with the same
// stderr file (or none); a writer of any other kind never matches, and
// comparing one does not panic.
func TestSpawnForSame(t *testing.T) {
	a := spawnFor{serve: true, cgroupFD: -1}
	b := a
	if !a.same(b) {
		t.Error("two equal spawnFor differ")
	}
	b.stderr = os.Stderr
	if a.same(b) {
		t.Error("no stderr and os.Stderr are the same")
	}
	a.stderr = os.Stderr
	if !a.same(b) {
		t.Error("os.Stderr and os.Stderr differ")
	}
	a.stderr, b.stderr = sliceWriter{}, sliceWriter{}
	if a.same(b) {
		t.Error("writers that are not files are the same")
	}
	b.stderr, b.mapped = os.Stderr, true
	a.stderr = os.Stderr
	if a.same(b) {
		t.Error("a root's init and an unprivileged one's are the same")
	}
}

// TestPrestartBornInItsCgroup: on cgroup v1 a prestarted init is in its
// world's group as soon as it runs, in every hierarchy (forked by the
// spawner thread from inside it), not placed there later by its pid;
// and no thread of dsh stays in the group.
func TestPrestartBornInItsCgroup(t *testing.T) {
	v1Only(t)
	pid, pc := prestarted(t, true)
	if pc == nil || pc.cg == nil {
		t.Fatal("Prestart made no cgroup")
	}
	in := groupsOf(t, "/proc/"+strconv.Itoa(pid)+"/cgroup")
	want := "/" + cgroupParent + "/" + pc.id
	for _, c := range v1Controllers {
		if in[c] != want {
			t.Errorf("the init started in the %s group %q, not its world's %s", c, in[c], want)
		}
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
	for _, f := range tasks {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), pc.id) {
			t.Errorf("a thread of dsh stayed in the world's group: %s:\n%s", f, b)
		}
	}
}

// TestFailedStartReapsItsInit: a start that fails after its init was
// spawned (here at the protected paths: the workspace's .git is a link)
// kills and reaps that init; no child of dsh is left, not even a zombie.
func TestFailedStartReapsItsInit(t *testing.T) {
	testenv.RequireUserNS(t)
	ws := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(ws, ".git")); err != nil {
		t.Fatal(err)
	}
	before := childPids(t)
	in, err := New(nil).Open(context.Background(), sandbox.DefaultSpec(ws), nil)
	if err == nil {
		in.Close()
		t.Fatal("a workspace whose .git is a link was opened")
	}
	for _, pid := range childPids(t) {
		if !slices.Contains(before, pid) {
			b, _ := os.ReadFile("/proc/" + pid + "/stat")
			t.Errorf("the failed start left its init (%s) behind: %s", err, b)
		}
	}
}

// childPids lists the children of this process (of all its threads).
func childPids(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("/proc/self/task/*/children")
	var pids []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		pids = append(pids, strings.Fields(string(b))...)
	}
	return pids
}

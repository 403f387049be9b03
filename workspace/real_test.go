package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/docker"
	"github.com/dsh-dev/dsh/sandbox/native"
)

// realOpener opens worlds on real drivers, the way dsh serve does: the
// default Spec with the template's limits and image, and an egress
// proxy that allows exactly the workspace's entries.
type realOpener struct {
	backends map[string]execworld.Backend
}

func (o *realOpener) Open(ctx context.Context, dir string, t Template, allow []string) (*execworld.World, error) {
	b := o.backends[t.Driver]
	if b == nil {
		return nil, fmt.Errorf("%w: driver %q is not served here", ErrInvalid, t.Driver)
	}
	spec := sandbox.DefaultSpec(dir)
	if t.Image != "" {
		spec.Image = t.Image
	}
	if t.Limits.Memory != "" {
		n, err := config.ParseSize(t.Limits.Memory)
		if err != nil {
			return nil, fmt.Errorf("%w: limits.memory: %v", ErrInvalid, err)
		}
		spec.Resources.Memory.Limit = &n
	}
	if t.Limits.Pids != 0 {
		n := int64(t.Limits.Pids)
		spec.Resources.Pids.Limit = &n
	}
	if t.Limits.CPUs != 0 {
		q, p := sandbox.CPUQuota(t.Limits.CPUs)
		spec.Resources.CPU.Quota, spec.Resources.CPU.Period = &q, &p
	}
	pol, err := o.Policy(allow)
	if err != nil {
		return nil, err
	}
	return execworld.Open(ctx, b, &execworld.Options{Spec: spec, Egress: pol, Resolver: netpolicy.StubResolver{}})
}

func (o *realOpener) Policy(allow []string) (*netpolicy.Policy, error) {
	p, err := netpolicy.New(netpolicy.Config{Default: "deny", Allow: allow})
	if err != nil {
		return nil, fmt.Errorf("%w: allow: %v", ErrInvalid, err)
	}
	return p, nil
}

// nativeEnv is a native driver with a state directory and a cgroup
// parent of its own, so that what it leaves can be told from what other
// dsh processes on this host have.
type nativeEnv struct {
	driver   *native.Driver
	state    string
	cgparent string
}

func newNative(t testing.TB) *nativeEnv {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	id := newID(4)
	// The driver makes its state directory itself, as it wants it.
	env := &nativeEnv{state: filepath.Join(os.TempDir(), "dsh-wstest-state-"+id), cgparent: "dsh-wstest-" + id}
	t.Cleanup(func() { os.RemoveAll(env.state) })
	env.driver = native.New(&native.Options{StateDir: env.state, CgroupParent: env.cgparent})
	t.Cleanup(func() {
		for _, d := range cgroupDirs(env.cgparent) {
			os.Remove(d)
		}
	})
	return env
}

// cgroupDirs are the directories a cgroup parent may have.
func cgroupDirs(parent string) []string {
	var ds []string
	for _, c := range []string{"memory", "pids", "cpu", "freezer", "unified", ""} {
		ds = append(ds, filepath.Join("/sys/fs/cgroup", c, parent))
	}
	return ds
}

// leftovers lists what the native driver's worlds left: cgroups under
// the parent, state directories, processes in those cgroups or working
// under root.
func (env *nativeEnv) leftovers(root string) []string {
	var out []string
	for _, d := range cgroupDirs(env.cgparent) {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, "cgroup "+filepath.Join(d, e.Name()))
			}
		}
	}
	ents, _ := os.ReadDir(env.state)
	for _, e := range ents {
		out = append(out, "state "+filepath.Join(env.state, e.Name()))
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if b, err := os.ReadFile(filepath.Join(p, "cgroup")); err == nil && strings.Contains(string(b), env.cgparent+"/") {
			out = append(out, "process "+p+" in a world cgroup")
			continue
		}
		if cwd, err := os.Readlink(filepath.Join(p, "cwd")); err == nil && strings.HasPrefix(cwd, root+"/") {
			out = append(out, "process "+p+" working in "+cwd)
		}
	}
	return out
}

// dockerDriver is a docker driver with this checkout's static init.
func dockerDriver(t testing.TB) *docker.Driver {
	t.Helper()
	testenv.RequireDocker(t)
	if err := exec.Command("docker", "image", "inspect", "dsh/base:latest").Run(); err != nil {
		t.Fatal("image dsh/base:latest is missing; build it with: make images")
	}
	d, err := docker.New(&docker.Options{InitPath: testenv.StaticDsh(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// dockerLeftovers lists the containers of worlds whose IDs are in ids.
func dockerLeftovers(t testing.TB, ids map[string]bool) []string {
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+sandbox.LabelManaged+"=true", "--format", `{{.ID}} {{.Label "`+sandbox.LabelWorld+`"}}`).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	var left []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && ids[f[1]] {
			left = append(left, "container "+l)
		}
	}
	return left
}

// checkPause creates a workspace of tmpl running a counter, pauses it
// (the counter stands still, World is refused), resumes it (the
// counter goes on), pauses it again and deletes it paused. It returns
// the world's ID, for the caller's check that nothing is left.
func checkPause(t *testing.T, m *Mgr, tmpl Template) string {
	t.Helper()
	c := create(t, m, &CreateRequest{Name: "p", Template: tmpl})
	w, release, err := m.World(bg, "p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec.Start(bg, &execworld.Cmd{Argv: []string{"sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > n; sleep 0.02; done"}}); err != nil {
		t.Fatal(err)
	}
	release()
	count := func() int {
		b, _ := os.ReadFile(filepath.Join(w.FS.Root(), "n"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	if !waitFor(10*time.Second, func() bool { return count() > 2 }) {
		t.Fatal("the counter does not run")
	}
	ws, err := m.Pause(bg, "p")
	if err != nil {
		t.Fatal(err)
	}
	if ws.State != StatePaused {
		t.Errorf("after Pause: %+v", ws)
	}
	time.Sleep(100 * time.Millisecond)
	before := count()
	time.Sleep(500 * time.Millisecond)
	if after := count(); after != before {
		t.Errorf("a paused world made progress: %d → %d", before, after)
	}
	if _, _, err := m.World(bg, "p"); !errors.Is(err, ErrConflict) {
		t.Errorf("World while paused = %v, want ErrConflict", err)
	}
	if ws, err := m.Resume(bg, "p"); err != nil || ws.State != StateRunning {
		t.Fatalf("Resume = %+v, %v", ws, err)
	}
	if !waitFor(10*time.Second, func() bool { return count() > before+2 }) {
		t.Error("a resumed world makes no progress")
	}
	if _, err := m.Pause(bg, "p"); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(bg, "p"); err != nil {
		t.Fatalf("deleting a paused workspace: %v", err)
	}
	return c.Workspace.World
}

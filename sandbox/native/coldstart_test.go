package native

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// ownCgroups lists the world cgroups this process made (their names
// begin with its pid), on either hierarchy.
func ownCgroups() []string {
	var own []string
	for _, id := range leftoverCgroups(cgroupParent) {
		if strings.HasPrefix(id, strconv.Itoa(os.Getpid())+"-") {
			own = append(own, id)
		}
	}
	return own
}

// A cgroup v1 is made in parallel with the spawn and the init placed in
// it while it sets up: a start that fails at any point after that began
// must still remove the cgroup (the undo waits for both) and the state.
func TestFailedStartLeavesNoCgroupOrState(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	if left := ownCgroups(); len(left) > 0 {
		t.Fatalf("cgroups of this process before the test: %v", left)
	}
	cases := []struct {
		name string
		ws   func(t *testing.T) string
		ctx  func() context.Context
	}{
		// protect refuses a link, right after the cgroup began.
		{"failure before the spawn", func(t *testing.T) string {
			ws := t.TempDir()
			if err := os.Symlink("/etc", filepath.Join(ws, ".envrc")); err != nil {
				t.Fatal(err)
			}
			return ws
		}, context.Background},
		// Abandoned while the init sets up and is being placed.
		{"failure while the init sets up", func(t *testing.T) string { return t.TempDir() }, func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := stateDir(t)
			d := New(&Options{Executable: initExe(t), StateDir: state, Stderr: os.Stderr})
			spec := sandbox.DefaultSpec(c.ws(t))
			if in, err := d.Open(c.ctx(), spec, nil); err == nil {
				in.Close()
				t.Fatal("Open succeeded, want the failure the case sets up")
			}
			// Nothing is left at once: the failed Open waited for its
			// parallel steps before returning.
			if left := ownCgroups(); len(left) > 0 {
				t.Errorf("cgroups left by the failed Open: %v", left)
			}
			// And nothing turns up later (a step still running after
			// the cleanup would make its cgroup now).
			time.Sleep(50 * time.Millisecond)
			if left := ownCgroups(); len(left) > 0 {
				t.Errorf("cgroups made after the failed Open returned: %v", left)
			}
			entries, _ := os.ReadDir(state)
			for _, e := range entries {
				t.Errorf("state left by the failed Open: %s", e.Name())
			}
		})
	}
}

// Open returns only once the init is in every hierarchy of its cgroup,
// although on cgroup v1 it is placed there while it sets up.
func TestInitIsInItsCgroupWhenOpenReturns(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	in := openWorld(t, sandbox.DefaultSpec(t.TempDir()))
	b, err := os.ReadFile("/proc/" + strconv.Itoa(in.l.cmd.Process.Pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	want := "/" + cgroupParent + "/" + in.l.id
	if unified() {
		if !strings.Contains(string(b), "0::"+want+"\n") {
			t.Errorf("the init's cgroups:\n%s\nwant it in %s", b, want)
		}
		return
	}
	for _, c := range v1Controllers {
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			// hierarchy-ID:controller-list:path
			parts := strings.SplitN(line, ":", 3)
			if len(parts) == 3 && parts[2] == want && strings.Contains(","+parts[1]+",", ","+c+",") {
				found = true
			}
		}
		if !found {
			t.Errorf("the init is not in the %s cgroup %s when Open returns:\n%s", c, want, b)
		}
	}
}

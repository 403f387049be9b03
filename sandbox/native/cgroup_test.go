package native

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
)

// The v2 code path on this hybrid host's (controller-less) unified
// hierarchy: a process born in the world's cgroup through
// CLONE_INTO_CGROUP, and destroy killing it and removing the group.
func TestCgroupV2BornInsideKillAndRemove(t *testing.T) {
	testenv.RequireRoot(t)
	mount := cgroupRoot
	if !unified() {
		mount = filepath.Join(cgroupRoot, "unified")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(mount, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Skipf("no cgroup v2 hierarchy at %s", mount)
	}
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
	if _, err := startPinned(cmd, nil); err != nil {
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

// On cgroup v1, destroy of a group that still holds a process — the
// first rmdir is refused — kills the process and removes every
// hierarchy's directory; of an empty group it removes them all.
func TestCgroupV1DestroyKillsMembersAndRemoves(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCgroups(t)
	if unified() {
		t.Skip("cgroup v1 only")
	}
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

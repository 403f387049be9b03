package native

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/internal/testenv"
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
	id, err := newWorldID()
	if err != nil {
		t.Fatal(err)
	}
	cg, err := newCgroupV2(mount, id, &cgroup2.Resources{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cg.destroy() })
	cmd := exec.Command("sleep", "100")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cg.dirFD()}
	if err := startPinned(cmd); err != nil {
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

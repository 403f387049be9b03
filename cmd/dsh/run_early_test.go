package main

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// TestRunTakesTheEarlyInit: a dsh run line's world runs the init that
// dsh began spawning during its package initialisation (initspawn.Begin)
// wherever that spawn is the usual one: cgroup v1, once the first run has
// made the state directory and the cached init. On cgroup v2 it must not
// be taken (the init is born in the world's group, which needs the plan).
func TestRunTakesTheEarlyInit(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	bin := staticDsh(t)
	run := func() string {
		cmd := exec.Command(bin, "run", "--driver", "native", "--", "true")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "DSH_NATIVE_TRACE=1", "XDG_CONFIG_HOME="+cmd.Dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("dsh run -- true: %v\n%s", err, out)
		}
		return string(out)
	}
	run() // makes the state directory and the cached init if missing
	out := run()
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &fs); err != nil {
		t.Fatal(err)
	}
	early := strings.Contains(out, "dsh host: early spawn")
	if v2 := fs.Type == 0x63677270; v2 == early {
		t.Errorf("cgroup v2 %v, the early init taken %v, want the other way round; trace:\n%s", v2, early, out)
	}
}

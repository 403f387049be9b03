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
// made the state directory and the cached init. That holds with limits
// off too (--no-limits, or DSH_SANDBOX_LIMITS_OFF), where the init is
// spawned in no cgroup. On cgroup v2 it must not be taken (the init is
// born in the world's group, which needs the plan).
func TestRunTakesTheEarlyInit(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	bin := staticDsh(t)
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &fs); err != nil {
		t.Fatal(err)
	}
	v2 := fs.Type == 0x63677270
	for _, c := range []struct {
		name  string
		flags []string
		env   []string
	}{
		{"limits", nil, nil},
		{"--no-limits", []string{"--no-limits"}, nil},
		{"DSH_SANDBOX_LIMITS_OFF", nil, []string{"DSH_SANDBOX_LIMITS_OFF=true"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func() string {
				args := append(append([]string{"run", "--driver", "native"}, c.flags...), "--", "true")
				cmd := exec.Command(bin, args...)
				cmd.Dir = t.TempDir()
				cmd.Env = append(append(os.Environ(), "DSH_NATIVE_TRACE=1", "XDG_CONFIG_HOME="+cmd.Dir), c.env...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("dsh %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			run() // makes the state directory and the cached init if missing
			out := run()
			early := strings.Contains(out, "dsh host: early spawn") && !strings.Contains(out, "prestarted init not for this world")
			if v2 == early {
				t.Errorf("cgroup v2 %v, the early init taken %v, want the other way round; trace:\n%s", v2, early, out)
			}
		})
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// runSeen runs `dsh run --json` of a short sleep with the static binary
// and, while it runs, asks seen (given dsh's pid) what names its world
// carries outside; it returns the world ID --json printed and the first
// non-empty answer of seen.
func runSeen(t *testing.T, driver string, seen func(pid int) string) (jsonID, outside string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(staticDsh(t), "run", "--driver", driver, "--json", "--", "sleep", "3")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Second); outside == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		outside = seen(cmd.Process.Pid)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dsh run: %v\n%s%s", err, out.String(), errOut.String())
	}
	var res struct {
		World string `json:"world"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.World == "" {
		t.Fatalf("--json output %q: %v", out.String(), err)
	}
	return res.World, outside
}

// The world ID dsh run --json prints is the one on the container: its
// dev.dsh.world label and its name.
func TestRunJSONWorldIsTheContainers(t *testing.T) {
	testenv.RequireDocker(t)
	id, seen := runSeen(t, "docker", func(pid int) string {
		b, _ := exec.Command("docker", "ps", "--filter", "label=dev.dsh.owner.pid="+strconv.Itoa(pid),
			"--format", `{{.Names}} {{.Label "dev.dsh.world"}}`).Output()
		return strings.TrimSpace(string(b))
	})
	if want := "dsh-" + id + " " + id; seen != want {
		t.Errorf("container (name, label) = %q, want %q for the world %s of --json", seen, want, id)
	}
}

// The world ID dsh run --json prints names native's cgroup, after the
// owner prefix (<pid>-<start>-) that reaping reads.
func TestRunJSONWorldIsNativesCgroup(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	id, seen := runSeen(t, "native", func(pid int) string {
		cgs, _ := filepath.Glob("/sys/fs/cgroup/*/dsh-native/" + strconv.Itoa(pid) + "-*")
		v2, _ := filepath.Glob("/sys/fs/cgroup/dsh-native/" + strconv.Itoa(pid) + "-*")
		names := map[string]bool{}
		for _, c := range append(cgs, v2...) {
			names[filepath.Base(c)] = true
		}
		switch len(names) {
		case 0:
			return "" // not yet
		case 1:
		default:
			return fmt.Sprint(len(names), " worlds' cgroups")
		}
		return filepath.Base(append(cgs, v2...)[0])
	})
	if f := strings.SplitN(seen, "-", 3); len(f) != 3 || f[2] != id {
		t.Errorf("cgroup %q, want <pid>-<start>-%s for the world of --json", seen, id)
	}
}

package native

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// counterScript counts as fast as it can into the workspace file c.
const counterScript = `i=0; while :; do i=$((i+1)); echo $i > c; done`

// readCounter waits up to 10 s for the counter file to reach min.
func readCounter(t *testing.T, path string, min int) int {
	t.Helper()
	n := -1
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if v, ok := counterValue(b); ok {
			if n = v; n >= min {
				return n
			}
		}
	}
	t.Fatalf("counter %s did not reach %d (last %d)", path, min, n)
	return n
}

func counterValue(b []byte) (int, bool) {
	s := strings.TrimSpace(string(b))
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, s != ""
}

// frozenState is what the kernel reports of a world cgroup's freezer:
// FROZEN, or what v1's freezer.state says, or v2's cgroup.events line.
func frozenState(id string) string {
	if !unified() {
		b, _ := os.ReadFile(filepath.Join(cgroupRoot, "freezer", cgroupParent, id, "freezer.state"))
		return strings.TrimSpace(string(b))
	}
	b, _ := os.ReadFile(filepath.Join(cgroupRoot, cgroupParent, id, "cgroup.events"))
	for _, l := range strings.Split(string(b), "\n") {
		if l == "frozen 1" {
			return "FROZEN"
		}
		if strings.HasPrefix(l, "frozen ") {
			return l
		}
	}
	return ""
}

func TestFreezeStopsTheWorldAndCloseWhileFrozenLeavesNothing(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	ws := t.TempDir()
	os.Chmod(ws, 0o777)
	spec := sandbox.DefaultSpec(ws)
	in := openWorld(t, spec)
	ctx := context.Background()
	// The counter, and a daemonised sleeper in a session of its own.
	p, err := in.Start(ctx, sandbox.ProcessSpec{Argv: []string{"sh", "-c", "setsid sleep 1000 & echo started; " + counterScript}, Env: spec.Env})
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(p.Stdout()).ReadString('\n'); line != "started\n" {
		t.Fatalf("got %q", line)
	}
	counter := filepath.Join(ws, "c")
	readCounter(t, counter, 1)
	id := in.l.id
	var pids []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids = worldPids(id); len(pids) >= 3 { // init, counter, sleeper
			break
		}
	}
	if len(pids) < 3 {
		t.Fatalf("world cgroup holds %v, want the init, the counter and a sleeper", pids)
	}

	if err := in.Freeze(); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	if err := in.Freeze(); err != nil {
		t.Fatalf("second Freeze (a no-op): %v", err)
	}
	if got := frozenState(id); got != "FROZEN" {
		t.Errorf("the kernel reports the world's cgroup %q after Freeze, want FROZEN", got)
	}
	before, _ := os.ReadFile(counter)
	time.Sleep(300 * time.Millisecond)
	after, _ := os.ReadFile(counter)
	if string(before) != string(after) {
		t.Errorf("the counter moved while frozen: %q then %q", before, after)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = in.Start(sctx, sandbox.ProcessSpec{Argv: []string{"true"}, Env: spec.Env})
	cancel()
	if !errors.Is(err, errFrozen) {
		t.Errorf("Start while frozen = %v, want errFrozen", err)
	}

	if err := in.Thaw(); err != nil {
		t.Fatalf("Thaw: %v", err)
	}
	n, _ := counterValue(after)
	readCounter(t, counter, n+100)
	if out, _, st := run(t, in, spec.Env, "echo", "thawed"); out != "thawed\n" || st.Code != 0 {
		t.Errorf("after Thaw: %q %v", out, st)
	}

	if err := in.Freeze(); err != nil {
		t.Fatalf("Freeze again: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- in.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close of a frozen world: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close of a frozen world did not return in 30 s")
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d of the frozen world survived Close", pid)
		}
	}
	dirs := []string{filepath.Join(cgroupRoot, cgroupParent, id)}
	if !unified() {
		dirs = dirs[:0]
		for _, c := range v1Controllers {
			dirs = append(dirs, filepath.Join(cgroupRoot, c, cgroupParent, id))
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s survived Close", d)
		}
	}
	if err := in.Thaw(); err != ErrClosed {
		t.Errorf("Thaw after Close = %v, want ErrClosed", err)
	}
}

// A world without limits has no cgroup: Freeze says so, and execworld
// turns it into ErrCannotPause.
func TestFreezeWithoutCgroupRefused(t *testing.T) {
	testenv.RequireUserNS(t)
	spec := sandbox.DefaultSpec(t.TempDir())
	spec.Resources = nil
	in := openWorld(t, spec)
	if in.l.cg != nil {
		t.Fatal("a world without limits has a cgroup")
	}
	if err := in.Freeze(); !errors.Is(err, sandbox.ErrNoFreezer) || !strings.Contains(err.Error(), "without limits") {
		t.Errorf("Freeze without a cgroup = %v, want sandbox.ErrNoFreezer naming the missing limits", err)
	}
	if out, _, st := run(t, in, spec.Env, "echo", "running"); out != "running\n" || st.Code != 0 {
		t.Errorf("after the refused Freeze: %q %v", out, st)
	}

	ws := t.TempDir()
	espec := sandbox.DefaultSpec(ws)
	espec.Resources = nil
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := execworld.Open(ctx, New(&Options{Executable: testExe(t), StateDir: stateDir(t)}), &execworld.Options{Spec: espec})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Pause(); !errors.Is(err, execworld.ErrCannotPause) {
		t.Errorf("execworld Pause of a native world without limits = %v, want ErrCannotPause", err)
	}
	if w.Paused() {
		t.Error("Paused after a refused Pause")
	}
}

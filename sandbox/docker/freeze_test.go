package docker

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/sandbox"
)

// containerPids lists the host pids of the container's processes.
func containerPids(t *testing.T, w *world) []string {
	t.Helper()
	top, err := w.d.cli.ContainerTop(deadline(t), w.containerID, nil)
	if err != nil {
		t.Fatalf("ContainerTop: %v", err)
	}
	col := slices.Index(top.Titles, "PID")
	if col < 0 {
		t.Fatalf("ContainerTop titles %v have no PID", top.Titles)
	}
	var pids []string
	for _, p := range top.Processes {
		pids = append(pids, p[col])
	}
	return pids
}

func waitCount(t *testing.T, path string, min int) int {
	t.Helper()
	last := -1
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &n); err == nil {
			if last = n; n >= min {
				return n
			}
		}
	}
	t.Fatalf("counter %s did not reach %d (last %d)", path, min, last)
	return last
}

func TestFreezePausesTheContainerAndCloseWhilePausedRemovesIt(t *testing.T) {
	cli := newClient(t)
	w := openEgressWorld(t, baseImage, &stubEgress{conns: make(chan net.Addr, 1)})
	p, err := w.Start(deadline(t), sandbox.ProcessSpec{Argv: []string{"sh", "-c",
		`setsid sleep 1000 & echo started; i=0; while :; do i=$((i+1)); echo $i > c; done`}})
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(p.Stdout()).ReadString('\n'); line != "started\n" {
		t.Fatalf("got %q", line)
	}
	counter := filepath.Join(w.workspace, "c")
	waitCount(t, counter, 1)
	pids := containerPids(t, w)
	if len(pids) < 3 { // init, counter, sleeper
		t.Fatalf("container runs %v, want the init, the counter and a sleeper", pids)
	}

	if err := w.Freeze(); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	if err := w.Freeze(); err != nil {
		t.Fatalf("second Freeze (a no-op): %v", err)
	}
	info, err := cli.ContainerInspect(deadline(t), w.containerID)
	if err != nil || !info.State.Paused {
		t.Errorf("after Freeze the engine reports paused=%v (%v)", info.State != nil && info.State.Paused, err)
	}
	before, _ := os.ReadFile(counter)
	time.Sleep(300 * time.Millisecond)
	after, _ := os.ReadFile(counter)
	if string(before) != string(after) {
		t.Errorf("the counter moved while paused: %q then %q", before, after)
	}
	if _, err := w.Start(deadline(t), sandbox.ProcessSpec{Argv: []string{"true"}}); !errors.Is(err, errPaused) {
		t.Errorf("Start while paused = %v, want errPaused", err)
	}

	if err := w.Thaw(); err != nil {
		t.Fatalf("Thaw: %v", err)
	}
	var n int
	fmt.Sscan(strings.TrimSpace(string(after)), &n)
	waitCount(t, counter, n+100)
	if out, _, st := run(t, w, "", "echo", "thawed"); out != "thawed\n" || st.Code != 0 {
		t.Errorf("after Thaw: %q %v", out, st)
	}

	if err := w.Freeze(); err != nil {
		t.Fatalf("Freeze again: %v", err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close of a paused world: %v", err)
		}
		t.Logf("Close of the paused world took %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(60 * time.Second):
		t.Fatal("Close of a paused world did not return in 60 s")
	}
	if left := worldResources(t, cli, w.id); len(left) > 0 {
		t.Errorf("after Close of the paused world, %v remain", left)
	}
	for _, pid := range pids {
		if b, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(b), ") Z") {
			t.Errorf("pid %s of the paused container survived Close", pid)
		}
	}
	if err := w.Thaw(); !errors.Is(err, ErrClosed) {
		t.Errorf("Thaw after Close = %v, want ErrClosed", err)
	}
}

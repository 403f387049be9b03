package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
)

var smallDocker = Template{Driver: "docker", Image: "dsh/base:latest", Limits: Limits{Memory: "32MiB", Pids: 64}}

func dockerOpener(t testing.TB) *realOpener {
	return &realOpener{backends: map[string]execworld.Backend{"docker": dockerDriver(t)}}
}

func TestDockerCreateExecRestartDelete(t *testing.T) {
	op := dockerOpener(t)
	root := t.TempDir()
	m, err := New(&Options{Root: root, Opener: op, DefaultDriver: "docker"})
	if err != nil {
		t.Fatal(err)
	}
	c := create(t, m, &CreateRequest{Name: "dock", Template: smallDocker})
	dir := dirOf(t, m, "dock")
	if out := run(t, m, "dock", "sh", "-c", "echo kept > f; pwd"); out != filepath.Join(dir, filesDir)+"\n" {
		t.Errorf("pwd in the world: %q", out)
	}
	ids := map[string]bool{c.Workspace.World: true}
	if left := dockerLeftovers(t, ids); len(left) != 1 {
		t.Fatalf("the open world's container is not seen: %v", left)
	}
	// A paused one comes back paused.
	cp := create(t, m, &CreateRequest{Name: "dockp", Template: smallDocker})
	ids[cp.Workspace.World] = true
	if _, err := m.Pause(bg, "dockp"); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// A new manager over the same root reopens it, running.
	m2, _ := newMgr(t, &Options{Root: root, Opener: op})
	ws, err := m2.Get(bg, "dock")
	if err != nil || ws.State != StateRunning || ws.World == c.Workspace.World {
		t.Fatalf("after a restart: %+v, %v; want running in a new world", ws, err)
	}
	ids[ws.World] = true
	if out := run(t, m2, "dock", "cat", "f"); out != "kept\n" {
		t.Errorf("after a restart f = %q", out)
	}
	wp, err := m2.Get(bg, "dockp")
	if err != nil || wp.State != StatePaused {
		t.Errorf("a paused docker workspace after a restart: %+v, %v; want paused", wp, err)
	}
	ids[wp.World] = true
	if _, err := m2.Resume(bg, "dockp"); err != nil {
		t.Fatal(err)
	}
	run(t, m2, "dockp", "true")
	if err := m2.Delete(bg, "dockp"); err != nil {
		t.Fatal(err)
	}
	if !m2.Authorize("dock", c.Token) {
		t.Error("the token does not survive the restart")
	}
	if err := m2.Delete(bg, "dock"); err != nil {
		t.Fatal(err)
	}
	if left := dockerLeftovers(t, ids); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the workspace's directory is left: %v", err)
	}
}

func TestDockerPause(t *testing.T) {
	m, _ := newMgr(t, &Options{Opener: dockerOpener(t)})
	id := checkPause(t, m, smallDocker)
	if left := dockerLeftovers(t, map[string]bool{id: true}); len(left) != 0 {
		t.Errorf("left after deleting a paused workspace: %v", left)
	}
}

// TestDockerLoad is TestNativeLoad on docker: 50 small workspaces at
// once, a command in each, all deleted, no container or directory left.
func TestDockerLoad(t *testing.T) {
	const n = 50
	m, _ := newMgr(t, &Options{Opener: dockerOpener(t), MaxWorkspaces: n})
	heap0, rss0 := memNow()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]bool{}
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("load-%02d", i)
			c, err := m.Create(bg, &CreateRequest{Name: name, Template: smallDocker})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ids[c.Workspace.World] = true
			mu.Unlock()
			w, release, err := m.World(bg, name)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			var out bytes.Buffer
			res, err := w.Exec.Run(bg, &execworld.Cmd{Argv: []string{"sh", "-c", "echo $0 | tee name", name}, Stdout: &out})
			if err != nil || res.ExitCode() != 0 || out.String() != name+"\n" {
				t.Errorf("%s: %v, %+v, %q", name, err, res, out.String())
			}
		}()
	}
	wg.Wait()
	t.Logf("%d docker workspaces created and run in %s", n, time.Since(start))
	if t.Failed() {
		t.FailNow()
	}
	heap1, rss1 := memNow()
	t.Logf("dsh's memory per idle docker workspace: heap in use %.1f KiB, RSS %.1f KiB (over %d)",
		float64(int64(heap1)-int64(heap0))/n/1024, float64(int64(rss1)-int64(rss0))/n/1024, n)
	if left := dockerLeftovers(t, ids); len(left) != n {
		t.Fatalf("with %d worlds open, %d containers are seen", n, len(left))
	}
	list, _ := m.List(bg)
	for _, ws := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Delete(bg, ws.Name); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if left := dockerLeftovers(t, ids); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
	if ents, _ := workspaceDirs(m.root); len(ents) != 0 {
		t.Errorf("directories left under the root: %v", ents)
	}
}

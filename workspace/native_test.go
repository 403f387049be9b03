package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/netpolicy"
)

var small = Template{Driver: "native", Limits: Limits{Memory: "32MiB", Pids: 64}}

func newNativeMgr(t *testing.T, o *Options) (*Mgr, *nativeEnv) {
	t.Helper()
	env := newNative(t)
	o.Opener = &realOpener{backends: map[string]execworld.Backend{"native": env.driver}}
	m, _ := newMgr(t, o)
	return m, env
}

func TestNativeCreateExecFilesDelete(t *testing.T) {
	m, env := newNativeMgr(t, &Options{})
	c := create(t, m, &CreateRequest{Name: "real", Template: small})
	dir := dirOf(t, m, "real")
	os.WriteFile(filepath.Join(dir, filesDir, "in"), []byte("from the host\n"), 0o644)
	out := run(t, m, "real", "sh", "-c", "cat in; echo from the world > out; pwd")
	if want := "from the host\n" + filepath.Join(dir, filesDir) + "\n"; out != want {
		t.Errorf("the world printed %q, want %q", out, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, filesDir, "out")); string(b) != "from the world\n" {
		t.Errorf("out = %q", b)
	}
	// The limits are the template's.
	// (A world's cgroup is named OWNERPID-STARTTIME-WORLDID; the driver
	// adds a reserve for its init's threads to the pids limit.)
	for file, want := range map[string]string{"pids/%s/*-%s/pids.max": "64", "memory/%s/*-%s/memory.limit_in_bytes": "33554432"} {
		ps, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", fmt.Sprintf(file, env.cgparent, c.Workspace.World)))
		if len(ps) != 1 {
			t.Errorf("cgroup files %s: %v, want one", file, ps)
			continue
		}
		b, err := os.ReadFile(ps[0])
		got, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		w, _ := strconv.Atoi(want)
		if err != nil || got < w || (strings.Contains(file, "pids") && got >= w+64) || (!strings.Contains(file, "pids") && got != w) {
			t.Errorf("%s = %q (%v), want %s", ps[0], b, err, want)
		}
	}
	if !m.Authorize("real", c.Token) {
		t.Error("token refused")
	}
	if err := m.Delete(bg, "real"); err != nil {
		t.Fatal(err)
	}
	if left := env.leftovers(m.root); len(left) != 0 {
		t.Errorf("left after delete: %v", left)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the workspace's directory is left: %v", err)
	}
}

func TestNativeRestartComesBackStopped(t *testing.T) {
	env := newNative(t)
	root := t.TempDir()
	op := &realOpener{backends: map[string]execworld.Backend{"native": env.driver}}
	m, err := New(&Options{Root: root, Opener: op})
	if err != nil {
		t.Fatal(err)
	}
	create(t, m, &CreateRequest{Name: "n", Template: small})
	run(t, m, "n", "sh", "-c", "echo kept > f")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if left := env.leftovers(root); len(left) != 0 {
		t.Errorf("left after Close: %v", left)
	}
	m2, _ := newMgr(t, &Options{Root: root, Opener: op})
	if ws, err := m2.Get(bg, "n"); err != nil || ws.State != StateStopped {
		t.Fatalf("after a restart: %+v, %v; want stopped", ws, err)
	}
	if out := run(t, m2, "n", "cat", "f"); out != "kept\n" {
		t.Errorf("after a restart f = %q", out)
	}
}

func TestNativePause(t *testing.T) {
	m, env := newNativeMgr(t, &Options{})
	checkPause(t, m, small)
	if left := env.leftovers(m.root); len(left) != 0 {
		t.Errorf("left after deleting a paused workspace: %v", left)
	}
}

// TestNativeLoad creates 50 small workspaces at once, runs a command in
// each, measures what an idle workspace costs this process, deletes
// them all at once and checks that nothing is left.
func TestNativeLoad(t *testing.T) {
	const n = 50
	m, env := newNativeMgr(t, &Options{MaxWorkspaces: n})
	heap0, rss0 := memNow()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("load-%02d", i)
			if _, err := m.Create(bg, &CreateRequest{Name: name, Template: small}); err != nil {
				errs <- err
				return
			}
			w, release, err := m.World(bg, name)
			if err != nil {
				errs <- err
				return
			}
			defer release()
			var out bytes.Buffer
			res, err := w.Exec.Run(bg, &execworld.Cmd{Argv: []string{"sh", "-c", "echo $0 | tee name", name}, Stdout: &out})
			if err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				return
			}
			if res.ExitCode() != 0 || out.String() != name+"\n" {
				errs <- fmt.Errorf("%s: exit %d, stdout %q", name, res.ExitCode(), out.String())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d workspaces created and run in %s", n, time.Since(start))
	if t.Failed() {
		t.FailNow()
	}
	list, _ := m.List(bg)
	if len(list) != n {
		t.Fatalf("%d workspaces listed, want %d", len(list), n)
	}
	heap1, rss1 := memNow()
	t.Logf("dsh's memory per idle native workspace: heap in use %.1f KiB, RSS %.1f KiB (over %d)",
		float64(int64(heap1)-int64(heap0))/n/1024, float64(int64(rss1)-int64(rss0))/n/1024, n)
	// The check below sees live worlds: their cgroups, state, processes.
	if left := env.leftovers(m.root); len(left) < 2*n {
		t.Fatalf("with %d worlds open, leftovers sees only %v", n, left)
	}
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
	if left := env.leftovers(m.root); len(left) != 0 {
		t.Errorf("left after deleting every workspace: %v", left)
	}
	if ents, _ := workspaceDirs(m.root); len(ents) != 0 {
		t.Errorf("directories left under the root: %v", ents)
	}
}

// memNow is this process's heap in use, after a GC, and its RSS.
func memNow() (heap, rss uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, _ := os.ReadFile("/proc/self/statm")
	var size, res uint64
	fmt.Sscan(string(b), &size, &res)
	return ms.HeapInuse, res * uint64(os.Getpagesize())
}

// TestNativePoolEgress takes pooled native worlds: one whose create
// allows the host's loopback service reaches it through the world's
// egress proxy, one whose create allows nothing does not (the pool's
// worlds start denying everything; the take sets the workspace's
// policy); Close leaves no pool world behind.
func TestNativePoolEgress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	host := fmt.Sprintf("%s:%d", netpolicy.HostName, port)

	m, env := newNativeMgr(t, &Options{Pool: []PoolSpec{{Template: small, Size: 2}}})
	if !waitFor(time.Minute, func() bool { return m.pools[0].readyCount() == 2 }) {
		t.Fatal("the pool does not fill")
	}
	curl := []string{"sh", "-c", "curl -fsS --max-time 10 http://" + host + "/ 2>&1; echo \" exit=$?\""}
	open := create(t, m, &CreateRequest{Name: "open", Template: small, Allow: []string{host}})
	shut := create(t, m, &CreateRequest{Name: "shut", Template: small})
	if !open.Workspace.Pooled || !shut.Workspace.Pooled {
		t.Fatalf("the creates did not take pooled worlds: %v %v", open.Workspace.Pooled, shut.Workspace.Pooled)
	}
	if out := run(t, m, "open", curl...); out != "reached exit=0\n" {
		t.Errorf("a pooled world allowed %s: %q, want it reached", host, out)
	}
	if out := run(t, m, "shut", curl...); strings.HasPrefix(out, "reached") || !strings.Contains(out, "403") || strings.HasSuffix(out, "exit=0\n") {
		t.Errorf("a pooled world that allows nothing reached %s: %q", host, out)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if left := env.leftovers(m.root); len(left) != 0 {
		t.Errorf("left after Close: %v", left)
	}
	ents, _ := workspaceDirs(m.root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "p-") {
			if _, err := os.Stat(filepath.Join(m.root, e.Name(), recordFile)); err != nil {
				t.Errorf("Close left the pool directory %s", e.Name())
			}
		}
	}
	if len(ents) != 2 {
		t.Errorf("under the root after Close: %v, want the 2 workspaces", ents)
	}
}

// TestNativeIdle: an idle native world is closed with nothing left of
// it, and the workspace's next use opens a new one over its files.
func TestNativeIdle(t *testing.T) {
	m, env := newNativeMgr(t, &Options{})
	create(t, m, &CreateRequest{Name: "idle", Template: small, IdleTimeout: Duration(300 * time.Millisecond)})
	run(t, m, "idle", "sh", "-c", "echo kept > f")
	if !waitFor(10*time.Second, func() bool { ws, _ := m.Get(bg, "idle"); return ws.State == StateStopped }) {
		t.Fatal("the idle world is not closed")
	}
	if left := env.leftovers(m.root); len(left) != 0 {
		t.Errorf("left of the idle world: %v", left)
	}
	if out := run(t, m, "idle", "cat", "f"); out != "kept\n" {
		t.Errorf("after reopening, f = %q", out)
	}
}

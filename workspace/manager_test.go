package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
)

var bg = context.Background()

func newMgr(t *testing.T, o *Options) (*Mgr, *fakeOpener) {
	t.Helper()
	f, _ := o.Opener.(*fakeOpener)
	if o.Opener == nil {
		f = newFakeOpener()
		o.Opener = f
	}
	if o.Root == "" {
		o.Root = t.TempDir()
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m, f
}

func create(t *testing.T, m *Mgr, req *CreateRequest) *Created {
	t.Helper()
	c, err := m.Create(bg, req)
	if err != nil {
		t.Fatalf("Create(%+v): %v", req, err)
	}
	return c
}

func run(t *testing.T, m *Mgr, name string, argv ...string) string {
	t.Helper()
	w, release, err := m.World(bg, name)
	if err != nil {
		t.Fatalf("World(%s): %v", name, err)
	}
	defer release()
	res, err := w.Exec.Run(bg, &execworld.Cmd{Argv: argv})
	if err != nil {
		t.Fatalf("run %q in %s: %v", argv, name, err)
	}
	if res.ExitCode() != 0 {
		t.Fatalf("run %q in %s: exit %d: %s", argv, name, res.ExitCode(), res.Stderr.Data)
	}
	return string(res.Stdout.Data)
}

func dirOf(t *testing.T, m *Mgr, name string) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.ws[name]
	if e == nil {
		t.Fatalf("no entry %s", name)
	}
	return e.dir
}

func TestNewValidatesOptions(t *testing.T) {
	f := newFakeOpener()
	root := t.TempDir()
	cases := []struct {
		o    Options
		want string
	}{
		{Options{Opener: f}, "Options.Root"},
		{Options{Root: root}, "Options.Opener"},
		{Options{Root: root, Opener: f, DefaultDriver: "No Such"}, "Options.DefaultDriver"},
		{Options{Root: root, Opener: f, DefaultTTL: -time.Second}, "Options.DefaultTTL"},
		{Options{Root: root, Opener: f, DefaultTTL: 2 * time.Hour, MaxTTL: time.Hour}, "Options.DefaultTTL"},
		{Options{Root: root, Opener: f, MaxWorkspaces: -1}, "Options.MaxWorkspaces"},
		{Options{Root: root, Opener: f, Pool: []PoolSpec{{Size: -1}}}, "Options.Pool[0].Size"},
		{Options{Root: root, Opener: f, Pool: []PoolSpec{{Size: 1, Template: Template{Limits: Limits{Memory: "lots"}}}}}, "limits.memory"},
		{Options{Root: root, Opener: f, Pool: []PoolSpec{{Size: 1}, {Size: 2, Template: Template{Driver: "native"}}}}, "already pooled"},
	}
	for _, c := range cases {
		_, err := New(&c.o)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want ErrInvalid naming %s", c.o, err, c.want)
		}
	}
}

func TestCreateValidates(t *testing.T) {
	m, f := newMgr(t, &Options{MaxTTL: time.Hour})
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	cases := []struct {
		req  CreateRequest
		want string
	}{
		{CreateRequest{Name: "Upper"}, `name "Upper"`},
		{CreateRequest{Name: "-dash"}, `name "-dash"`},
		{CreateRequest{Name: strings.Repeat("a", 64)}, "name"},
		{CreateRequest{Name: "a/b"}, "name"},
		{CreateRequest{Name: "ok", Template: Template{Driver: "Native"}}, `driver "Native"`},
		{CreateRequest{Name: "ok", Template: Template{Driver: "warp"}}, `driver "warp"`}, // the Opener's
		{CreateRequest{Name: "ok", Template: Template{Image: "has space"}}, "image"},
		{CreateRequest{Name: "ok", Template: Template{Limits: Limits{Memory: "-5M"}}}, "limits.memory"},
		{CreateRequest{Name: "ok", Template: Template{Limits: Limits{Pids: -1}}}, "limits.pids"},
		{CreateRequest{Name: "ok", Template: Template{Limits: Limits{CPUs: -0.5}}}, "limits.cpus"},
		{CreateRequest{Name: "ok", TTL: Duration(2 * time.Hour)}, "ttl 2h0m0s is beyond"},
		{CreateRequest{Name: "ok", TTL: Duration(-time.Second)}, "ttl"},
		{CreateRequest{Name: "ok", IdleTimeout: Duration(-time.Second)}, "idle_timeout"},
		{CreateRequest{Name: "ok", IdleTimeout: Duration(2 * time.Hour)}, "idle_timeout"},
		{CreateRequest{Name: "ok", Labels: many}, "labels: 33 given"},
		{CreateRequest{Name: "ok", Labels: map[string]string{"bad key": "v"}}, `label key "bad key"`},
		{CreateRequest{Name: "ok", Labels: map[string]string{"k": strings.Repeat("v", MaxLabelValue+1)}}, `label "k"`},
		{CreateRequest{Name: "ok", Allow: []string{"has space:80"}}, "allow[0]"},
		{CreateRequest{Name: "ok", Allow: []string{"not a:valid:entry:x"}}, "allow"},
		{CreateRequest{Name: "ok", Allow: []string{"example.org:99999"}}, "allow"}, // the Opener's Policy
	}
	for _, c := range cases {
		_, err := m.Create(bg, &c.req)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Create(%+v) = %v, want ErrInvalid naming %s", c.req, err, c.want)
		}
	}
	if _, err := m.Create(bg, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Create(nil) = %v, want ErrInvalid", err)
	}
	if n := f.openCount(); n != 0 {
		t.Errorf("invalid creates opened %d worlds", n)
	}
	if ws, _ := m.List(bg); len(ws) != 0 {
		t.Errorf("invalid creates left workspaces: %+v", ws)
	}
	ents, _ := workspaceDirs(m.root)
	if len(ents) != 0 {
		t.Errorf("invalid creates left directories: %v", ents)
	}
	for _, name := range []string{"", "UP", "../x"} {
		if _, err := m.Get(bg, name); !errors.Is(err, ErrInvalid) {
			t.Errorf("Get(%q) = %v, want ErrInvalid", name, err)
		}
	}
}

func TestCreateExecFilesDelete(t *testing.T) {
	m, f := newMgr(t, &Options{})
	c := create(t, m, &CreateRequest{Name: "one", Allow: []string{"example.org:443"}, Labels: map[string]string{"team": "a"}})
	ws := c.Workspace
	if ws.Name != "one" || ws.State != StateRunning || ws.Driver != "native" || ws.World == "" || ws.Pooled {
		t.Errorf("created %+v", ws)
	}
	if ws.ExpiresAt.Sub(ws.CreatedAt) != DefaultTTL || time.Duration(ws.IdleTimeout) != DefaultIdleTimeout {
		t.Errorf("defaults not applied: %+v", ws)
	}
	if len(c.Token) != 64 {
		t.Errorf("token %q: want 32 bytes in hex", c.Token)
	}
	dir := dirOf(t, m, "one")
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), c.Token) || !strings.Contains(string(b), hashToken(c.Token)) {
		t.Errorf("workspace.json must hold the token's hash, not the token:\n%s", b)
	}
	if got := f.opens[0]; got.dir != filepath.Join(dir, filesDir) || len(got.allow) != 1 {
		t.Errorf("opened %+v", got)
	}

	run(t, m, "one", "sh", "-c", "echo hello > greeting")
	if b, err := os.ReadFile(filepath.Join(dir, filesDir, "greeting")); err != nil || string(b) != "hello\n" {
		t.Errorf("file written in the world: %q, %v", b, err)
	}

	if !m.Authorize("one", c.Token) {
		t.Error("the workspace's own token is refused")
	}
	last := "0"
	if c.Token[63] == '0' {
		last = "1"
	}
	if m.Authorize("one", c.Token[:63]+last) || m.Authorize("one", "") || m.Authorize("two", c.Token) {
		t.Error("a wrong token, an empty one, or one on another workspace is accepted")
	}
	c2 := create(t, m, &CreateRequest{})
	if !strings.HasPrefix(c2.Workspace.Name, "ws-") || len(c2.Workspace.Name) != 13 {
		t.Errorf("generated name %q, want ws- and 10 hex digits", c2.Workspace.Name)
	}
	if m.Authorize("one", c2.Token) || m.Authorize(c2.Workspace.Name, c.Token) {
		t.Error("a token reaches another workspace")
	}
	list, err := m.List(bg)
	if err != nil || len(list) != 2 || list[0].Name != "one" {
		t.Errorf("List = %+v, %v", list, err)
	}

	if _, err := m.Create(bg, &CreateRequest{Name: "one"}); !errors.Is(err, ErrExists) {
		t.Errorf("second create of one = %v, want ErrExists", err)
	}
	if err := m.Delete(bg, "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the deleted workspace's directory is left: %v", err)
	}
	if _, err := m.Get(bg, "one"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after delete = %v, want ErrNotFound", err)
	}
	if err := m.Delete(bg, "one"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete = %v, want ErrNotFound", err)
	}
	if m.Authorize("one", c.Token) {
		t.Error("a deleted workspace's token is accepted")
	}
	if err := m.Delete(bg, c2.Workspace.Name); err != nil {
		t.Fatal(err)
	}
	if n := f.b.OpenInstances(); n != 0 {
		t.Errorf("%d instances open after every delete", n)
	}
}

func TestCreateFailureLeavesNothing(t *testing.T) {
	m, f := newMgr(t, &Options{})
	f.fail.Store(1)
	if _, err := m.Create(bg, &CreateRequest{Name: "x"}); err == nil || !strings.Contains(err.Error(), "workspace x: opening its world") {
		t.Fatalf("Create with a failing Opener = %v", err)
	}
	ents, _ := workspaceDirs(m.root)
	if len(ents) != 0 {
		t.Errorf("a failed create left %v", ents)
	}
	create(t, m, &CreateRequest{Name: "x"}) // the name is free again
}

func TestMaxWorkspaces(t *testing.T) {
	m, _ := newMgr(t, &Options{MaxWorkspaces: 2})
	create(t, m, &CreateRequest{Name: "a"})
	create(t, m, &CreateRequest{Name: "b"})
	if _, err := m.Create(bg, &CreateRequest{Name: "c"}); !errors.Is(err, ErrLimit) {
		t.Fatalf("third create = %v, want ErrLimit", err)
	}
	if err := m.Delete(bg, "a"); err != nil {
		t.Fatal(err)
	}
	create(t, m, &CreateRequest{Name: "c"})
}

func TestTTLReaps(t *testing.T) {
	m, f := newMgr(t, &Options{})
	create(t, m, &CreateRequest{Name: "short", TTL: Duration(300 * time.Millisecond)})
	create(t, m, &CreateRequest{Name: "long"})
	dir := dirOf(t, m, "short")
	start := time.Now()
	if !waitFor(5*time.Second, func() bool { _, err := m.Get(bg, "short"); return errors.Is(err, ErrNotFound) }) {
		t.Fatal("an expired workspace is still there")
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("reaped after %s, before its TTL", d)
	}
	if !waitFor(2*time.Second, func() bool { _, err := os.Stat(dir); return errors.Is(err, os.ErrNotExist) }) {
		t.Error("the expired workspace's directory is left")
	}
	if _, err := m.Get(bg, "long"); err != nil {
		t.Errorf("the other workspace: %v", err)
	}
	if n := f.b.OpenInstances(); n != 1 {
		t.Errorf("%d instances open, want 1", n)
	}
}

func TestExtend(t *testing.T) {
	m, _ := newMgr(t, &Options{MaxTTL: time.Hour})
	c := create(t, m, &CreateRequest{Name: "e", TTL: Duration(time.Second)})
	ws, err := m.Extend(bg, "e", 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if d := ws.ExpiresAt.Sub(c.Workspace.ExpiresAt); d < 29*time.Minute {
		t.Errorf("extend moved the expiry by %s", d)
	}
	ws2, err := m.Extend(bg, "e", time.Minute)
	if err != nil || !ws2.ExpiresAt.Equal(ws.ExpiresAt) {
		t.Errorf("a shorter extend moved the expiry earlier: %v → %v (%v)", ws.ExpiresAt, ws2.ExpiresAt, err)
	}
	for _, by := range []time.Duration{0, -time.Second, 2 * time.Hour} {
		if _, err := m.Extend(bg, "e", by); !errors.Is(err, ErrInvalid) {
			t.Errorf("Extend by %s = %v, want ErrInvalid", by, err)
		}
	}
	time.Sleep(time.Until(c.Workspace.ExpiresAt) + 300*time.Millisecond) // past the first TTL
	if _, err := m.Get(bg, "e"); err != nil {
		t.Errorf("an extended workspace was reaped at its old TTL: %v", err)
	}
	rec, err := readRecord(dirOf(t, m, "e"))
	if err != nil || !rec.ExpiresAt.Equal(ws.ExpiresAt) {
		t.Errorf("the extension is not persisted: %+v, %v", rec, err)
	}
	if _, err := m.Extend(bg, "nope", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Errorf("Extend of a missing workspace = %v", err)
	}
}

func TestIdleClosesTheWorld(t *testing.T) {
	m, f := newMgr(t, &Options{})
	create(t, m, &CreateRequest{Name: "idle", IdleTimeout: Duration(time.Second)})
	// In use, it stays open past its idle timeout.
	w, release, err := m.World(bg, "idle")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec.Run(bg, &execworld.Cmd{Argv: []string{"sh", "-c", "echo kept > f"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if ws, _ := m.Get(bg, "idle"); ws.State != StateRunning {
		t.Fatalf("a world in use was closed as idle: %+v", ws)
	}
	release()
	release() // twice is harmless
	if !waitFor(5*time.Second, func() bool { ws, _ := m.Get(bg, "idle"); return ws.State == StateStopped }) {
		t.Fatal("an idle world is not closed")
	}
	if _, err := w.Exec.Run(bg, &execworld.Cmd{Argv: []string{"true"}}); !errors.Is(err, execworld.ErrClosed) {
		t.Errorf("the idle world still runs commands: %v", err)
	}
	if n := f.b.OpenInstances(); n != 0 {
		t.Errorf("%d instances open after idling", n)
	}
	// Its next use reopens it over the same files.
	if out := run(t, m, "idle", "cat", "f"); out != "kept\n" {
		t.Errorf("after reopening, f = %q", out)
	}
	if ws, _ := m.Get(bg, "idle"); ws.State != StateRunning || ws.World == w.ID {
		t.Errorf("after reopening: %+v", ws)
	}
}

func TestPauseResume(t *testing.T) {
	m, _ := newMgr(t, &Options{})
	create(t, m, &CreateRequest{Name: "p", IdleTimeout: Duration(time.Second)})
	ws, err := m.Pause(bg, "p")
	if err != nil || ws.State != StatePaused {
		t.Fatalf("Pause = %+v, %v", ws, err)
	}
	if _, _, err := m.World(bg, "p"); !errors.Is(err, ErrConflict) {
		t.Errorf("World of a paused workspace = %v, want ErrConflict", err)
	}
	rec, _ := readRecord(dirOf(t, m, "p"))
	if !rec.Paused {
		t.Error("the pause is not persisted")
	}
	time.Sleep(1500 * time.Millisecond) // past the idle timeout: a paused world keeps its memory
	if ws, _ := m.Get(bg, "p"); ws.State != StatePaused {
		t.Errorf("a paused world was closed as idle: %+v", ws)
	}
	if ws, err := m.Resume(bg, "p"); err != nil || ws.State != StateRunning {
		t.Fatalf("Resume = %+v, %v", ws, err)
	}
	if rec, _ := readRecord(dirOf(t, m, "p")); rec.Paused {
		t.Error("the resume is not persisted")
	}
	run(t, m, "p", "true")
	if !waitFor(5*time.Second, func() bool { ws, _ := m.Get(bg, "p"); return ws.State == StateStopped }) {
		t.Fatal("an idle world is not closed after its resume")
	}
	if _, err := m.Pause(bg, "p"); !errors.Is(err, ErrConflict) {
		t.Errorf("Pause of a stopped workspace = %v, want ErrConflict", err)
	}
}

func TestDeleteWaitsForRelease(t *testing.T) {
	m, f := newMgr(t, &Options{ReleaseTimeout: 5 * time.Second})
	create(t, m, &CreateRequest{Name: "d"})
	_, release, err := m.World(bg, "d")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Delete(bg, "d") }()
	select {
	case err := <-done:
		t.Fatalf("Delete returned before the world was released: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, _, err := m.World(bg, "d"); !errors.Is(err, ErrNotFound) {
		t.Errorf("World of a workspace being deleted = %v, want ErrNotFound", err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := f.b.OpenInstances(); n != 0 {
		t.Errorf("%d instances open", n)
	}

	// Bounded: a user that never releases is closed under.
	m2, f2 := newMgr(t, &Options{ReleaseTimeout: 200 * time.Millisecond})
	create(t, m2, &CreateRequest{Name: "d"})
	if _, _, err := m2.World(bg, "d"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := m2.Delete(bg, "d"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 3*time.Second {
		t.Errorf("Delete with an unreleased world took %s, want about the release timeout", d)
	}
	if n := f2.b.OpenInstances(); n != 0 {
		t.Errorf("%d instances open", n)
	}
}

func TestRestart(t *testing.T) {
	root := t.TempDir()
	f := newFakeOpener()
	m, err := New(&Options{Root: root, Opener: f})
	if err != nil {
		t.Fatal(err)
	}
	cn := create(t, m, &CreateRequest{Name: "nat"})
	create(t, m, &CreateRequest{Name: "dock", Template: Template{Driver: "docker", Image: "dsh/base:latest"}})
	create(t, m, &CreateRequest{Name: "dockp", Template: Template{Driver: "docker"}})
	create(t, m, &CreateRequest{Name: "soon", TTL: Duration(400 * time.Millisecond)})
	soonDir := dirOf(t, m, "soon")
	run(t, m, "nat", "sh", "-c", "echo survived > f")
	if _, err := m.Pause(bg, "dockp"); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := f.b.OpenInstances(); n != 0 {
		t.Fatalf("Close left %d instances open", n)
	}
	if _, err := m.Get(bg, "nat"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
	// What a crash leaves: a create cut short (no workspace.json), a pool
	// world's directory, a temporary record. And what the server must
	// leave alone: a record it cannot read (damaged, or of a newer dsh)
	// and anything not named as its own directories are.
	const cut, pooled, torn, newer = "w-00000000000000c1", "p-0000000000000001", "w-000000000000d0e1", "w-000000000000d0e2"
	for name, content := range map[string]string{cut: "", pooled: "", torn: `{"version":1,"na`, newer: `{"version":99,"name":"future"}`, "src": ""} {
		os.MkdirAll(filepath.Join(root, name, filesDir), 0o700)
		if content != "" {
			os.WriteFile(filepath.Join(root, name, recordFile), []byte(content), 0o600)
		}
	}
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("mine"), 0o600)
	natDir := dirOf(t, m, "nat")
	os.WriteFile(filepath.Join(natDir, recordFile+".tmp123"), []byte("x"), 0o600)
	// A limit this host no longer offers (a smaller machine, a cpuset)
	// is a problem of the next open, not a reason to lose the workspace.
	natRec, err := readRecord(natDir)
	if err != nil {
		t.Fatal(err)
	}
	natRec.Template.Limits.CPUs = float64(runtime.NumCPU() + 1)
	if err := writeRecord(natDir, natRec); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // soon expires while no server runs

	opens := f.openCount()
	m2, _ := newMgr(t, &Options{Root: root, Opener: f})
	list, err := m2.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, ws := range list {
		state[ws.Name] = ws.State
	}
	want := map[string]string{"nat": StateStopped, "dock": StateRunning, "dockp": StatePaused}
	if len(state) != len(want) || state["nat"] != want["nat"] || state["dock"] != want["dock"] || state["dockp"] != want["dockp"] {
		t.Errorf("after a restart: %v, want %v", state, want)
	}
	if got := f.openCount() - opens; got != 2 {
		t.Errorf("the restart opened %d worlds, want the 2 docker ones", got)
	}
	for _, d := range []string{soonDir, filepath.Join(root, cut), filepath.Join(root, pooled), filepath.Join(natDir, recordFile+".tmp123")} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left after the restart", d)
		}
	}
	for _, f := range []string{filepath.Join(torn, recordFile), filepath.Join(newer, recordFile), filepath.Join("src", filesDir), "notes.txt"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("the restart removed %s, which it cannot tell is its own to remove: %v", f, err)
		}
	}
	if !m2.Authorize("nat", cn.Token) {
		t.Error("the token does not survive the restart")
	}
	if out := run(t, m2, "nat", "cat", "f"); out != "survived\n" {
		t.Errorf("after the restart, f = %q", out)
	}
	b, _ := os.ReadFile(filepath.Join(natDir, recordFile))
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil || rec.Name != "nat" {
		t.Errorf("workspace.json: %s (%v)", b, err)
	}
}

func TestPool(t *testing.T) {
	tmpl := Template{Driver: "native", Limits: Limits{Memory: "32MiB", Pids: 64}}
	m, f := newMgr(t, &Options{Pool: []PoolSpec{{Template: tmpl, Size: 2}}})
	p := m.pools[0]
	if !waitFor(5*time.Second, func() bool { return p.readyCount() == 2 }) {
		t.Fatalf("the pool holds %d worlds, want 2", p.readyCount())
	}
	for _, o := range f.opens {
		if len(o.allow) != 0 {
			t.Errorf("a pool world was opened with egress %v, want none", o.allow)
		}
	}
	// 32m is 32MiB: the same template.
	c := create(t, m, &CreateRequest{Name: "pooled", Template: Template{Limits: Limits{Memory: "32m", Pids: 64}}, Allow: []string{"example.org:443"}})
	if !c.Workspace.Pooled {
		t.Fatalf("a create of the pool's template did not take a pooled world: %+v", c.Workspace)
	}
	dir := dirOf(t, m, "pooled")
	if !strings.HasPrefix(filepath.Base(dir), "p-") {
		t.Errorf("the pooled workspace's directory is %s", dir)
	}
	if _, err := readRecord(dir); err != nil {
		t.Errorf("the pooled world's directory did not become the workspace's: %v", err)
	}
	run(t, m, "pooled", "sh", "-c", "echo x > f")
	if !waitFor(5*time.Second, func() bool { return p.readyCount() == 2 }) {
		t.Errorf("the pool was not refilled: %d", p.readyCount())
	}
	c2 := create(t, m, &CreateRequest{Name: "other", Template: Template{Limits: Limits{Memory: "64MiB", Pids: 64}}})
	if c2.Workspace.Pooled {
		t.Error("a create of another template took a pooled world")
	}
	poolDirs := func() []string {
		var ds []string
		ents, _ := workspaceDirs(m.root)
		for _, e := range ents {
			if _, err := os.Stat(filepath.Join(m.root, e.Name(), recordFile)); err != nil {
				ds = append(ds, e.Name())
			}
		}
		return ds
	}
	if ds := poolDirs(); len(ds) != 2 {
		t.Errorf("pool directories: %v, want 2", ds)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if ds := poolDirs(); len(ds) != 0 {
		t.Errorf("Close left pool directories %v", ds)
	}
	if n := f.b.OpenInstances(); n != 0 {
		t.Errorf("Close left %d instances open", n)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("Close removed a workspace's files: %v", err)
	}
}

func TestPoolBacksOff(t *testing.T) {
	f := newFakeOpener()
	f.fail.Store(3)
	m, _ := newMgr(t, &Options{Opener: f, Pool: []PoolSpec{{Template: Template{Driver: "native"}, Size: 1}}})
	start := time.Now()
	if !waitFor(10*time.Second, func() bool { return m.pools[0].readyCount() == 1 }) {
		t.Fatal("the pool did not fill after failures")
	}
	// 100ms + 200ms + 400ms of backoff.
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Errorf("the pool filled after %s: no backoff", d)
	}
	ents, _ := workspaceDirs(m.root)
	if len(ents) != 1 {
		t.Errorf("failed pool opens left directories: %v", ents)
	}
}

func TestLimitsValidated(t *testing.T) {
	m, _ := newMgr(t, &Options{})
	for _, l := range []Limits{{Memory: "4k"}, {Pids: -1}, {CPUs: 100000}, {CPUs: -1}} {
		if _, err := m.Create(bg, &CreateRequest{Name: "l", Template: Template{Limits: l}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "limits.") {
			t.Errorf("limits %+v: %v, want ErrInvalid naming the limit", l, err)
		}
	}
}

func TestPauseWithoutAFreezer(t *testing.T) {
	f := newFakeOpener()
	f.b.noFreeze = true
	m, _ := newMgr(t, &Options{Opener: f})
	create(t, m, &CreateRequest{Name: "nf"})
	_, err := m.Pause(bg, "nf")
	if !errors.Is(err, ErrConflict) || !errors.Is(err, execworld.ErrCannotPause) {
		t.Fatalf("Pause without a freezer = %v, want ErrConflict and ErrCannotPause", err)
	}
	if ws, _ := m.Get(bg, "nf"); ws.State != StateRunning {
		t.Errorf("after a failed pause: %+v", ws)
	}
	run(t, m, "nf", "true")
}

func TestOneManagerPerRoot(t *testing.T) {
	m, _ := newMgr(t, &Options{})
	_, err := New(&Options{Root: m.root, Opener: newFakeOpener()})
	if err == nil || !strings.Contains(err.Error(), "in use by another dsh serve") {
		t.Fatalf("a second Manager over the same root: %v, want refused", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := New(&Options{Root: m.root, Opener: newFakeOpener()})
	if err != nil {
		t.Fatalf("after Close, the root is free: %v", err)
	}
	m2.Close()
}

// A docker create that names the server's default image explicitly is
// the template of a pool that names none, and the reverse: both are that
// image.
func TestPoolDefaultImage(t *testing.T) {
	const img = "dsh/base:latest"
	for _, c := range []struct{ pool, create string }{{"", img}, {img, ""}} {
		tmpl := Template{Driver: "docker", Image: c.pool, Limits: Limits{Memory: "32MiB"}}
		m, _ := newMgr(t, &Options{DefaultImage: img, Pool: []PoolSpec{{Template: tmpl, Size: 1}}})
		if !waitFor(5*time.Second, func() bool { return m.pools[0].readyCount() == 1 }) {
			t.Fatalf("the pool holds %d worlds, want 1", m.pools[0].readyCount())
		}
		cr := create(t, m, &CreateRequest{Name: "d", Template: Template{Driver: "docker", Image: c.create, Limits: Limits{Memory: "32MiB"}}})
		if !cr.Workspace.Pooled || cr.Workspace.Image != img {
			t.Errorf("pool image %q, create image %q: pooled %v, image %q; want a pooled world of %s", c.pool, c.create, cr.Workspace.Pooled, cr.Workspace.Image, img)
		}
	}
}

// The OnRemove hook hears of every removal before it waits for the
// world's users, so a user that holds the world until told (an MCP
// session) lets an expired workspace go at its TTL, not after the
// release timeout.
func TestOnRemoveHearsTheReaper(t *testing.T) {
	m, _ := newMgr(t, &Options{ReleaseTimeout: 30 * time.Second})
	create(t, m, &CreateRequest{Name: "short", TTL: Duration(300 * time.Millisecond)})
	_, release, err := m.World(bg, "short")
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan string, 1)
	m.OnRemove(func(name string) { heard <- name; release() })
	if !waitFor(10*time.Second, func() bool { _, err := m.Get(bg, "short"); return errors.Is(err, ErrNotFound) }) {
		t.Fatal("an expired workspace whose user is told of its removal is still there")
	}
	select {
	case n := <-heard:
		if n != "short" {
			t.Errorf("OnRemove heard %q", n)
		}
	default:
		t.Error("OnRemove was not called")
	}
}

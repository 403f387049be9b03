package native

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
	"github.com/dsh-dev/dsh/sandbox/pid1"
)

func openWorld(t *testing.T, spec *sandbox.Spec) *instance {
	t.Helper()
	return openWorldWith(t, spec, nil)
}

func openWorldWith(t *testing.T, spec *sandbox.Spec, opts *sandbox.OpenOptions) *instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in, err := New(&Options{Executable: initExe(t), StateDir: stateDir(t), Stderr: os.Stderr}).Open(ctx, spec, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { in.Close() })
	return in.(*instance)
}

// run starts argv in the world and returns its stdout, stderr and status.
func run(t *testing.T, in sandbox.Instance, env []string, argv ...string) (string, string, sandbox.ExitStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := in.Start(ctx, sandbox.ProcessSpec{Argv: argv, Env: env})
	if err != nil {
		t.Fatalf("Start(%q): %v", argv, err)
	}
	outc, errc := make(chan string, 1), make(chan string, 1)
	go func() { b, _ := io.ReadAll(p.Stdout()); outc <- string(b) }()
	go func() { b, _ := io.ReadAll(p.Stderr()); errc <- string(b) }()
	st, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait(%q): %v", argv, err)
	}
	return <-outc, <-errc, st
}

func TestWorldRunsProcessesThroughPID1(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	ws := t.TempDir()
	spec := sandbox.DefaultSpec(ws)
	in := openWorld(t, spec)
	out, _, st := run(t, in, spec.Env, "sh", "-c", "echo $$ $PPID; grep NoNewPrivs /proc/self/status; exit 3")
	if st.Code != 3 {
		t.Errorf("exit status = %v, want code 3", st)
	}
	if !strings.Contains(out, " 1\n") || !strings.Contains(out, "NoNewPrivs:\t1") {
		t.Errorf("process is not a confined child of the init:\n%s", out)
	}
	// A second process in the same world sees the first one's files.
	run(t, in, spec.Env, "sh", "-c", "echo shared > /tmp/f")
	if out, _, _ := run(t, in, spec.Env, "cat", "/tmp/f"); out != "shared\n" {
		t.Errorf("second process read %q from the world's /tmp, want %q", out, "shared\n")
	}
}

// fakeProxy is an egress proxy stand-in: it answers every request itself
// (never dialling anything) and names the host it was asked for.
type fakeProxy struct{ srv *http.Server }

func (f *fakeProxy) Serve(l net.Listener) error {
	f.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "proxied %s", r.Host)
	})}
	return f.srv.Serve(l)
}

func TestEgressGoesThroughTheForwarder(t *testing.T) {
	helperInit(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	spec := sandbox.DefaultSpec(t.TempDir())
	spec.Egress = true
	in := openWorldWith(t, spec, &sandbox.OpenOptions{Egress: &fakeProxy{}})
	// The name is never resolved: the proxy answers for it. The driver
	// sets no proxy variables (execworld does), so the test gives them.
	out, errOut, st := run(t, in, withProxy(spec.Env), "/proc/self/exe", helperArg, "get", "http://egress-test.invalid/x")
	if st.Code != 0 || !strings.Contains(out, `status 200 body "proxied egress-test.invalid"`) {
		t.Errorf("GET through sandbox.ProxyAddr: %v\n%s%s", st, out, errOut)
	}
}

// worldPids lists the host pids in a world's cgroup, each once: on v1,
// of its pids hierarchy, the world's group and its processes' group.
func worldPids(id string) []int {
	dirs := []string{filepath.Join(cgroupRoot, cgroupParent, id)}
	if !unified() {
		dir := filepath.Join(cgroupRoot, "pids", cgroupParent, id)
		dirs = []string{dir, filepath.Join(dir, procsGroup)}
	}
	var pids []int
	for _, d := range dirs {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, n) {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie is dead for our purposes (nothing runs); its parent reaps it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

func TestCloseKillsEverythingAndRemovesTheCgroup(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	if unified() {
		t.Skip("this test reads the v1 pids hierarchy")
	}
	spec := sandbox.DefaultSpec(t.TempDir())
	in := openWorld(t, spec)
	// Daemonised sleepers in their own sessions: out of reach of any
	// process-group kill, still inside the world.
	ctx := context.Background()
	p, err := in.Start(ctx, sandbox.ProcessSpec{Argv: []string{"sh", "-c", "setsid sleep 1000 & setsid sleep 1000 & echo started"}, Env: spec.Env})
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(p.Stdout()).ReadString('\n')
	if line != "started\n" {
		t.Fatalf("got %q", line)
	}
	id := in.l.id
	var pids []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids = worldPids(id); len(pids) >= 3 { // init + two sleepers
			break
		}
	}
	if len(pids) < 3 {
		t.Fatalf("world cgroup holds %v, want the init and two sleepers", pids)
	}
	if err := in.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := in.Close(); err != nil {
		t.Errorf("second Close = %v, want the first call's nil", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d of the world survived Close", pid)
		}
	}
	for _, c := range v1Controllers {
		if _, err := os.Stat(filepath.Join(cgroupRoot, c, cgroupParent, id)); err == nil {
			t.Errorf("cgroup %s/%s/%s survived Close", c, cgroupParent, id)
		}
	}
	if _, err := in.Start(ctx, sandbox.ProcessSpec{Argv: []string{"true"}}); err != ErrClosed {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}

// A process still running when its world closes ends with ErrClosed, as
// Close says, never as a lost connection: Close kills the init before it
// closes the connection (stop), and the client is closing by then.
func TestCloseEndsRunningProcessesWithErrClosed(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	spec := sandbox.DefaultSpec(t.TempDir())
	for i := 0; i < 10; i++ { // without the client's mark, one run of five rounds in three failed
		in := openWorld(t, spec)
		p, err := in.Start(context.Background(), sandbox.ProcessSpec{Argv: []string{"sh", "-c", "echo started; exec sleep 1000"}, Env: spec.Env})
		if err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(p.Stdout()).ReadString('\n'); line != "started\n" {
			t.Fatalf("got %q", line)
		}
		if err := in.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if _, err := p.Wait(); !errors.Is(err, pid1.ErrClosed) {
			t.Fatalf("round %d: Wait after Close = %v, want pid1.ErrClosed", i, err)
		}
	}
}

func TestPidsLimitStopsForkBomb(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	spec := sandbox.DefaultSpec(t.TempDir())
	n := int64(32)
	spec.Resources.Pids.Limit = &n
	in := openWorld(t, spec)
	// Start 60 sleepers; with the limit the shell's forks fail. dash
	// gives up at the first failure (bash would retry for seconds).
	_, errOut, st := run(t, in, spec.Env, "sh", "-c", `i=0; while [ $i -lt 60 ]; do sleep 30 </dev/null >/dev/null 2>&1 & i=$((i+1)); done; echo all-forked`)
	if st.Code == 0 || !strings.Contains(errOut, "Cannot fork") {
		t.Errorf("fork bomb under pids limit 32: %v, stderr %q; want fork failures", st, errOut)
	}
	if unified() {
		return
	}
	cg := filepath.Join(cgroupRoot, "pids", cgroupParent, in.l.id)
	pidsFile := func(dir, name string) int64 {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatalf("%s of %s: %q", name, dir, b)
		}
		return n
	}
	current := pidsFile(cg, "pids.current")
	if current > 32+pidsReserve {
		t.Errorf("pids.current of the world = %d, want at most 32 + the init's reserve %d", current, pidsReserve)
	}
	// The init's runtime can still start threads: the processes, at their
	// limit, left the world's room for them untouched.
	if room := pidsFile(cg, "pids.max") - current; room < pidsReserve/2 {
		t.Errorf("the world's pids limit leaves the init room for %d more threads with the processes at their limit, want at least %d", room, pidsReserve/2)
	}
	// The shell and its sleepers had exactly the 32 processes the Spec
	// names — none taken by the init's threads. The shell has exited
	// since its fork failed, so 31 sleepers remain besides the init.
	if procs := worldPids(in.l.id); len(procs)-1 != 31 {
		t.Errorf("%d processes besides the init after the shell hit pids limit 32 and exited, want its 31 sleepers", len(procs)-1)
	}
	// The processes were refused in their own group, whose limit is the
	// Spec's plus the init's one forking thread.
	procs := filepath.Join(cg, procsGroup)
	ev, _ := os.ReadFile(filepath.Join(procs, "pids.events"))
	if strings.TrimSpace(string(ev)) == "max 0" || len(ev) == 0 {
		t.Errorf("pids.events of the processes' group = %q: the limit was never hit there", ev)
	}
	if got := pidsFile(procs, "pids.current"); got != 31+1 {
		t.Errorf("pids.current of the processes' group = %d, want the 31 sleepers and the init's forking thread", got)
	}
	// Of the init's threads only the one that forks the processes is in
	// their group.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/cgroup", in.l.cmd.Process.Pid))
	inProcs := 0
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), ":pids:/"+cgroupParent+"/"+in.l.id+"/"+procsGroup+"\n") {
			inProcs++
		}
	}
	if len(tasks) < 2 || inProcs != 1 {
		t.Errorf("%d of the init's %d threads are in the processes' group, want its forking thread alone", inProcs, len(tasks))
	}
	// The tasks file went to the init with the release: dsh keeps none.
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, fd := range fds {
		if l, _ := os.Readlink(fd); strings.HasPrefix(l, procs+"/") {
			t.Errorf("dsh still holds %s as %s", l, fd)
		}
	}
	// The init survived the bomb.
	if err := syscall.Kill(in.l.cmd.Process.Pid, 0); err != nil {
		t.Errorf("the init died under the fork bomb: %v", err)
	}
}

// A dsh killed while its world runs leaves the world's cgroup, and the
// placeholders of the protected paths missing from its workspace: the
// next start removes both (and a workspace holding only what its user
// put there is left as it was).
func TestCrashOfDshLeavesNothingAfterNextStart(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	if unified() {
		t.Skip("this test reads the v1 pids hierarchy")
	}
	state := stateDir(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testExe(t), helperArg, "crash", state, ws)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	id, ok := strings.CutPrefix(strings.TrimSpace(line), "world ")
	if !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q", line)
	}
	var pids []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids = worldPids(id); len(pids) >= 2 {
			break
		}
	}
	if len(pids) < 2 {
		t.Fatalf("world %s holds %v, want the init and a sleeper", id, pids)
	}
	// dsh dies without any chance to clean up.
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !anyAlive(pids) {
			break
		}
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d of the world outlived its dsh", pid)
		}
	}
	// The empty cgroup remains until the next start reaps it.
	removed, err := reap(state, cgroupParent)
	if err != nil {
		t.Errorf("reap: %v", err)
	}
	if len(removed) == 0 {
		t.Errorf("reap found nothing to remove after the crash")
	}
	for _, c := range v1Controllers {
		if _, err := os.Stat(filepath.Join(cgroupRoot, c, cgroupParent, id)); err == nil {
			t.Errorf("cgroup %s/%s/%s survived the next start", c, cgroupParent, id)
		}
	}
	if got := testenv.DirNames(t, ws); !reflect.DeepEqual(got, []string{"notes.txt"}) {
		t.Errorf("the workspace after the next start holds %q, want only the user's notes.txt (no placeholder of the crashed world)", got)
	}
	if got := testenv.DirNames(t, state); len(got) != 0 {
		t.Errorf("the state directory after the next start holds %q, want nothing of the crashed world", got)
	}
}

func anyAlive(pids []int) bool {
	for _, p := range pids {
		if alive(p) {
			return true
		}
	}
	return false
}

// Every thread of the init itself is confined, whichever way it got
// there: execve from one confined thread (cgo linked) or all threads at
// once (no cgo, as dsh is built). Each holds the ids the world's
// processes run as, which are the init's own.
func TestInitThreadsAreConfined(t *testing.T) {
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	spec := sandbox.DefaultSpec(t.TempDir())
	in := openWorld(t, spec)
	out, errOut, st := run(t, in, spec.Env, "sh", "-c", `grep -E '^(Uid|Gid|Groups):' /proc/self/status | tr '\t\n' ' |'; echo
tr '\0' ' ' </proc/1/cmdline; echo
for s in /proc/1/task/*/status; do grep -E '^(Uid|Gid|Groups|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' $s; done | sort | uniq -c`)
	if st.Code != 0 {
		t.Fatalf("%v: %s", st, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	worldIDs := map[string]string{} // Uid: → "0 0 0 0", as the world's shell has them
	for _, l := range strings.Split(lines[0], "|") {
		if f := strings.Fields(l); len(f) > 0 {
			worldIDs[f[0]] = strings.Join(f[1:], " ")
		}
	}
	lines = lines[1:]
	cmdline := lines[0]
	if wantServe := !nsinit.AllThreadsAvailable(); strings.HasSuffix(cmdline, nsinit.StageServe+" ") != wantServe {
		t.Errorf("init command line %q; re-executed stage 2 = %v, want %v", cmdline, !wantServe, wantServe)
	}
	threads := 0
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		n, _ := strconv.Atoi(f[0])
		if threads == 0 {
			threads = n
		}
		if n != threads {
			t.Errorf("only %d of %d threads of the init have %q", n, threads, strings.Join(f[1:], " "))
		}
		switch f[1] {
		case "Uid:", "Gid:", "Groups:":
			if got, want := strings.Join(f[2:], " "), worldIDs[f[1]]; got != want {
				t.Errorf("init thread %s %q, want the world's %q", f[1], got, want)
			}
		case "NoNewPrivs:":
			if f[2] != "1" {
				t.Errorf("init thread: %s", l)
			}
		case "Seccomp:":
			if f[2] != "2" {
				t.Errorf("init thread: %s", l)
			}
		default:
			if f[2] != "0000000000000000" {
				t.Errorf("init thread: %s", l)
			}
		}
	}
	if threads < 2 || len(lines) != 10 || len(worldIDs) != 3 {
		t.Errorf("init threads report:\n%s", out)
	}
}

// A world makes nothing on the host for its root: its mount point is the
// state directory itself, in the init's own mount namespace. While it
// runs the state directory holds only the journal of the placeholders
// it made in its workspace; after it closed, nothing of it.
func TestWorldMakesNothingInTheStateDirectory(t *testing.T) {
	testenv.RequireUserNS(t)
	state := stateDir(t)
	in, err := New(&Options{Executable: initExe(t), StateDir: state}).Open(context.Background(), sandbox.DefaultSpec(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, _, st := run(t, in, nil, "/bin/sh", "-c", "ls -A "+state+"; echo listed"); out != "listed\n" || st.Code != 0 {
		t.Errorf("inside, the state directory lists %q (%v), want it masked and empty", out, st)
	}
	journal := in.(*instance).l.id + sandbox.JournalSuffix
	if got := testenv.DirNames(t, state); !reflect.DeepEqual(got, []string{journal}) {
		t.Errorf("while a world runs the state directory holds %q, want only its placeholders' journal %s", got, journal)
	}
	in.Close()
	if entries, _ := os.ReadDir(state); len(entries) > 0 {
		t.Errorf("after Close the state directory holds %v, want nothing", entries)
	}
}

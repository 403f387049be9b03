package pid1

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

// startPID1 runs the init as PID 1 of a new pid namespace (and a new user
// namespace when not root).
func startPID1(t *testing.T) *initProc {
	sys := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if os.Geteuid() != 0 {
		testenv.RequireUserNS(t)
		sys.Cloneflags |= syscall.CLONE_NEWUSER
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	return startInit(t, sys)
}

func TestPID1IsInitOfItsNamespace(t *testing.T) {
	ip := startPID1(t)
	out, _, st := run(t, ip.client, shell(`echo $PPID`))
	if st.Code != 0 || string(out) != "1\n" {
		t.Fatalf("parent of a process started by the init: %q (%v), want 1", out, st)
	}
}

func TestPID1ReapsOrphans(t *testing.T) {
	ip := startPID1(t)
	initPid := ip.cmd.Process.Pid

	// An orphan that lives: sh exits at once, its background sleep is
	// reparented to the init and keeps stdout open.
	p, err := ip.client.Start(ctx(t), shell(`sleep 1000 & echo $!`))
	if err != nil {
		t.Fatal(err)
	}
	stdout := bufio.NewReader(p.Stdout())
	line, err := stdout.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	nsPid, _ := strconv.Atoi(strings.TrimSpace(line))
	if st, err := p.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("sh: %v, %v", st, err)
	}
	orphan := hostPid(t, initPid, nsPid)
	if got := ppid(orphan); got != initPid {
		t.Fatalf("orphan %d (pid %d inside) has parent %d, want the init %d", orphan, nsPid, got, initPid)
	}
	// It is still in sh's process group, which Signal reaches.
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	if _, err := io.ReadAll(stdout); err != nil {
		t.Errorf("stdout after the orphan died: %v", err)
	}

	// Orphans that exit on their own, and processes that double-fork.
	_, _, st := run(t, ip.client, shell(`for i in 1 2 3 4 5 6 7 8 9 10; do (true &); (sh -c 'true &' &); done`))
	if st != (sandbox.ExitStatus{}) {
		t.Fatalf("orphan factory: %v", st)
	}

	// Without reaping, every one of them would stay a zombie child of the
	// init forever.
	var kids []string
	defer func() {
		if t.Failed() {
			t.Logf("children of the init: %v", kids)
		}
	}()
	eventually(t, "the init to have no children left", func() bool {
		kids = children(initPid)
		return len(kids) == 0
	})
}

// hostPid finds the host pid of the process that has pid nsPid in the
// namespace of init initPid.
func hostPid(t *testing.T, initPid, nsPid int) int {
	t.Helper()
	for _, k := range children(initPid) {
		kid := atoi(k[:strings.IndexByte(k, '(')])
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", kid))
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "NSpid:" && f[2] == strconv.Itoa(nsPid) {
				return kid
			}
		}
	}
	t.Fatalf("no child of the init %d has pid %d in its namespace", initPid, nsPid)
	return 0
}

// children lists the children of pid (all states, zombies included).
func children(pid int) []string {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var kids []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, k := range strings.Fields(string(b)) {
			_, state, _ := procStat(atoi(k))
			kids = append(kids, k+"("+state+")")
		}
	}
	return kids
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// TestInitNotDumpable runs the init as an unprivileged user, as in a
// container: a process it starts (same uid, no capabilities) must not
// reach the init's /proc entries, through which it could reopen the
// control connection.
func TestInitNotDumpable(t *testing.T) {
	testenv.RequireRoot(t)
	// t.TempDir's parent is private to root; this one must be reachable.
	dir, err := os.MkdirTemp("", "dsh-pid1-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "init.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	ip := startInitCmd(t, func(cmd *exec.Cmd) {
		cmd.Path = exe
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	})
	for _, tc := range []struct {
		script string
		code   int
	}{
		{`test "$(id -u)" = 65534 && cat /proc/$$/environ >/dev/null`, 0}, // its own: readable
		{`cat /proc/$PPID/environ`, 1},                                    // the init's: not
		{`ls /proc/$PPID/fd`, 2},
		{`echo x >/proc/$PPID/fd/1`, 2},
	} {
		_, errb, st := run(t, ip.client, shell(tc.script))
		if st.Code != tc.code {
			t.Errorf("%s: %v, want exit %d (stderr %q)", tc.script, st, tc.code, errb)
		}
	}
}

// TestPID1CleanSignalState: as PID 1, where the init absorbs signals by
// their default action rather than a handler, its children still start
// with no signal ignored or blocked (TestCleanSignalState outside).
func TestPID1CleanSignalState(t *testing.T) {
	ip := startPID1(t)
	out, _, st := run(t, ip.client, shell(`grep -E '^Sig(Ign|Blk):' /proc/self/status`))
	want := "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
	if st.Code != 0 || string(out) != want {
		t.Errorf("signal state of a child of the init as PID 1:\n%s(%v)\nwant\n%s", out, st, want)
	}
}

package pid1

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// worldSignals are what a process of the world sends its init in the
// tests: the signals that end, stop or crash a Go program by default,
// and the two the kernel keeps from an init's own namespace.
var worldSignals = []syscall.Signal{
	syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGABRT,
	syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGILL, syscall.SIGFPE, syscall.SIGTRAP,
	syscall.SIGSYS, syscall.SIGSTKFLT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM,
	syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, 32, 33, 34, 40, 64,
	syscall.SIGKILL, syscall.SIGSTOP,
}

// signalInitHelper (helper "siginit INITHOSTPID") signals PID 1 of its pid
// namespace and each of its threads with every one of worldSignals, then
// exits 42. It refuses (exit 3) unless it runs in a nested pid namespace
// whose PID 1 is the init: the host's PID 1 must never be signalled.
func signalInitHelper(args []string) int {
	hostPid, _ := strconv.Atoi(args[0])
	if os.Getppid() != 1 || !nestedPidNS() {
		fmt.Fprintln(os.Stderr, "siginit: not in a pid namespace of the init's own; refusing")
		return 3
	}
	for _, sig := range worldSignals {
		if err := unix.Kill(1, sig); err != nil {
			fmt.Fprintf(os.Stderr, "kill(1, %v): %v\n", sig, err)
			return 4
		}
	}
	// The init's threads, by their pids inside (the host's /proc is
	// mounted here, so the init is found by its host pid).
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", hostPid))
	n := 0
	for _, task := range tasks {
		tid := nsPid(fmt.Sprintf("/proc/%d/task/%s/status", hostPid, task.Name()))
		if tid == 0 {
			continue
		}
		for _, sig := range worldSignals {
			if err := unix.Tgkill(1, tid, sig); err == nil {
				n++
			}
		}
	}
	if n == 0 {
		fmt.Fprintln(os.Stderr, "siginit: signalled no thread of the init")
		return 5
	}
	time.Sleep(300 * time.Millisecond) // delivery is asynchronous
	return 42
}

// nestedPidNS reports whether this process is in a child pid namespace.
func nestedPidNS() bool {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "NSpid:" {
			return len(f) > 2
		}
	}
	return false
}

// nsPid returns the innermost pid in a /proc status file, or 0.
func nsPid(statusFile string) int {
	b, _ := os.ReadFile(statusFile)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "NSpid:" {
			return atoi(f[len(f)-1])
		}
	}
	return 0
}

// TestPID1IgnoresSignalsFromItsNamespace: a process signals the init (and
// each of its threads) with everything it can send; its own exit status
// still arrives, and the init serves on.
func TestPID1IgnoresSignalsFromItsNamespace(t *testing.T) {
	ip := startPID1(t)
	_, errb, st := run(t, ip.client, helper("siginit", strconv.Itoa(ip.cmd.Process.Pid)))
	if st.Code != 42 {
		t.Fatalf("signalling the init from inside: %v (stderr %q), want exit 42", st, errb)
	}
	if _, _, st := run(t, ip.client, helper("exit", "7")); st.Code != 7 {
		t.Errorf("after the signals: %v, want exit 7", st)
	}
}

// TestInitOutsidePidNSIgnoresNonStopSignals: outside a pid namespace only
// SIGTERM, SIGINT and SIGHUP stop the init (TestInitSIGTERMKillsEverything);
// signals that would crash a Go program by default do nothing. (Job
// control signals stop it, as SIGSTOP would anyway: outside a pid
// namespace of its own, the init protects nothing from its processes.)
func TestInitOutsidePidNSIgnoresNonStopSignals(t *testing.T) {
	ip := startInit(t, nil)
	// Once it serves, the init has its handlers (before, the runtime's
	// defaults apply — but no process of the world exists yet).
	if _, _, st := run(t, ip.client, helper("exit", "0")); st.Code != 0 {
		t.Fatalf("first command: %v", st)
	}
	for _, sig := range []syscall.Signal{syscall.SIGQUIT, syscall.SIGABRT, syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGTRAP, syscall.SIGSYS, syscall.SIGUSR1} {
		if err := ip.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if _, _, st := run(t, ip.client, helper("exit", "7")); st.Code != 7 {
		t.Errorf("after the signals: %v, want exit 7", st)
	}
}

// TestChildrenRankAboveTheInitForOOM: the processes the init starts begin
// at its oom_score_adj + 1000 (at most 1000), and the init keeps its own;
// with the init lowered to -1000 (a privileged write, whose lower limit
// every fork would keep), they begin at 0.
func TestChildrenRankAboveTheInitForOOM(t *testing.T) {
	ip := startInit(t, nil)
	own := fmt.Sprintf("/proc/%d/oom_score_adj", ip.cmd.Process.Pid)
	score := func() int {
		b, _ := os.ReadFile(own)
		return atoi(strings.TrimSpace(string(b)))
	}
	check := func(t *testing.T, initScore int) {
		t.Helper()
		want := fmt.Sprintf("%d\n", min(initScore+1000, 1000))
		for range 3 {
			out, _, st := run(t, ip.client, shell(`cat /proc/self/oom_score_adj`))
			if st.Code != 0 || string(out) != want {
				t.Errorf("oom_score_adj of a process of an init at %d: %q (%v), want %q", initScore, out, st, want)
			}
		}
		if got := score(); got != initScore {
			t.Errorf("oom_score_adj of the init after starting processes: %d, want %d", got, initScore)
		}
	}
	check(t, score())
	t.Run("InitLowered", func(t *testing.T) {
		if err := os.WriteFile(own, []byte("-1000"), 0); err != nil {
			t.Skipf("lowering the init's oom_score_adj needs CAP_SYS_RESOURCE: %v", err)
		}
		check(t, -1000)
	})
}

package pid1

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestServeInProcess runs Serve inside the test process over two
// unidirectional pipes joined with JoinConn. The test process is neither
// PID 1 nor a subreaper, so Serve waits for its own children only.
func TestServeInProcess(t *testing.T) {
	toInit, fromClient, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	toClient, fromInit, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- Serve(JoinConn(toInit, fromInit), nil) }()
	c, err := NewClient(JoinConn(toClient, fromClient))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	out, _, st := run(t, c, helper("emit", "3", "100000", "10"))
	if st.Code != 0 || len(out) != 100000 {
		t.Fatalf("emit: %v, %d bytes", st, len(out))
	}

	p, gpid := startReportingPid(t, c, shell(`sleep 1000 & echo $!; exec sleep 1000`))
	start, _, _ := procStat(gpid)
	leader := p.(interface{ Pid() int }).Pid()
	leaderStart, _, _ := procStat(leader)

	c.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after the client closed: %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after the client closed")
	}
	// Serve reaped its direct child before returning; the grandchild was
	// in its process group and got the same SIGKILL (its zombie belongs
	// to whoever adopted it, not to us).
	if procAlive(leader, leaderStart) {
		t.Errorf("the process %d survived Close", leader)
	}
	eventually(t, "the grandchild to die", func() bool { return !procAlive(gpid, start) })
	var ws syscall.WaitStatus
	if pid, err := syscall.Wait4(leader, &ws, syscall.WNOHANG, nil); err != syscall.ECHILD {
		t.Errorf("wait4(%d) after Serve = %d, %v: Serve left its child unreaped", leader, pid, err)
	}
}

package initspawn

import (
	"syscall"
	"testing"
)

// The init's descriptors come in the order nsinit reads them (FDSync,
// FDReady, FDExe, FDBroker, FDStdio after 0-2), each of the kind it
// takes: the sync and stdio sockets keep message boundaries, the
// broker's is a stream; an init that does not serve has no stdio and no
// session.
func TestChannels(t *testing.T) {
	c, err := NewChannels(true)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer c.CloseChild()
	files := c.ExtraFiles(nil)
	if len(files) != FDStdio-FDSync+1 {
		t.Fatalf("%d extra files, want %d", len(files), FDStdio-FDSync+1)
	}
	for fd, want := range map[int]int{FDSync: syscall.SOCK_SEQPACKET, FDBroker: syscall.SOCK_STREAM, FDStdio: syscall.SOCK_SEQPACKET} {
		got, err := syscall.GetsockoptInt(int(files[fd-FDSync].Fd()), syscall.SOL_SOCKET, syscall.SO_TYPE)
		if err != nil || got != want {
			t.Errorf("descriptor %d: socket type %d, %v; want %d", fd, got, err, want)
		}
	}
	if files[FDExe-FDSync] != nil {
		t.Error("FDExe is not the binary given")
	}
	// The session: what dsh writes on CtlW the init reads on its stdin.
	stdin, stdout := c.Session()
	if _, err := c.CtlW.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if b := make([]byte, 1); func() bool { n, _ := stdin.Read(b); return n != 1 || b[0] != 'x' }() {
		t.Error("the session's stdin does not carry what dsh writes")
	}
	if _, err := stdout.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if b := make([]byte, 1); func() bool { n, _ := c.CtlR.Read(b); return n != 1 || b[0] != 'y' }() {
		t.Error("dsh does not read the session's stdout")
	}
	e, err := NewChannels(false)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer e.CloseChild()
	if len(e.ExtraFiles(nil)) != FDBroker-FDSync+1 || e.Stdio != nil || e.CtlW != nil || e.CtlR != nil {
		t.Errorf("an init that does not serve: %d extra files, stdio %v, session %v %v", len(e.ExtraFiles(nil)), e.Stdio, e.CtlW, e.CtlR)
	}
}

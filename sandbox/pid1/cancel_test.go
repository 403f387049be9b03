package pid1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/hashicorp/yamux"
)

// TestStartCancelWhileWaiting uses a peer that reads the start request
// and never answers: cancelling ctx must end Start, and close the control
// stream so that a real init would kill the process it may have started.
func TestStartCancelWhileWaiting(t *testing.T) {
	a, b := net.Pipe()
	sess, err := yamux.Server(b, sessionConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	gotRequest := make(chan struct{})
	ctlClosed := make(chan struct{})
	go func() {
		for {
			st, err := sess.AcceptStream()
			if err != nil {
				return
			}
			go func() {
				hdr := make([]byte, headerSize)
				if _, err := io.ReadFull(st, hdr); err != nil || hdr[0] != kindControl {
					return
				}
				var m message
				if readMessage(bufio.NewReader(st), maxRequestLine, &m) != nil || m.Start == nil {
					return
				}
				close(gotRequest)
				io.Copy(io.Discard, st) // until the client closes the stream
				close(ctlClosed)
			}()
		}
	}()

	c, err := NewClient(a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-gotRequest
		cancel()
	}()
	if _, err := c.Start(cctx, shell("true")); !errors.Is(err, context.Canceled) {
		t.Errorf("Start cancelled while waiting for the init: %v, want context.Canceled", err)
	}
	<-ctlClosed
}

// TestAbandonedControlKillsProcess: when the client closes a process's
// control stream early (what a cancelled Start does), the init kills the
// process group.
func TestAbandonedControlKillsProcess(t *testing.T) {
	ip := startInit(t, nil)
	p, err := ip.client.Start(ctx(t), shell("exec sleep 1000"))
	if err != nil {
		t.Fatal(err)
	}
	p.(*process).ctl.Close()
	st, err := p.Wait()
	if err != nil || st.Signal != syscall.SIGKILL {
		t.Errorf("Wait after abandoning the control stream: %v, %v; want killed by SIGKILL", st, err)
	}
}

// TestClientRefusesInitStreams: an init (the untrusted side) that opens
// streams towards the client, with raw frames as a subverted init would
// send them, gets them refused and its data discarded, rather than making
// dsh buffer a window per stream.
func TestClientRefusesInitStreams(t *testing.T) {
	a, b := net.Pipe()
	c, err := NewClient(a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The client's first frame is its GoAway; once it is on the wire, the
	// session refuses streams.
	hdr := make([]byte, 12)
	if _, err := io.ReadFull(b, hdr); err != nil || hdr[1] != 3 {
		t.Fatalf("first frame from the client: % x, %v; want a GoAway (type 3)", hdr, err)
	}
	go io.Copy(io.Discard, b) // the client's resets
	body := make([]byte, 64<<10)
	for id := uint32(2); id < 200; id += 2 {
		// yamux header: version 0, type data, flags SYN, stream id, length.
		hdr := []byte{0, 0, 0, 1, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id), 0, 1, 0, 0}
		if _, err := b.Write(append(hdr, body...)); err != nil {
			t.Fatal(err)
		}
	}
	// net.Pipe is synchronous: the client has consumed every frame.
	if n := c.sess.NumStreams(); n != 0 {
		t.Errorf("client holds %d streams the init opened, want 0", n)
	}
}

// TestNewClientDoesNotBlock: NewClient returns even when the peer does not
// read yet (a container still starting, a full pipe).
func TestNewClientDoesNotBlock(t *testing.T) {
	a, b := net.Pipe() // nobody reads b
	defer b.Close()
	c, err := NewClient(a)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

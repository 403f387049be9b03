package proxy

import (
	"net"
	"testing"
	"time"
)

// The tunnel's idle check reads the kernel's per-socket timestamps; this
// pins down that they measure silence in both directions.
func TestSocketIdleMeasuresSilenceBothWays(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()

	const quiet = 300 * time.Millisecond
	time.Sleep(quiet)
	silent, ok := socketIdle(c)
	if !ok {
		t.Fatal("socketIdle: TCP_INFO unavailable on a TCP socket")
	}
	// Jiffy resolution can shave a few milliseconds off, never more.
	if silent < quiet-20*time.Millisecond {
		t.Errorf("after %v of silence socketIdle = %v", quiet, silent)
	}

	// Received data resets the clock...
	peer.Write([]byte("x"))
	buf := make([]byte, 1)
	c.Read(buf)
	if got, _ := socketIdle(c); got >= silent {
		t.Errorf("after receiving a byte socketIdle = %v, want less than the %v before", got, silent)
	}
	time.Sleep(quiet)
	silent, _ = socketIdle(c)
	// ...and so does sent data.
	c.Write([]byte("y"))
	peer.Read(buf)
	if got, _ := socketIdle(c); got >= silent {
		t.Errorf("after sending a byte socketIdle = %v, want less than the %v before", got, silent)
	}
}

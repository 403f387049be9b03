package sandbox

import (
	"bufio"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

// echoServer answers each connection's first line, prefixed "echo:".
type echoServer struct{}

func (echoServer) Serve(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			line, _ := bufio.NewReader(c).ReadString('\n')
			io.WriteString(c, "echo:"+line)
		}()
	}
}

func brokerPair(t *testing.T) (host, init *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "broker")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

// Streams handed out one after another each reach the server, and the
// broker returns once the init's end closes.
func TestServeEgressHandsOutStreams(t *testing.T) {
	host, init := brokerPair(t)
	done := make(chan error, 1)
	go func() { done <- ServeEgress(host, echoServer{}) }()
	for _, msg := range []string{"one\n", "two\n", "three\n"} {
		c, err := ReceiveEgressStream(init)
		if err != nil {
			t.Fatalf("ReceiveEgressStream: %v", err)
		}
		io.WriteString(c, msg)
		got, _ := io.ReadAll(c)
		c.Close()
		if string(got) != "echo:"+msg {
			t.Errorf("through stream: %q, want %q", got, "echo:"+msg)
		}
	}
	init.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeEgress after the init closed: %v, want nil", err)
	}
}

// A byte that is not a request is a broken init: the broker stops.
func TestServeEgressRejectsGarbage(t *testing.T) {
	host, init := brokerPair(t)
	defer init.Close()
	done := make(chan error, 1)
	go func() { done <- ServeEgress(host, echoServer{}) }()
	init.Write([]byte("x"))
	if err := <-done; err == nil {
		t.Error("ServeEgress accepted an unknown request byte")
	}
	if _, err := ReceiveEgressStream(init); err == nil {
		t.Error("a stream arrived after the broker stopped")
	}
}

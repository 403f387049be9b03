package docker

import (
	"bufio"
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestForwardJoinsTCPToUnixSocket: bytes go both ways, and a half-close
// from the client reaches the server behind the socket.
func TestForwardJoinsTCPToUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c) // until the client's half-close
				c.Write([]byte("got " + string(b)))
			}()
		}
	}()
	// Find a free loopback port for the forwarder.
	probe, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := probe.Addr().String()
	probe.Close()

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, addr, sock, pw) }()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	if strings.TrimSpace(line) != forwardReady {
		t.Fatalf("forwarder said %q, want %q", line, forwardReady)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("hello"))
	c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(c)
	c.Close()
	if string(b) != "got hello" {
		t.Errorf("through the forwarder: %q, want %q", b, "got hello")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Forward after cancel = %v, want nil", err)
	}
}

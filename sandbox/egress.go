package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// A world's egress, from the host's side.
//
// The world's init holds one end of a connected unix socket, the broker
// connection; dsh holds the other. The init never opens a unix socket of
// its own: for each connection a process of the world makes to the
// in-world proxy address, it sends one byte on the broker connection and
// receives one end of a fresh socket pair (SCM_RIGHTS), whose other end
// the world's EgressServer serves. So nothing on the host's file system
// leads to a world's proxy, a world cannot reach another world's proxy,
// and a world's processes need no unix sockets at all (the init's filter
// refuses them; see package pid1).

// EgressRequest is the byte the init sends to ask for a stream.
const EgressRequest = 'c'

// ServeEgress serves the broker connection conn for srv until conn
// closes or fails; then it closes conn and the listener srv serves, and
// returns nil for a connection the init closed. Streams already handed
// out stay open until their ends close.
func ServeEgress(conn *net.UnixConn, srv EgressServer) error {
	defer conn.Close()
	l := newStreamListener(conn.LocalAddr())
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(l)
	}()
	defer func() {
		l.Close()
		<-served
	}()
	buf := make([]byte, 64)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) {
				return nil
			}
			return fmt.Errorf("egress broker: %w", err)
		}
		for _, b := range buf[:n] {
			if b != EgressRequest {
				return fmt.Errorf("egress broker: unexpected byte %#x from the world's init", b)
			}
			if err := handOut(conn, l); err != nil {
				return err
			}
		}
	}
}

// handOut makes one socket pair, queues one end for the proxy and sends
// the other to the init.
func handOut(conn *net.UnixConn, l *streamListener) error {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		// Out of descriptors: refuse this stream (the init sees a reply
		// without one), keep the broker.
		return SendFDs(conn, []byte{0})
	}
	ours := os.NewFile(uintptr(fds[0]), "egress-stream")
	c, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		syscall.Close(fds[1])
		return fmt.Errorf("egress broker: %w", err)
	}
	err = SendFDs(conn, []byte{1}, fds[1])
	syscall.Close(fds[1])
	if err != nil {
		c.Close()
		return fmt.Errorf("egress broker: sending a stream: %w", err)
	}
	if !l.deliver(c) {
		c.Close()
	}
	return nil
}

// ReceiveEgressStream asks the broker on conn for one stream and returns
// it. Calls must not overlap on one conn (the init serialises them).
func ReceiveEgressStream(conn *net.UnixConn) (net.Conn, error) {
	if _, err := conn.Write([]byte{EgressRequest}); err != nil {
		return nil, fmt.Errorf("asking the egress broker for a stream: %w", err)
	}
	var b [1]byte
	n, fds, err := ReceiveFDs(conn, b[:], 1)
	if err != nil {
		return nil, fmt.Errorf("reading from the egress broker: %w", err)
	}
	if n != 1 {
		CloseFDs(fds)
		return nil, errors.New("the egress broker closed the connection")
	}
	if b[0] != 1 || len(fds) != 1 {
		CloseFDs(fds)
		return nil, errors.New("the egress broker sent no stream")
	}
	f := os.NewFile(uintptr(fds[0]), "egress-stream")
	defer f.Close()
	return net.FileConn(f)
}

// streamListener is the net.Listener an EgressServer serves: Accept
// returns the streams the broker hands out.
type streamListener struct {
	addr  net.Addr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newStreamListener(addr net.Addr) *streamListener {
	return &streamListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// deliver hands c to Accept; false once the listener is closed.
func (l *streamListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *streamListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *streamListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *streamListener) Addr() net.Addr { return l.addr }

// ProxyAddr is the address inside every confining world where its init
// relays connections to the world's egress proxy, on the world's own
// loopback. The drivers make the init listen there; execworld points the
// proxy variables of every process at it.
const ProxyAddr = "127.0.0.1:3128"

// ProxyAddresser is implemented by an Instance whose processes reach the
// egress proxy elsewhere than ProxyAddr: the host driver, whose "inside"
// is the host's own loopback, where a fixed port may be taken.
type ProxyAddresser interface {
	ProxyAddr() string
}

package pid1

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"

	"github.com/dsh-dev/dsh/sandbox"
)

// relay is the world's way out, for every driver: it listens on the
// world's loopback (the one in-world proxy address) and joins each
// connection to a new stream from the egress broker (sandbox.ServeEgress
// on the host's side). It adds and decides nothing: the proxy behind the
// stream applies the world's policy.
type relay struct {
	l   net.Listener
	log *slog.Logger
	// mu serialises requests on broker: each is one byte out and one
	// stream back.
	mu     sync.Mutex
	broker *net.UnixConn
}

// startRelay listens on addr and serves until the listener fails.
func startRelay(addr string, broker *net.UnixConn, log *slog.Logger) error {
	l, err := listenTCP(addr)
	if err != nil {
		return err
	}
	r := &relay{l: l, log: log, broker: broker}
	go r.serve()
	return nil
}

// listenTCP listens on addr, an IP address and port, as net.Listen does
// (SO_REUSEADDR, an IPv6 address for IPv6 alone), but without the probe
// of the machine's IP stacks net makes before its first listen: several
// sockets and binds, 0.4 ms of a world's start on a small VM.
func listenTCP(addr string) (net.Listener, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %q: %w", addr, err)
	}
	family, ip, port := syscall.AF_INET, ap.Addr().Unmap(), int(ap.Port())
	var sa syscall.Sockaddr
	if ip.Is4() {
		sa = &syscall.SockaddrInet4{Port: port, Addr: ip.As4()}
	} else {
		family = syscall.AF_INET6
		sa = &syscall.SockaddrInet6{Port: port, Addr: ip.As16()}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	f := os.NewFile(uintptr(fd), "relay")
	defer f.Close() // FileListener holds a duplicate
	if family == syscall.AF_INET6 {
		err = syscall.SetsockoptInt(fd, syscall.IPPROTO_IPV6, syscall.IPV6_V6ONLY, 1)
	}
	if err == nil {
		err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	}
	if err == nil {
		err = syscall.Bind(fd, sa)
	}
	if err == nil {
		// The kernel caps the backlog at net.core.somaxconn.
		err = syscall.Listen(fd, 1<<16-1)
	}
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return net.FileListener(f)
}

func (r *relay) serve() {
	for {
		c, err := r.l.Accept()
		if err != nil {
			r.log.Warn("egress relay stopped", "err", err)
			return
		}
		go r.join(c)
	}
}

func (r *relay) join(c net.Conn) {
	defer c.Close()
	r.mu.Lock()
	up, err := sandbox.ReceiveEgressStream(r.broker)
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("egress relay", "err", err)
		return // the client sees the connection close
	}
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		// Half-close, so request/response protocols see EOF in order.
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go pipe(up, c)
	go pipe(c, up)
	wg.Wait()
}

package native

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// loopbackUp brings lo up in the sandbox's network namespace (it starts
// down). No other interface exists, so nothing but loopback is routable.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: reading flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: bringing lo up: %w", err)
	}
	return nil
}

// proxyEnv returns the environment entries that point HTTP clients at the
// forwarder inside the sandbox.
func proxyEnv(port int) []string {
	u := "http://127.0.0.1:" + strconv.Itoa(port)
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u}
}

// forwarder relays every TCP connection accepted on l to a new
// connection to the unix socket at path (the world's egress proxy). It
// adds nothing and decides nothing: the proxy applies the policy.
type forwarder struct {
	l    net.Listener
	path string
	wg   sync.WaitGroup
}

func (f *forwarder) serve() {
	for {
		c, err := f.l.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.relay(c)
		}()
	}
}

func (f *forwarder) relay(c net.Conn) {
	defer c.Close()
	u, err := net.Dial("unix", f.path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dsh init: egress forwarder: %v\n", err)
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Half-close so request/response protocols see EOF in order.
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	<-done
}

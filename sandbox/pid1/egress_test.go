package pid1

import (
	"net"
	"strings"
	"testing"
)

// TestListenTCP: the relay's listener takes connections on an IPv4 and
// an IPv6 loopback address, as net.Listen's would, and refuses an
// address that is not an IP address and port.
func TestListenTCP(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "[::ffff:127.0.0.1]:0"} {
		l, err := listenTCP(addr)
		if err != nil {
			if strings.HasPrefix(addr, "[::1]") && strings.Contains(err.Error(), "cannot assign") {
				t.Logf("%s: no IPv6 loopback here: %v", addr, err)
				continue
			}
			t.Fatalf("listenTCP(%s): %v", addr, err)
		}
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatalf("dialling %s: %v", l.Addr(), err)
		}
		s, err := l.Accept()
		if err != nil {
			t.Fatalf("accepting on %s: %v", l.Addr(), err)
		}
		if s.RemoteAddr().String() != c.LocalAddr().String() {
			t.Errorf("%s: accepted %s, dialled from %s", addr, s.RemoteAddr(), c.LocalAddr())
		}
		s.Close()
		c.Close()
		l.Close()
	}
	if _, err := listenTCP("localhost:3128"); err == nil || !strings.Contains(err.Error(), `"localhost:3128"`) {
		t.Errorf("listenTCP(localhost:3128) = %v, want an error naming the address", err)
	}
}

package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/sandbox"
)

// rawInit is an initClient that only keeps the connection, so transport
// tests can run any PID 1 (cat, a shell script) instead of dsh's init.
type rawInit struct{ conn io.ReadWriteCloser }

func (r *rawInit) Start(context.Context, sandbox.ProcessSpec) (sandbox.Process, error) {
	return nil, errors.New("raw transport")
}
func (r *rawInit) Close() error { return r.conn.Close() }

func rawDriver(t *testing.T, entry ...string) *Driver {
	t.Helper()
	d, err := New(&Options{InitPath: "/bin/true", entrypoint: entry,
		dial: func(_ context.Context, c io.ReadWriteCloser) (initClient, error) { return &rawInit{c}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestAttachStreamRoundTrip proves the attach stream is a clean byte pipe:
// what is written reaches PID 1's stdin, PID 1's stdout comes back without
// docker's multiplexing headers, and stderr stays out of it.
func TestAttachStreamRoundTrip(t *testing.T) {
	cli := newClient(t)
	requireImage(t, cli, fixtureImage)
	d := rawDriver(t, "sh", "-c", "echo to-stderr >&2; exec cat")
	spec := sandbox.DefaultSpec(workspace(t))
	spec.Image = fixtureImage
	inst, err := d.Open(deadline(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	w := inst.(*world)
	cleanupWorld(t, cli, w)
	conn := w.init.(*rawInit).conn
	// Binary data larger than one docker frame, with bytes that look like
	// frame headers.
	msg := make([]byte, 100<<10)
	for i := range msg {
		msg[i] = byte(i % 251)
	}
	go func() { conn.Write(msg) }()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("reading echo: %v", err)
	}
	if string(got) != string(msg) {
		t.Fatal("echoed bytes differ from the bytes written")
	}
	if s := w.conn.Stderr(); s != "to-stderr\n" {
		t.Errorf("init stderr = %q, want %q", s, "to-stderr\n")
	}
}

// TestCloseKillsWorldWhenConnectionEnds: closing dsh's side of the attach
// stream is enough to end the world (what happens when dsh crashes).
func TestConnectionEndStopsWorld(t *testing.T) {
	cli := newClient(t)
	requireImage(t, cli, fixtureImage)
	d := rawDriver(t, "cat")
	spec := sandbox.DefaultSpec(workspace(t))
	spec.Image = fixtureImage
	inst, err := d.Open(deadline(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	w := inst.(*world)
	cleanupWorld(t, cli, w)
	w.conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		_, err := cli.ContainerInspect(ctx, w.containerID)
		if err != nil && strings.Contains(err.Error(), "No such container") {
			return // auto-removed after the init saw EOF
		}
		if ctx.Err() != nil {
			t.Fatal("container still exists 30s after its connection closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type stubEgress struct{ conns chan net.Addr }

func (s *stubEgress) Serve(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		s.conns <- c.RemoteAddr()
		fmt.Fprintln(c, "proxy-hello")
		c.Close()
	}
}

// TestEgressNetworkReachesOnlyTheProxy: from inside a world, the proxy
// port on the gateway answers; another listener on the same gateway
// address and one on the docker bridge (both started by this test) are
// refused; and there is no resolver.
func TestEgressNetworkReachesOnlyTheProxy(t *testing.T) {
	cli := newClient(t)
	requireImage(t, cli, fixtureImage)
	// A listener on every host address: the world must not reach it on
	// its gateway nor on docker0.
	other, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	leaked := make(chan net.Addr, 4)
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			leaked <- c.RemoteAddr()
			c.Close()
		}
	}()
	port := other.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`p=${HTTP_PROXY#http://}; gw=${p%%:*}
echo "proxy: $(nc -w 3 $gw ${p##*:} </dev/null)"
nc -w 3 $gw %[1]d </dev/null; echo "gateway-other-port: $?"
nc -w 3 172.17.0.1 %[1]d </dev/null; echo "docker0: $?"
echo "nameservers: $(grep -c ^nameserver /etc/resolv.conf)"
exec cat`, port)
	d := rawDriver(t, "sh", "-c", script)
	spec := sandbox.DefaultSpec(workspace(t))
	spec.Image = fixtureImage
	egress := &stubEgress{conns: make(chan net.Addr, 4)}
	spec.Egress = egress
	inst, err := d.Open(deadline(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	w := inst.(*world)
	cleanupWorld(t, cli, w)
	r := bufio.NewReader(w.init.(*rawInit).conn)
	want := []string{"proxy: proxy-hello", "gateway-other-port: 1", "docker0: 1", "nameservers: 0"}
	for _, wl := range want {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading world output: %v (init stderr: %s)", err, w.conn.Stderr())
		}
		if got := strings.TrimSpace(line); got != wl {
			t.Errorf("world said %q, want %q", got, wl)
		}
	}
	select {
	case a := <-leaked:
		t.Errorf("host listener accepted a connection from %v", a)
	default:
	}
	select {
	case a := <-egress.conns:
		if !strings.HasPrefix(a.String(), "172.") && !strings.HasPrefix(a.String(), "192.168.") {
			t.Logf("proxy connection came from %v", a)
		}
	default:
		t.Error("the egress server saw no connection")
	}
}

package docker

import (
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
	w := openFixtureWorld(t, cli, d)
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
	w := openFixtureWorld(t, cli, d)
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

// stubEgress answers every connection with one line.
type stubEgress struct{ conns chan net.Addr }

func (s *stubEgress) Serve(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		select {
		case s.conns <- c.RemoteAddr():
		default:
		}
		fmt.Fprintln(c, "proxy-hello")
		c.Close()
	}
}

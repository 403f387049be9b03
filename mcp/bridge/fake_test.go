package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeUpstream runs a go-sdk server per Start over in-memory transports
// and records how many connections are live at once.
type fakeUpstream struct {
	// build makes the server of start n (0-based).
	build func(n int) *mcp.Server
	// fail, if set, makes start n fail with its result.
	fail func(n int) error

	mu      sync.Mutex // guards the fields below
	starts  int
	live    int
	maxLive int
	pipes   []net.Conn // the server ends
}

func (f *fakeUpstream) Start(ctx context.Context) (*Link, error) {
	f.mu.Lock()
	n := f.starts
	f.starts++
	f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(n); err != nil {
			return nil, err
		}
	}
	// A pipe of its own rather than NewInMemoryTransports: kill closes
	// the server's end abruptly, as a crash does.
	c1, c2 := net.Pipe()
	ss, err := f.build(n).Connect(ctx, &mcp.IOTransport{Reader: c2, Writer: c2}, nil)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.live++
	f.maxLive = max(f.maxLive, f.live)
	f.pipes = append(f.pipes, c2)
	f.mu.Unlock()
	var once sync.Once
	return &Link{
		Transport: &mcp.IOTransport{Reader: c1, Writer: c1},
		Stop: func(context.Context) error {
			once.Do(func() {
				c2.Close()
				f.mu.Lock()
				f.live--
				f.mu.Unlock()
				go ss.Close()
			})
			return nil
		},
		Diagnose: func() string { return "stderr: fake server " + string(rune('0'+n%10)) },
	}, nil
}

// kill ends the newest connection from the server's side, as a crash
// does.
func (f *fakeUpstream) kill() {
	f.mu.Lock()
	c := f.pipes[len(f.pipes)-1]
	f.mu.Unlock()
	c.Close()
}

func (f *fakeUpstream) counts() (starts, live, maxLive int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts, f.live, f.maxLive
}

// echoServer has the tools named, each answering "<name>: <args JSON>".
func echoServer(opts *mcp.ServerOptions, names ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, opts)
	for _, n := range names {
		addEcho(s, n)
	}
	return s
}

func addEcho(s *mcp.Server, name string) {
	s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Params.Name + ": " + string(req.Params.Arguments)}}}, nil
		})
}

// fast is a reconnect budget for tests.
var fast = Reconnect{InitialDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxAttempts: 3}

// start makes and starts a Bridge, closed (and checked for live
// connections) when the test ends.
func start(t *testing.T, servers ...Server) *Bridge {
	t.Helper()
	for i := range servers {
		if servers[i].StartupTimeout == 0 {
			servers[i].StartupTimeout = 5 * time.Second
		}
	}
	b, err := New(servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, s := range servers {
			if f, ok := s.Upstream.(*fakeUpstream); ok {
				if _, live, maxLive := f.counts(); live != 0 || maxLive > 1 {
					t.Errorf("server %s: %d connection(s) live after Close, at most %d at once (want 0 and 1)", s.Name, live, maxLive)
				}
			}
		}
	})
	if err := b.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return b
}

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func publicNames(b *Bridge) []string {
	var out []string
	for _, t := range b.Tools() {
		out = append(out, t.Public)
	}
	return out
}

func state(b *Bridge, name string) (string, string) {
	for _, s := range b.Status() {
		if s.Name == name {
			return s.State, s.Reason
		}
	}
	return "", ""
}

func call(t *testing.T, b *Bridge, public, args string) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return b.Call(ctx, public, json.RawMessage(args), nil)
}

var errBoom = errors.New("boom: no such program")

// The fake speaks the pinned stdio version: under 2026-07-28 the
// go-sdk server's Close waits for the client's subscriptions/listen,
// which a crash test cannot end.
func (f *fakeUpstream) protocolVersion() string { return PinnedProtocolVersion }

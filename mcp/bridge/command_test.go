package bridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
)

// serverEnv makes the test binary a stdio MCP server (TestMain).
const serverEnv = "DSH_BRIDGE_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		runTestServer()
		return
	}
	os.Exit(m.Run())
}

// runTestServer is a go-sdk server over stdio with tools that echo,
// report their environment, crash, and flood stderr.
func runTestServer() {
	s := mcp.NewServer(&mcp.Implementation{Name: "bridge-test", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	obj := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(string(r.Params.Arguments)), nil
	})
	s.AddTool(&mcp.Tool{Name: "getenv", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(os.Getenv("SECRET")), nil
	})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "fatal: the test server is dying on purpose")
		os.Exit(3)
		return nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "flood", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// More than a pipe holds: a server whose stderr is not drained
		// blocks here.
		line := strings.Repeat("x", 1023) + "\n"
		for range 256 {
			os.Stderr.WriteString(line)
		}
		os.Stderr.WriteString("flood done\n")
		return text("flooded"), nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		os.Exit(1)
	}
}

// testCommand is the test binary as a stdio server in a fake world.
func testCommand(t testing.TB, env ...string) (*Command, *execworldtest.Backend) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w, backend := execworldtest.NewWorld(t, nil)
	return &Command{
		World: func(context.Context) (*execworld.World, error) { return w, nil },
		Argv:  []string{exe},
		Env:   append([]string{serverEnv + "=1"}, env...),
		Grace: 500 * time.Millisecond,
	}, backend
}

func TestCommandServerInAWorld(t *testing.T) {
	cmd, backend := testCommand(t, "SECRET=s3cr3t")
	b := start(t, Server{Name: "t", Upstream: cmd, Reconnect: Reconnect{InitialDelay: 10 * time.Millisecond, MaxDelay: time.Second, MaxAttempts: 3}})

	res, err := call(t, b, "mcp__t__echo", `{"a":1}`)
	if err != nil || res.Text != `{"a":1}` {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	// The secret reaches the server's environment, and nothing else of
	// the process: not its argv.
	res, err = call(t, b, "mcp__t__getenv", `{}`)
	if err != nil || res.Text != "s3cr3t" {
		t.Fatalf("getenv = %+v, %v", res, err)
	}
	for _, p := range backend.Started() {
		if strings.Contains(strings.Join(p.Argv, " "), "s3cr3t") {
			t.Errorf("the secret is in argv: %q", p.Argv)
		}
	}
	// stderr is drained: 256 KiB of it do not block the server.
	if res, err = call(t, b, "mcp__t__flood", `{}`); err != nil || res.Text != "flooded" {
		t.Fatalf("flood = %+v, %v", res, err)
	}

	// Killed mid-call: that call fails, quoting the exit and stderr.
	_, err = call(t, b, "mcp__t__crash", `{}`)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("crash = %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"lost during the call", "exit status 3", "dying on purpose"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("crash error %q lacks %q", err, want)
		}
	}
	// The next call succeeds on a new process.
	if res, err = call(t, b, "mcp__t__echo", `{"b":2}`); err != nil || res.Text != `{"b":2}` {
		t.Fatalf("echo after the crash = %+v, %v", res, err)
	}
	if n := len(backend.Started()); n != 2 {
		t.Errorf("%d processes started, want 2", n)
	}
	// execworldtest checks, after Close, that no world is left open.
}

func TestCommandThatNeverStartsFailsWithItsStderr(t *testing.T) {
	w, _ := execworldtest.NewWorld(t, nil)
	cmd := &Command{
		World: func(context.Context) (*execworld.World, error) { return w, nil },
		Argv:  []string{"/bin/sh", "-c", "echo 'config missing: set TOKEN' >&2; exit 7"},
	}
	b, err := New([]Server{{Name: "bad", Upstream: cmd, Required: true, StartupTimeout: 5 * time.Second, Reconnect: Reconnect{Disabled: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Start(context.Background())
	if err == nil {
		t.Fatal("Start succeeded with a server that exits at once")
	}
	for _, want := range []string{"required MCP server bad is not ready", "exit status 7", "config missing: set TOKEN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/mcp/gateway"
)

// serveTestServerEnv makes the test binary a go-sdk stdio MCP server
// whose tool grow adds a tool, so its tool list changes while a client
// is connected.
const serveTestServerEnv = "DSH_SERVE_TEST_SERVER"

func init() {
	if os.Getenv(serveTestServerEnv) == "1" {
		runGrowingMCPServer()
		os.Exit(0)
	}
}

func runGrowingMCPServer() {
	s := mcp.NewServer(&mcp.Implementation{Name: "dsh-grow", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("echo " + string(r.Params.Arguments)), nil
	})
	s.AddTool(&mcp.Tool{Name: "grow", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(&mcp.Tool{Name: "grown", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("grown, pid " + strconv.Itoa(os.Getpid())), nil
		})
		return text("added grown"), nil
	})
	s.Run(context.Background(), &mcp.StdioTransport{})
}

func listToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// dsh serve with mcp.servers: the bridged tools are in the first
// tools/list, a call goes through to the server in its own world, and
// the server's tool-list change reaches the connected client.
func TestServeBridgedMCPServer(t *testing.T) {
	requireNativeServe(t)
	server := serverCopy(t)
	ws := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "dsh.yaml")
	if err := os.WriteFile(cfgFile, []byte("mcp:\n  servers:\n    - name: grow\n      command: "+strconv.Quote(server)+"\n      env: [\""+serveTestServerEnv+"=1\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var changed atomic.Int32
	cs, cmd, stderr := startServeStdioWith(t, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) },
	}, ws, "--config", cfgFile)

	names := listToolNames(t, cs)
	for _, want := range []string{"mcp__grow__echo", "mcp__grow__grow", "exec", "lsp", "status"} {
		if !slices.Contains(names, want) {
			t.Fatalf("the first tools/list lacks %s: %q\n%s", want, names, stderr)
		}
	}
	if slices.Contains(names, "mcp__grow__grown") {
		t.Fatalf("mcp__grow__grown listed before the server added it: %q", names)
	}
	if r := callTool(t, cs, "mcp__grow__echo", map[string]any{"x": 1}); r.IsError || resultText(r) != `echo {"x":1}` {
		t.Errorf("mcp__grow__echo = %v, %q", r.IsError, resultText(r))
	}
	if r := callTool(t, cs, "mcp__grow__grow", nil); r.IsError || resultText(r) != "added grown" {
		t.Fatalf("mcp__grow__grow = %v, %q", r.IsError, resultText(r))
	}
	waitUntil(t, "list_changed reaches the client", 20*time.Second, func() bool { return changed.Load() > 0 })
	waitUntil(t, "mcp__grow__grown is listed", 20*time.Second, func() bool { return slices.Contains(listToolNames(t, cs), "mcp__grow__grown") })
	r := callTool(t, cs, "mcp__grow__grown", nil)
	if r.IsError || !strings.HasPrefix(resultText(r), "grown, pid ") {
		t.Fatalf("mcp__grow__grown = %v, %q", r.IsError, resultText(r))
	}
	// The server runs in a world of its own: its pid is the one of a
	// PID namespace, not of this host.
	if pid := strings.TrimPrefix(resultText(r), "grown, pid "); pid == strconv.Itoa(cmd.Process.Pid) {
		t.Errorf("the server's pid %s is dsh serve's", pid)
	}

	st := decode[gateway.StatusOutput](t, callTool(t, cs, "status", nil))
	if len(st.MCPServers) != 1 || st.MCPServers[0].Name != "grow" || st.MCPServers[0].State != "ready" || st.MCPServers[0].World == "" || st.MCPServers[0].Tools != 3 {
		t.Errorf("status mcp_servers = %+v", st.MCPServers)
	}
	pid := cmd.Process.Pid
	cs.Close()
	if err := cmd.wait(30 * time.Second); err != nil {
		t.Errorf("dsh serve after its client closed: %v\n%s", err, stderr)
	}
	if left := nativeState(pid); len(left) > 0 {
		t.Errorf("dsh serve left the bridge's worlds behind: %v", left)
	}
	if n := strings.Count(stderr.String(), `"tool":"mcp__grow__`); n != 3 {
		t.Errorf("%d audit lines of bridged calls, want 3:\n%s", n, stderr)
	}
}

// Over Streamable HTTP the bridge is shared by every session: a tool
// change of the server, made through one session, reaches both.
func TestServeHTTPBridgedListChangedReachesEverySession(t *testing.T) {
	requireNativeServe(t)
	server := serverCopy(t)
	ws := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "dsh.yaml")
	if err := os.WriteFile(cfgFile, []byte("mcp:\n  servers:\n    - name: grow\n      command: "+strconv.Quote(server)+"\n      env: [\""+serveTestServerEnv+"=1\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url, _ := startServeHTTP(t, ws, nil, "--config", cfgFile)
	var changed [2]atomic.Int32
	var sessions [2]*mcp.ClientSession
	for i := range sessions {
		c := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed[i].Add(1) },
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: http.DefaultClient}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		sessions[i] = cs
		if names := listToolNames(t, cs); !slices.Contains(names, "mcp__grow__grow") {
			t.Fatalf("session %d: the first tools/list lacks mcp__grow__grow: %q", i, names)
		}
	}
	if r := callTool(t, sessions[0], "mcp__grow__grow", nil); r.IsError {
		t.Fatalf("mcp__grow__grow: %s", resultText(r))
	}
	for i, cs := range sessions {
		waitUntil(t, "list_changed reaches session "+strconv.Itoa(i), 20*time.Second, func() bool { return changed[i].Load() > 0 })
		if !slices.Contains(listToolNames(t, cs), "mcp__grow__grown") {
			t.Errorf("session %d does not list mcp__grow__grown after list_changed", i)
		}
	}
	if r := callTool(t, sessions[1], "mcp__grow__grown", nil); r.IsError {
		t.Errorf("mcp__grow__grown from the other session: %s", resultText(r))
	}
}

// dsh serve's lsp tool answers with gopls running in the session's
// native world.
func TestServeLSPWithGopls(t *testing.T) {
	requireNativeServe(t)
	gopls := peerGopls(t)
	ws := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n",
		"a.go":   "package m\n\n// Hello greets.\nfunc Hello() string { return \"hi\" }\n",
		"b.go":   "package m\n\nfunc Use() string { s := \"é😀\"; return s + Hello() }\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfgFile := filepath.Join(t.TempDir(), "dsh.yaml")
	if err := os.WriteFile(cfgFile, []byte(`lsp:
  servers:
    - id: go
      command: `+gopls+`
      extensions: {".go": go}
      env: [PATH=/usr/local/go/bin:/usr/bin:/bin, GOPROXY=off, GOFLAGS=, GOTOOLCHAIN=local, GOCACHE=/tmp/c, GOPATH=/tmp/p]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, cmd, stderr := startServeStdio(t, ws, "--config", cfgFile)
	r := callTool(t, cs, "lsp", map[string]any{"operation": "definition", "file": "b.go", "line": 3, "column": 43})
	if r.IsError {
		t.Fatalf("lsp definition: %s\n%s", resultText(r), stderr)
	}
	def := decode[gateway.LSPOutput](t, r)
	want := gateway.LSPLocation{Path: "a.go", Line: 4, Column: 6, EndLine: 4, EndColumn: 11}
	if def.Kind != "locations" || def.Server != "go" || len(def.Locations) != 1 || def.Locations[0] != want || resultText(r) != "a.go:4:6" {
		t.Errorf("lsp definition = %+v, %q; want %+v", def, resultText(r), want)
	}
	h := decode[gateway.LSPOutput](t, callTool(t, cs, "lsp", map[string]any{"operation": "hover", "file": "b.go", "line": 3, "column": 43}))
	if h.Contents == nil || !strings.Contains(*h.Contents, "func Hello() string") {
		t.Errorf("lsp hover = %+v", h)
	}
	st := decode[gateway.StatusOutput](t, callTool(t, cs, "status", nil))
	var goState string
	for _, l := range st.LSP {
		if l.ID == "go" {
			goState = l.State
		}
	}
	if goState != "ready" {
		t.Errorf("status lsp: server go is %q, want ready: %+v", goState, st.LSP)
	}
	pid := cmd.Process.Pid
	cs.Close()
	if err := cmd.wait(30 * time.Second); err != nil {
		t.Errorf("dsh serve after its client closed: %v\n%s", err, stderr)
	}
	if left := nativeState(pid); len(left) > 0 {
		t.Errorf("closing the session left %v (gopls's world)", left)
	}
}

// Under dsh serve a bridged server's world.workspace is the served
// workspace, not dsh serve's current directory: rw and ro see it, none
// has it masked.
func TestMCPWorldPlanInServedWorkspace(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	served := t.TempDir()
	cfg := config.Default()
	s := config.MCPServer{Name: "fs", Command: "srv", World: config.MCPWorld{Workspace: "rw"}}
	plan, dir, err := mcpWorldPlanIn(&cfg, s, served)
	if err != nil {
		t.Fatal(err)
	}
	if dir != "" || plan.spec.Workspace != served {
		t.Errorf("workspace rw under dsh serve: %q, want the served %s (not the current directory %s)", plan.spec.Workspace, served, cwd)
	}
	s.World.Workspace = "none"
	plan, dir, err = mcpWorldPlanIn(&cfg, s, served)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if plan.spec.Workspace != dir || !slices.Contains(plan.spec.Masks, served) {
		t.Errorf("workspace none under dsh serve: workspace %q, masks %q; want an empty one and %s masked", plan.spec.Workspace, plan.spec.Masks, served)
	}
}

// procsOf lists the host pids of processes running the program path.
func procsOf(path string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == path {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A SIGKILLed dsh serve leaves no bridged server running, and the next
// start reaps the worlds it had.
func TestServeSIGKILLWithBridgeLeavesNothing(t *testing.T) {
	requireNativeServe(t)
	server := serverCopy(t)
	ws := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "dsh.yaml")
	if err := os.WriteFile(cfgFile, []byte("mcp:\n  servers:\n    - name: grow\n      command: "+strconv.Quote(server)+"\n      env: [\""+serveTestServerEnv+"=1\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, cmd, _ := startServeStdio(t, ws, "--config", cfgFile)
	if r := callTool(t, cs, "mcp__grow__echo", nil); r.IsError {
		t.Fatal(resultText(r))
	}
	pid := cmd.Process.Pid
	if len(nativeState(pid)) == 0 || len(procsOf(server)) == 0 {
		t.Fatalf("no bridged world (%v) or server process (%v) before the kill: the check would prove nothing", nativeState(pid), procsOf(server))
	}
	cmd.Process.Kill()
	cmd.wait(10 * time.Second)
	waitUntil(t, "the bridged server ends with the killed dsh serve", 20*time.Second, func() bool { return len(procsOf(server)) == 0 })
	cs2, _, _ := startServeStdio(t, ws)
	callTool(t, cs2, "status", nil)
	if left := nativeState(pid); len(left) > 0 {
		t.Errorf("the killed dsh serve's bridged worlds survive the next start: %v", left)
	}
}

// A server no one here wrote (the npm server-everything) through dsh
// serve: its tools in the first tools/list, a call answered.
func TestServeBridgesServerEverything(t *testing.T) {
	script := npmPeer(t, "server-everything", "dist/index.js")
	requireNativeServe(t)
	ws := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "dsh.yaml")
	if err := os.WriteFile(cfgFile, []byte("mcp:\n  servers:\n    - name: everything\n      command: node\n      args: ["+strconv.Quote(script)+", stdio]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, _, stderr := startServeStdio(t, ws, "--config", cfgFile)
	if names := listToolNames(t, cs); !slices.Contains(names, "mcp__everything__get-sum") {
		t.Fatalf("the first tools/list lacks mcp__everything__get-sum: %q\n%s", names, stderr)
	}
	r := callTool(t, cs, "mcp__everything__get-sum", map[string]any{"a": 2, "b": 3})
	if r.IsError || resultText(r) != "The sum of 2 and 3 is 5." {
		t.Errorf("mcp__everything__get-sum = %v, %q", r.IsError, resultText(r))
	}
}

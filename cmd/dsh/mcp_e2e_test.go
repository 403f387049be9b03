package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/mcp/bridge"
	"github.com/dsh-dev/dsh/sandbox/native"
	"github.com/dsh-dev/dsh/sandbox/pid1"
)

// init lets the test binary serve as the sandbox init, as dsh does: the
// bridge tests open native worlds in this process, and the native
// driver re-executes its own binary as the world's init.
func init() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case pid1.Arg:
			os.Exit(pid1.Main())
		case native.InitArg:
			os.Exit(native.InitMain())
		}
	}
	if os.Getenv(testServerEnv) == "1" {
		runTestMCPServer()
		os.Exit(0)
	}
}

// testServerEnv makes the test binary a go-sdk stdio MCP server.
const testServerEnv = "DSH_MCP_TEST_SERVER"

// runTestMCPServer serves the tool fetch: an HTTP GET of its url
// through the world's proxy, answering with the status line.
func runTestMCPServer() {
	s := mcp.NewServer(&mcp.Implementation{Name: "dsh-test", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "fetch", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ URL string }
		json.Unmarshal(r.Params.Arguments, &in)
		text := ""
		if resp, err := http.Get(in.URL); err != nil {
			text = "error: " + err.Error()
		} else {
			resp.Body.Close()
			text = resp.Status
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(r.Params.Arguments)}}}, nil
	})
	s.Run(context.Background(), &mcp.StdioTransport{})
}

// serverCopy copies this test binary where a world sees it (/tmp is
// private in every world) and returns its path.
func serverCopy(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "dsh-mcp-server-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The world's unprivileged identity must reach it.
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "server")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// npmPeer is the entry script of an npm MCP server that
// scripts/ensure-npm-peers.sh (make peers, make test) installed in
// .cache/peers, outside /tmp so that a world sees it. Without it the
// test skips, or fails under DSH_REQUIRE_TOOLS=1.
func npmPeer(t *testing.T, pkg, script string) string {
	t.Helper()
	testenv.RequireCommand(t, "node")
	root, err := filepath.Abs(filepath.Join("..", "..", ".cache", "peers", "mcp-servers", "node_modules", "@modelcontextprotocol", pkg))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, script)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("DSH_REQUIRE_TOOLS") == "1" {
			t.Fatalf("npm MCP server %s is not installed (%v); run scripts/ensure-npm-peers.sh, and DSH_REQUIRE_TOOLS=1 requires it", pkg, err)
		}
		t.Skipf("npm MCP server %s is not installed; run scripts/ensure-npm-peers.sh (set DSH_REQUIRE_TOOLS=1 to make this a failure)", pkg)
	}
	return p
}

// nativeBridge starts servers in native worlds, from the current
// directory, and closes them when the test ends, checking that no
// process of theirs is left.
func nativeBridge(t *testing.T, audit io.Writer, servers ...config.MCPServer) *bridge.Bridge {
	t.Helper()
	return nativeBridgeOpts(t, audit, nil, servers...)
}

func nativeBridgeOpts(t *testing.T, audit io.Writer, opts *bridge.Options, servers ...config.MCPServer) *bridge.Bridge {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	cfg := config.Default()
	for i := range servers {
		servers[i].Required = true
	}
	cfg.MCP.Servers = servers
	if err := cfg.Validate(driverNames()); err != nil {
		t.Fatal(err)
	}
	list, cleanup, err := mcpServers(&cfg, nil, io.Discard, audit)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bridge.New(list, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil && !errors.Is(err, bridge.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
		cleanup()
		for _, s := range servers {
			if s.Command == "" {
				continue
			}
			if pids := serverPids(strings.Join(append([]string{s.Command}, s.Args...), "\x00")); len(pids) > 0 {
				t.Errorf("server %s still runs after Close: pids %v", s.Name, pids)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return b
}

// serverPids are the host pids of processes whose command line holds
// script.
func serverPids(script string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, []byte(script)) && !bytes.Contains(cmdline, []byte("-test.")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func mcpCall(t *testing.T, b *bridge.Bridge, public, args string) (*bridge.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.Call(ctx, public, json.RawMessage(args), nil)
}

func TestMCPEverythingInANativeWorld(t *testing.T) {
	script := npmPeer(t, "server-everything", "dist/index.js")
	t.Chdir(t.TempDir())
	var toolEvents atomic.Int32
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := nativeBridgeOpts(t, nil, &bridge.Options{Logger: logger}, config.MCPServer{
		Name: "everything", Command: "node", Args: []string{script, "stdio"},
		Env:       config.SecretEnv{"GIVEN=for-this-server"},
		Reconnect: config.MCPReconnect{InitialDelay: "100ms"},
	})
	defer b.Subscribe(func(ev bridge.Event) {
		if ev.Kind == bridge.ToolsChanged {
			toolEvents.Add(1)
		}
	})()

	res, err := mcpCall(t, b, "mcp__everything__echo", `{"message":"through the bridge"}`)
	if err != nil || res.Text != "Echo: through the bridge" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	// The server's environment is the world's: the configured entry, no
	// host variable.
	t.Setenv("HOST_ONLY_SECRET", "must-not-leak")
	res, err = mcpCall(t, b, "mcp__everything__get-env", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "for-this-server") || strings.Contains(res.Text, "must-not-leak") {
		t.Errorf("the server's environment: %s", res.Text)
	}
	// Structured content is kept beside the text.
	res, err = mcpCall(t, b, "mcp__everything__get-structured-content", `{"location":"New York"}`)
	if err != nil || res.StructuredContent == nil {
		t.Errorf("get-structured-content = %+v, %v; want structured content", res, err)
	}
	if st := b.Status()[0]; st.Resources == 0 || st.Prompts == 0 {
		t.Errorf("resources and prompts not bridged: %+v", st)
	}

	// Progress notifications pass through to the caller.
	var progress atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	onProgress := &bridge.CallOptions{Progress: func(*mcp.ProgressNotificationParams) { progress.Add(1) }}
	if _, err := b.Call(ctx, "mcp__everything__trigger-long-running-operation", json.RawMessage(`{"duration":0.5,"steps":3}`), onProgress); err != nil {
		t.Fatal(err)
	}
	// The last may arrive after the result, when the call is over.
	if n := progress.Load(); n < 2 {
		t.Errorf("%d progress notifications, want at least 2 of the 3", n)
	}

	// Killed mid-call: that call fails, saying so; the bridge reconnects
	// (a new process in the same world) and the next call succeeds.
	pids := serverPids(script)
	if len(pids) != 1 {
		t.Fatalf("server processes %v, want exactly one", pids)
	}
	errc := make(chan error, 1)
	started := make(chan struct{}, 1)
	go func() {
		_, err := b.Call(ctx, "mcp__everything__trigger-long-running-operation", json.RawMessage(`{"duration":30,"steps":30}`),
			&bridge.CallOptions{Progress: func(*mcp.ProgressNotificationParams) {
				select {
				case started <- struct{}{}:
				default:
				}
			}})
		errc <- err
	}()
	<-started
	syscall.Kill(pids[0], syscall.SIGKILL)
	err = <-errc
	if !errors.Is(err, bridge.ErrUnavailable) || !strings.Contains(err.Error(), "lost during the call") || !strings.Contains(err.Error(), "killed by signal 9") {
		t.Errorf("the call whose server was killed: %v", err)
	}
	res, err = mcpCall(t, b, "mcp__everything__echo", `{"message":"again"}`)
	if err != nil || res.Text != "Echo: again" {
		t.Fatalf("echo after the kill = %+v, %v", res, err)
	}
	if now := serverPids(script); len(now) != 1 || now[0] == pids[0] {
		t.Errorf("server processes after the reconnect %v (killed %d), want one new one", now, pids[0])
	}
	// The server adds tools once initialized and says so: the
	// notification reaches the bridge, which re-syncs.
	if !strings.Contains(log.String(), `msg="MCP list_changed: re-sync" server=everything kind=tools`) {
		t.Errorf("no tools/list_changed from the server reached the bridge; its log:\n%s", log.String())
	}
	if toolEvents.Load() == 0 {
		t.Error("no tool generation was installed after the reconnect")
	}
}

func TestMCPFilesystemServerWorkspaceModes(t *testing.T) {
	script := npmPeer(t, "server-filesystem", "dist/index.js")
	// A credential the test puts outside any world's view: root's home
	// is masked in every world.
	cred, err := os.CreateTemp("/root", ".dsh-bridge-cred-")
	if err != nil {
		t.Fatal(err)
	}
	cred.WriteString("TOP-SECRET")
	cred.Close()
	t.Cleanup(func() { os.Remove(cred.Name()) })

	ws, err := os.MkdirTemp("/var/tmp", "dsh-bridge-ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ws) })
	// Readable by anyone: only the world's view may keep it from the
	// server, not its permissions.
	os.Chmod(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("workspace file"), 0o644)
	t.Chdir(ws)

	server := func(name, workspace string) config.MCPServer {
		// Told it may read and write everything: the world decides.
		return config.MCPServer{Name: name, Command: "node", Args: []string{script, "/"}, World: config.MCPWorld{Workspace: workspace}}
	}
	b := nativeBridge(t, nil, server("none", "none"), server("ro", "ro"), server("rw", "rw"))

	for _, name := range []string{"none", "ro", "rw"} {
		res, err := mcpCall(t, b, "mcp__"+name+"__read_text_file", `{"path":"`+cred.Name()+`"}`)
		if err == nil || strings.Contains(res.Text, "TOP-SECRET") {
			t.Errorf("%s: the host credential was read: %+v, %v", name, res, err)
		}
	}
	notes := filepath.Join(ws, "notes.txt")
	res, err := mcpCall(t, b, "mcp__none__read_text_file", `{"path":"`+notes+`"}`)
	if err == nil || strings.Contains(res.Text, "workspace file") {
		t.Errorf("workspace none: the workspace was readable: %+v, %v", res, err)
	}
	for _, name := range []string{"ro", "rw"} {
		res, err = mcpCall(t, b, "mcp__"+name+"__read_text_file", `{"path":"`+notes+`"}`)
		if err != nil || res.Text != "workspace file" {
			t.Errorf("workspace %s: reading the workspace = %+v, %v", name, res, err)
		}
	}
	if _, err := mcpCall(t, b, "mcp__ro__write_file", `{"path":"`+filepath.Join(ws, "ro.txt")+`","content":"x"}`); err == nil {
		t.Error("workspace ro: a write into the workspace succeeded")
	}
	if _, err := os.Stat(filepath.Join(ws, "ro.txt")); err == nil {
		t.Error("workspace ro: the write reached the workspace")
	}
	out := filepath.Join(ws, "written.txt")
	if _, err := mcpCall(t, b, "mcp__rw__write_file", `{"path":"`+out+`","content":"from the server"}`); err != nil {
		t.Errorf("workspace rw: writing = %v", err)
	}
	if got, _ := os.ReadFile(out); string(got) != "from the server" {
		t.Errorf("workspace rw: the file written holds %q", got)
	}
	if _, err := mcpCall(t, b, "mcp__none__write_file", `{"path":"`+filepath.Join(ws, "x.txt")+`","content":"x"}`); err == nil {
		t.Error("workspace none: a write into the workspace succeeded")
	}
	if _, err := os.Stat(filepath.Join(ws, "x.txt")); err == nil {
		t.Error("workspace none: the write reached the workspace")
	}
}

// The CLI over the built binary: list and call with --json.
func TestMCPCLIListAndCall(t *testing.T) {
	script := npmPeer(t, "server-everything", "dist/index.js")
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	bin := staticDsh(t)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "dsh.yaml")
	os.WriteFile(cfgFile, []byte("mcp:\n  servers:\n    - name: everything\n      command: node\n      args: ["+strconv.Quote(script)+", stdio]\n      env: [\"TOKEN=${FROM_HOST}\"]\n"), 0o644)

	run := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"--config", cfgFile}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FROM_HOST=ghp_very_secret", "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), code
	}
	out, code := run("mcp", "list", "--json")
	var list struct {
		Servers []bridge.ServerStatus `json:"servers"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Servers) != 1 || list.Servers[0].State != "ready" {
		t.Fatalf("dsh mcp list --json: status %d:\n%s", code, out)
	}
	found := false
	for _, tn := range list.Servers[0].Tools {
		found = found || tn == bridge.ToolName{Public: "mcp__everything__get-sum", Raw: "get-sum"}
	}
	if !found {
		t.Errorf("get-sum not listed: %s", out)
	}
	// The catalog is cached: a lazy server is listed from it, not
	// started.
	os.WriteFile(cfgFile, []byte("mcp:\n  servers:\n    - name: everything\n      start: lazy\n      command: node\n      args: ["+strconv.Quote(script)+", stdio]\n      env: [\"TOKEN=${FROM_HOST}\"]\n"), 0o644)
	out, code = run("mcp", "list", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || list.Servers[0].State != "idle" || !list.Servers[0].Cached || len(list.Servers[0].Tools) == 0 {
		t.Errorf("dsh mcp list of a lazy server with a cached catalog: status %d:\n%s", code, out)
	}
	if cached, _ := filepath.Glob(filepath.Join(dir, "cache", "dsh", "mcp", "*.json")); len(cached) == 0 {
		t.Error("no catalog cached")
	} else if data, _ := os.ReadFile(cached[0]); bytes.Contains(data, []byte("ghp_very_secret")) {
		t.Error("the cached catalog holds the secret")
	}
	out, code = run("mcp", "call", "--json", "mcp__everything__get-sum", `{"a":2,"b":3}`)
	if code != 0 || !strings.Contains(out, `"text":"The sum of 2 and 3 is 5."`) || !strings.Contains(out, `"isError":false`) {
		t.Errorf("dsh mcp call --json: status %d:\n%s", code, out)
	}
	out, code = run("mcp", "call", "--json", "mcp__everything__get-sum", `{"a":"x"}`)
	if code != 1 || !strings.Contains(out, `"isError":true`) {
		t.Errorf("dsh mcp call with an isError result: status %d, want 1:\n%s", code, out)
	}
	out, code = run("mcp", "call", "--json", "mcp__everything__nope")
	if code != 1 || !strings.Contains(out, `"code":"MCP_UNKNOWN_TOOL"`) {
		t.Errorf("dsh mcp call of an unknown tool: status %d:\n%s", code, out)
	}
	out, _ = run("config", "show", "--json")
	if strings.Contains(out, "ghp_very_secret") || strings.Contains(out, "${FROM_HOST}") {
		t.Errorf("dsh config show prints the secret:\n%s", out)
	}
}

// A go-sdk server (this test binary, copied where a world sees it) in a
// native world whose egress allows nothing: its request gets the proxy's
// 403, and the audit line names the server's world.
func TestMCPServerEgressDeniedAndAudited(t *testing.T) {
	bin := serverCopy(t)
	t.Chdir(t.TempDir())
	var audit syncBuffer
	b := nativeBridge(t, &audit, config.MCPServer{Name: "go", Command: bin, Env: config.SecretEnv{testServerEnv + "=1"}})
	// A name the policy denies: the proxy refuses it without resolving
	// it, so nothing leaves the machine.
	res, err := mcpCall(t, b, "mcp__go__fetch", `{"url":"http://blocked.example/"}`)
	if err != nil || !strings.Contains(res.Text, "403") {
		t.Fatalf("fetch of a denied host = %+v, %v; want the proxy's 403", res, err)
	}
	world := b.Status()[0].World
	if world == "" {
		t.Fatal("the server's status names no world")
	}
	b.Close() // the proxy's last audit lines are in
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["world"] == world && strings.Contains(line, "blocked.example") {
			found = true
		}
	}
	if !found {
		t.Errorf("no audit line for blocked.example names world %s:\n%s", world, audit.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the proxy's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

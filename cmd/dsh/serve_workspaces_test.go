package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/mcp/gateway"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/workspace"
)

const wsServerToken = "server-token-of-the-workspace-test"

// wsServer is a dsh serve --http hosting workspaces, driven with a plain
// net/http client.
type wsServer struct {
	base string // http://HOST:PORT
	root string
	proc *servedProc
}

func startWorkspaceServe(t *testing.T, root string, args ...string) *wsServer {
	t.Helper()
	url, p := startServeHTTP(t, t.TempDir(), []string{"DSH_WORKSPACES_ROOT=" + root, serveTokenEnv + "=" + wsServerToken}, args...)
	return &wsServer{base: strings.TrimSuffix(url, "/mcp"), root: root, proc: p}
}

func (s *wsServer) do(t *testing.T, token, method, path string, body any) (int, []byte) {
	t.Helper()
	resp := s.send(t, context.Background(), token, method, path, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (s *wsServer) send(t *testing.T, ctx context.Context, token, method, path string, body any) *http.Response {
	t.Helper()
	var rd io.Reader
	ct := "application/json"
	switch b := body.(type) {
	case nil:
	case []byte:
		rd, ct = bytes.NewReader(b), "application/octet-stream"
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// must is do that fails the test unless the status is want; it decodes
// a JSON answer into out when out is non-nil.
func (s *wsServer) must(t *testing.T, want int, out any, token, method, path string, body any) {
	t.Helper()
	code, b := s.do(t, token, method, path, body)
	if code != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// exec runs argv in the workspace over REST and returns its stdout and
// exit code, checking that the exit is the last event.
func (s *wsServer) exec(t *testing.T, token, name string, argv ...string) (string, int) {
	t.Helper()
	resp := s.send(t, context.Background(), token, "POST", "/v1/workspaces/"+name+"/exec", map[string]any{"argv": argv, "timeout": "60s"})
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("exec %v: %d %s", argv, resp.StatusCode, b)
	}
	var out strings.Builder
	var exit *workspace.ExecExit
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev workspace.ExecEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("exec line %q: %v", sc.Text(), err)
		}
		if exit != nil {
			t.Fatalf("an event after the exit: %s", sc.Text())
		}
		out.Write(ev.Stdout)
		exit = ev.Exit
		if ev.Error != nil {
			t.Fatalf("exec %v: %+v", argv, ev.Error)
		}
	}
	if exit == nil {
		t.Fatalf("exec %v: no exit event (stdout %q)", argv, out.String())
	}
	return out.String(), exit.Code
}

// filesDir is the host directory of a workspace's files (for the pause
// check, which must not go through the paused world).
func (s *wsServer) filesDir(t *testing.T, marker string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(s.root, "*", "files", marker))
	if len(m) != 1 {
		t.Fatalf("the workspace holding %s: %v", marker, m)
	}
	return filepath.Dir(m[0])
}

func (s *wsServer) mcpSession(t *testing.T, name, token string) *mcp.ClientSession {
	t.Helper()
	return httpSession(t, s.base+"/v1/workspaces/"+name+"/mcp", token)
}

func TestServeWorkspacesNative(t *testing.T) {
	requireNativeServe(t)
	testWorkspaceLifecycle(t, "native")
}

func TestServeWorkspacesDocker(t *testing.T) {
	testenv.RequireDocker(t)
	testWorkspaceLifecycle(t, "docker")
}

// testWorkspaceLifecycle is the acceptance of hosted workspaces on one
// driver: create, exec, a file written and read over REST and MCP,
// pause (a running counter makes no progress), resume, extend, delete,
// and a workspace's token refused on another workspace.
func testWorkspaceLifecycle(t *testing.T, driver string) {
	s := startWorkspaceServe(t, t.TempDir())
	var c, other workspace.Created
	s.must(t, 201, &c, wsServerToken, "POST", "/v1/workspaces", map[string]any{"name": "e2e", "driver": driver, "limits": map[string]any{"memory": "256MiB", "pids": 128}, "ttl": "30m"})
	s.must(t, 201, &other, wsServerToken, "POST", "/v1/workspaces", map[string]any{"name": "other", "driver": driver})
	if c.Workspace.Driver != driver || c.Workspace.State != workspace.StateRunning || c.Token == "" {
		t.Fatalf("created %+v", c)
	}
	tok := c.Token
	if driver == "docker" && len(worldContainers(t, c.Workspace.World)) != 1 {
		t.Fatalf("no container of world %s: the check that none is left would prove nothing", c.Workspace.World)
	}
	// A workspace's token reaches its own workspace only.
	if code, b := s.do(t, other.Token, "GET", "/v1/workspaces/e2e", nil); code != 403 || !strings.Contains(string(b), `"forbidden"`) {
		t.Fatalf("other's token on e2e: %d %s", code, b)
	}
	if code, _ := s.do(t, other.Token, "POST", "/v1/workspaces/e2e/exec", map[string]any{"argv": []string{"true"}}); code != 403 {
		t.Fatalf("other's token on e2e's exec: %d", code)
	}
	if code, _ := s.do(t, tok, "GET", "/v1/workspaces", nil); code != 403 {
		t.Fatalf("a workspace token on list: %d", code)
	}
	// The Origin rule of /mcp holds for /v1: a page elsewhere cannot
	// drive a workspace, whatever token it has.
	req, _ := http.NewRequest("GET", s.base+"/v1/workspaces/e2e", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Fatalf("a foreign Origin on /v1: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.base + "/v1/workspaces/e2e/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: &bearer{token: other.Token, rt: http.DefaultTransport}}}, nil); err == nil {
		t.Fatal("other's token connected to e2e's MCP endpoint")
	}

	if out, code := s.exec(t, tok, "e2e", "sh", "-c", "echo hello from $(pwd); exit 7"); code != 7 || !strings.HasPrefix(out, "hello from /") {
		t.Fatalf("exec: %q exit %d", out, code)
	}
	s.must(t, 204, nil, tok, "PUT", "/v1/workspaces/e2e/files/notes/a.txt", []byte("written over REST\n"))
	if code, b := s.do(t, tok, "GET", "/v1/workspaces/e2e/files/notes/a.txt", nil); code != 200 || string(b) != "written over REST\n" {
		t.Fatalf("read back: %d %q", code, b)
	}
	if out, _ := s.exec(t, tok, "e2e", "cat", "notes/a.txt"); out != "written over REST\n" {
		t.Fatalf("the world sees %q", out)
	}

	// The MCP endpoint: the dsh serve tools in this workspace's world.
	cs := s.mcpSession(t, "e2e", tok)
	got := decode[gateway.ExecOutput](t, callTool(t, cs, "exec", map[string]any{"command": "cat notes/a.txt && echo from mcp > notes/b.txt"}))
	if got.World != c.Workspace.World || got.Stdout.Text != "written over REST\n" {
		t.Fatalf("MCP exec: world %s (want %s), stdout %q", got.World, c.Workspace.World, got.Stdout.Text)
	}
	if code, b := s.do(t, tok, "GET", "/v1/workspaces/e2e/files/notes/b.txt", nil); code != 200 || string(b) != "from mcp\n" {
		t.Fatalf("REST read of the MCP-written file: %d %q", code, b)
	}
	defer cs.Close()

	// Pause: a running counter makes no progress until resume.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	counting := s.send(t, ctx, tok, "POST", "/v1/workspaces/e2e/exec", map[string]any{
		"argv": []string{"sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > counter.tmp && mv counter.tmp counter; sleep 0.05; done"}, "timeout": "5m",
	})
	defer counting.Body.Close()
	var dir string
	waitUntil(t, "the counter counting", 30*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(s.root, "*", "files", "counter"))
		if len(m) == 1 {
			dir = filepath.Dir(m[0])
		}
		return len(m) == 1 && count(dir) > 2
	})
	var ws workspace.Workspace
	s.must(t, 200, &ws, tok, "POST", "/v1/workspaces/e2e/pause", nil)
	if ws.State != workspace.StatePaused {
		t.Fatalf("after pause: %s", ws.State)
	}
	time.Sleep(300 * time.Millisecond) // a write in flight lands
	c1 := count(dir)
	time.Sleep(1500 * time.Millisecond)
	if c2 := count(dir); c2 != c1 {
		t.Fatalf("the counter went from %d to %d while paused", c1, c2)
	}
	if code, b := s.do(t, tok, "POST", "/v1/workspaces/e2e/exec", map[string]any{"argv": []string{"true"}}); code != 409 {
		t.Fatalf("exec while paused: %d %s", code, b)
	}
	// The MCP session borrowed the world before the pause: its tools are
	// refused too.
	if res := callTool(t, cs, "write_file", map[string]any{"path": "while-paused.txt", "content": "x"}); !res.IsError || !strings.Contains(resultText(res), "paused") {
		t.Fatalf("MCP write_file while paused: error %v: %s", res.IsError, resultText(res))
	}
	s.must(t, 200, &ws, tok, "POST", "/v1/workspaces/e2e/resume", nil)
	if ws.State != workspace.StateRunning {
		t.Fatalf("after resume: %s", ws.State)
	}
	waitUntil(t, "the counter counting again after resume", 30*time.Second, func() bool { return count(dir) > c1+2 })
	cancel()

	// Extend moves the expiry later.
	s.must(t, 200, &ws, tok, "POST", "/v1/workspaces/e2e/extend", map[string]any{"by": "2h"})
	if d := time.Until(ws.ExpiresAt); d < 110*time.Minute {
		t.Fatalf("after extend by 2h it expires in %v", d)
	}
	// Delete: the workspace, its world and its files go.
	s.must(t, 204, nil, tok, "DELETE", "/v1/workspaces/e2e", nil)
	if code, _ := s.do(t, wsServerToken, "GET", "/v1/workspaces/e2e", nil); code != 404 {
		t.Fatalf("GET after delete: %d", code)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the deleted workspace's files are still at %s: %v", dir, err)
	}
	if code, _ := s.do(t, tok, "GET", "/v1/workspaces/e2e", nil); code != 401 {
		t.Fatalf("a deleted workspace's token: %d, want 401", code)
	}
	s.must(t, 204, nil, wsServerToken, "DELETE", "/v1/workspaces/other", nil)
	if driver == "docker" {
		// Other dsh processes on this host may run containers: only the
		// workspaces' own count.
		if left := worldContainers(t, c.Workspace.World, other.Workspace.World); len(left) > 0 {
			t.Fatalf("containers left after deleting every workspace: %v", left)
		}
	}
}

func count(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "counter"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// dshContainers are the containers dsh manages, with their world IDs.
func dshContainers(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+sandbox.LabelManaged+"=true", "--format", `{{.ID}} {{.Label "`+sandbox.LabelWorld+`"}}`).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))
}

// worldContainers are the containers of the given worlds.
func worldContainers(t *testing.T, worlds ...string) []string {
	t.Helper()
	var out []string
	f := dshContainers(t)
	for i := 1; i < len(f); i += 2 {
		for _, w := range worlds {
			if f[i] == w {
				out = append(out, f[i-1])
			}
		}
	}
	return out
}

// Restart: with docker workspaces open, SIGKILL dsh serve and start it
// again over the same root: the workspaces are listed with their files
// and run commands; one that expired meanwhile is reaped.
func TestServeWorkspacesRestartDocker(t *testing.T) {
	testenv.RequireDocker(t)
	root := t.TempDir()
	s := startWorkspaceServe(t, root)
	var keep, brief workspace.Created
	s.must(t, 201, &keep, wsServerToken, "POST", "/v1/workspaces", map[string]any{"name": "keep", "driver": "docker"})
	s.must(t, 201, &brief, wsServerToken, "POST", "/v1/workspaces", map[string]any{"name": "brief", "driver": "docker", "ttl": "4s"})
	s.must(t, 204, nil, keep.Token, "PUT", "/v1/workspaces/keep/files/kept.txt", []byte("survives\n"))
	if out, code := s.exec(t, keep.Token, "keep", "sh", "-c", "echo made in the first run > made.txt && cat made.txt"); code != 0 || out != "made in the first run\n" {
		t.Fatalf("exec: %q %d", out, code)
	}
	s.must(t, 204, nil, brief.Token, "PUT", "/v1/workspaces/brief/files/x", []byte("x"))
	briefDir := s.filesDir(t, "x")

	s.proc.Process.Kill()
	if err := s.proc.wait(10 * time.Second); err == nil {
		t.Fatal("dsh serve exited 0 on SIGKILL?")
	}
	time.Sleep(4 * time.Second) // brief's TTL passes while no server runs

	s2 := startWorkspaceServe(t, root)
	var list struct{ Workspaces []workspace.Workspace }
	s2.must(t, 200, &list, wsServerToken, "GET", "/v1/workspaces", nil)
	if len(list.Workspaces) != 1 || list.Workspaces[0].Name != "keep" || list.Workspaces[0].Driver != "docker" {
		t.Fatalf("after the restart the server lists %+v, want keep alone (brief expired)", list.Workspaces)
	}
	if _, err := os.Stat(briefDir); !os.IsNotExist(err) {
		t.Errorf("the expired workspace's files are still at %s: %v", briefDir, err)
	}
	// The token issued before the restart still reaches keep.
	if code, b := s2.do(t, keep.Token, "GET", "/v1/workspaces/keep/files/kept.txt", nil); code != 200 || string(b) != "survives\n" {
		t.Fatalf("the file written before the kill: %d %q", code, b)
	}
	if out, code := s2.exec(t, keep.Token, "keep", "sh", "-c", "cat made.txt kept.txt"); code != 0 || out != "made in the first run\nsurvives\n" {
		t.Fatalf("exec after the restart: %q %d", out, code)
	}
	s2.must(t, 204, nil, keep.Token, "DELETE", "/v1/workspaces/keep", nil)
	if left := worldContainers(t, keep.Workspace.World, brief.Workspace.World, list.Workspaces[0].World); len(left) > 0 {
		t.Errorf("containers of the workspaces left: %v", left)
	}
}

// A create whose template equals a pool's takes a pre-opened world.
func TestServeWorkspacesPoolNative(t *testing.T) {
	requireNativeServe(t)
	s := startWorkspaceServe(t, t.TempDir(), "--pool", "native,memory=128MiB:1")
	var c, other workspace.Created
	waitUntil(t, "a create taking the pooled world", 30*time.Second, func() bool {
		code, b := s.do(t, wsServerToken, "POST", "/v1/workspaces", map[string]any{"driver": "native", "limits": map[string]any{"memory": "128MiB"}})
		if code != 201 {
			t.Fatalf("create: %d %s", code, b)
		}
		json.Unmarshal(b, &c)
		if !c.Workspace.Pooled {
			s.must(t, 204, nil, wsServerToken, "DELETE", "/v1/workspaces/"+c.Workspace.Name, nil)
		}
		return c.Workspace.Pooled
	})
	if out, code := s.exec(t, c.Token, c.Workspace.Name, "sh", "-c", "ls -A | grep -c . ; echo ok"); code != 0 || !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("exec in the pooled workspace: %q %d", out, code)
	}
	s.must(t, 201, &other, wsServerToken, "POST", "/v1/workspaces", map[string]any{"driver": "native", "limits": map[string]any{"memory": "64MiB"}})
	if other.Workspace.Pooled {
		t.Error("a create of another template took a pooled world")
	}
}

func TestServeWorkspaceFlagsNeedHTTP(t *testing.T) {
	out, err := exec.Command(staticDsh(t), "serve", "--pool", "native:1").CombinedOutput()
	if code := procExit(err); code != 2 || !strings.Contains(string(out), "--pool applies to --http only") {
		t.Fatalf("dsh serve --pool without --http: exit %d: %s", code, out)
	}
}

func procExit(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// dsh world drives a real dsh serve: create, exec (its status), cp both
// ways, ls, pause, resume, rm.
func TestWorldCLIAgainstServeNative(t *testing.T) {
	requireNativeServe(t)
	s := startWorkspaceServe(t, t.TempDir())
	dir := t.TempDir()
	world := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(staticDsh(t), append([]string{"world"}, args...)...)
		cmd.Env = append(serveEnv(t), "DSH_SERVER="+s.base, "DSH_SERVER_TOKEN="+wsServerToken)
		cmd.Dir = dir
		out, err := cmd.Output()
		return string(out), procExit(err)
	}
	if out, code := world("create", "cli", "--ttl", "10m"); code != 0 || !strings.Contains(out, "cli") {
		t.Fatalf("create: %d %q", code, out)
	}
	if out, code := world("exec", "cli", "--", "sh", "-c", "echo from the world; exit 5"); code != 5 || out != "from the world\n" {
		t.Fatalf("exec: %d %q", code, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, code := world("cp", "in.txt", "cli:sub/in.txt"); code != 0 {
		t.Fatalf("cp in: %d", code)
	}
	if out, _ := world("exec", "cli", "--", "sh", "-c", "cat sub/in.txt; echo made > out.txt"); out != "local\n" {
		t.Fatalf("the world sees %q", out)
	}
	if _, code := world("cp", "cli:out.txt", "back.txt"); code != 0 {
		t.Fatalf("cp out: %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "back.txt")); string(b) != "made\n" {
		t.Fatalf("copied back %q", b)
	}
	var list struct{ Workspaces []workspace.Workspace }
	out, _ := world("ls", "--json")
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Workspaces) != 1 || list.Workspaces[0].Name != "cli" {
		t.Fatalf("ls --json: %v %s", err, out)
	}
	for _, verb := range []string{"pause", "resume", "rm"} {
		if out, code := world(verb, "cli"); code != 0 {
			t.Fatalf("%s: %d %q", verb, code, out)
		}
	}
	if code, _ := s.do(t, wsServerToken, "GET", "/v1/workspaces/cli", nil); code != 404 {
		t.Fatalf("after rm: %d", code)
	}
}

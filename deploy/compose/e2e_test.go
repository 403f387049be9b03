//go:build e2e

// The end-to-end test of the compose deployments: make e2e-compose runs it
// (go test -tags e2e ./deploy/compose/), after make images and
// scripts/ensure-compose.sh. It runs the README's commands as they are
// written there, with each compose implementation, and drives the stacks
// as a user would: an MCP client over HTTP, the sidecar's app through the
// proxy. Nothing public is resolved or dialled: the allowed destination is
// a server in a container on a network this test makes.
package compose

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv/mcptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/workspace"
)

// blocks are the README's commands, by the name of their e2e: marker.
func blocks(t *testing.T) map[string]string {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- e2e: ([a-z-]+) -->\n```sh\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		if _, dup := out[m[1]]; dup {
			t.Fatalf("README.md has two e2e: %s blocks", m[1])
		}
		out[m[1]] = m[2]
	}
	return out
}

// readmeBlocks are the blocks this test runs, in the README's order; a
// block the README adds or drops fails the test until it is listed here.
var readmeBlocks = []string{"prepare", "config", "up", "workspaces", "down", "proxy-up", "proxy-try", "proxy-audit", "proxy-reload", "proxy-down"}

// clis are the compose implementations the files must work with.
var clis = []struct{ name, cmd string }{
	{"v2", "docker compose"},
	{"v1.29", "docker-compose"},
}

func TestComposeE2E(t *testing.T) {
	bl := blocks(t)
	var names []string
	for n := range bl {
		names = append(names, n)
	}
	slices.Sort(names)
	want := slices.Clone(readmeBlocks)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("README.md's e2e blocks are %v; this test runs %v: list a new block in readmeBlocks", names, want)
	}
	for _, img := range []string{"dsh/dsh:latest", "dsh/go:latest", "dsh/fixture:latest"} {
		if err := exec.Command("docker", "image", "inspect", img).Run(); err != nil {
			t.Fatalf("image %s is missing: run make images (make e2e-compose does)", img)
		}
	}
	var results []benchResult
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			if err := exec.Command("sh", "-c", c.cmd+" version").Run(); err != nil {
				t.Fatalf("%s is not installed: run scripts/ensure-compose.sh (make e2e-compose does)", c.cmd)
			}
			s := newStack(t, c.cmd, bl)
			results = append(results, s.serveStack(t))
			s.proxyStack(t)
		})
	}
	reportBench(t, results)
}

// stack is one run of the README: its project, directory and variables.
type stack struct {
	cli     string
	blocks  map[string]string
	id      string
	project string
	dir     string // a copy of this directory: the README's working directory
	root    string // DSH_ROOT
	env     []string
	port    string
	token   string
	dshHost string // the hostname of the dsh container
}

func newStack(t *testing.T, cli string, bl map[string]string) *stack {
	s := &stack{cli: cli, blocks: bl, id: randomID(t)}
	s.project = "dsh-e2e-" + s.id
	s.dir = t.TempDir()
	for _, f := range []string{"compose.yaml", "compose.proxy.yaml", "policy/egress.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(s.dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(s.dir, f), b, 0o644)
	}
	// Under /tmp but not in the test's own temporary directory, whose
	// parents are 0700: a world (uid 1000) must traverse to its workspace.
	root, err := os.MkdirTemp("/tmp", "dsh-e2e-root-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o755)
	s.root = filepath.Join(root, "state")
	t.Cleanup(func() { os.RemoveAll(root) })
	s.port = freePort(t)
	s.env = append(os.Environ(),
		"COMPOSE_PROJECT_NAME="+s.project,
		"DSH_ROOT="+s.root,
		"DSH_TOKEN_FILE="+filepath.Join(root, "serve.token"),
		"DSH_PORT="+s.port,
		"DSH_METRICS_PORT="+freePort(t),
		"DSH_WORLD_IMAGE=dsh/go:latest",
		"APP_IMAGE=dsh/fixture:latest",
		"DSH_POLICY_DIR="+filepath.Join(s.dir, "test-policy"),
	)
	if _, err := exec.LookPath("sudo"); err != nil {
		// The README's sudo, as root: the command itself.
		bin := filepath.Join(s.dir, "bin")
		os.Mkdir(bin, 0o755)
		os.WriteFile(filepath.Join(bin, "sudo"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755)
		s.env = append(s.env, "PATH="+bin+":"+os.Getenv("PATH"))
	}
	// Whatever happens, the stacks go, with what the test made beside them.
	t.Cleanup(func() {
		for _, f := range []string{"compose.yaml", "compose.proxy.yaml"} {
			s.sh(context.Background(), s.cli+" -f "+f+" --profile lsp down -v --remove-orphans -t 5")
		}
		exec.Command("docker", "rm", "-f", s.upstreamName()).Run()
		exec.Command("docker", "network", "rm", s.upstreamName()).Run()
	})
	return s
}

func (s *stack) upstreamName() string { return "dsh-e2e-" + s.id + "-upstream" }

// run runs the README's block name as it is written there (docker compose
// spelled as this stack's compose), in its directory, and returns its
// output; a failure or a block that runs over two minutes fails the test.
func (s *stack) run(t *testing.T, name string, extraEnv ...string) string {
	t.Helper()
	script, ok := s.blocks[name]
	if !ok {
		t.Fatalf("README.md has no e2e: %s block", name)
	}
	script = strings.ReplaceAll(script, "docker compose ", s.cli+" ")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := s.sh(ctx, script, extraEnv...)
	if err != nil {
		t.Fatalf("README block %s (%s): %v\n%s\n--- output:\n%s", name, s.cli, err, script, out)
	}
	return out
}

func (s *stack) sh(ctx context.Context, script string, extraEnv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-euc", script)
	cmd.Dir = s.dir
	cmd.Env = append(slices.Clone(s.env), extraEnv...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// benchResult is what one compose implementation measured.
type benchResult struct {
	cli             string
	upToHealthy     time.Duration // the up block: docker compose up -d until healthy
	startToHealthy  time.Duration // the container's start to its first passing check
	startToListen   time.Duration // the container's start to dsh serve listening
	imageBytes      int64
	firstExec       time.Duration // the first exec call (opens the world)
	secondExec      time.Duration
	healthcheckExec time.Duration // one dsh health in the container, as docker runs it
	workspaceCreate time.Duration // POST /v1/workspaces (opens its world)
	workspaceExec   time.Duration // the first exec in it, over REST, to its last line
}

// serveStack runs the dsh serve stack of the README and drives it over MCP.
func (s *stack) serveStack(t *testing.T) benchResult {
	r := benchResult{cli: s.cli}
	s.run(t, "prepare")
	if st, err := os.Stat(filepath.Join(s.root, "workspace")); err != nil || st.Sys() == nil {
		t.Fatalf("prepare made no workspace: %v", err)
	}
	tok, err := os.ReadFile(filepath.Join(filepath.Dir(s.root), "serve.token"))
	if err != nil || len(bytes.TrimSpace(tok)) != 64 {
		t.Fatalf("prepare made no token: %q %v", tok, err)
	}
	s.token = string(bytes.TrimSpace(tok))
	s.run(t, "config")

	start := time.Now()
	out := s.run(t, "up")
	r.upToHealthy = time.Since(start)
	if !strings.Contains(out, "ok") {
		t.Errorf("up: /healthz did not answer ok:\n%s", out)
	}
	cid := strings.TrimSpace(s.must(t, s.cli+" -f compose.yaml ps -q dsh"))
	s.dshHost = strings.TrimSpace(s.must(t, "docker inspect -f '{{.Config.Hostname}}' "+cid))
	r.startToHealthy = healthTime(t, cid)
	r.startToListen = listenTime(t, cid)
	r.imageBytes = imageSize(t, "dsh/dsh:latest")
	hs := time.Now()
	s.must(t, "docker exec "+cid+" /dsh health http://127.0.0.1:8765")
	r.healthcheckExec = time.Since(hs)

	// Unauthenticated requests are refused; the client's token opens /mcp.
	resp, err := http.Get("http://127.0.0.1:" + s.port + "/mcp")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /mcp without a token: %v %v, want 401", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	cs := s.session(t)
	defer cs.Close()

	t0 := time.Now()
	ex := call(t, cs, "exec", map[string]any{"command": "id -u; pwd; echo hi from the world"})
	r.firstExec = time.Since(t0)
	if txt := text(ex); ex.IsError || !strings.Contains(txt, "1000\n"+s.root+"/workspace\nhi from the world") {
		t.Errorf("exec: %s", txt)
	}
	t0 = time.Now()
	call(t, cs, "exec", map[string]any{"argv": []string{"true"}})
	r.secondExec = time.Since(t0)
	// The world is a container of the host's engine, dsh's init its PID 1,
	// its workspace the host's directory under the state root.
	if got := s.worldContainers(t); len(got) != 1 {
		t.Errorf("world containers of the stack's dsh: %v, want the session's one\n%s", got,
			s.must(t, "docker ps -a --filter label=dev.dsh.managed=true --format '{{.ID}} {{.Status}} {{.Labels}}'"))
	} else if m, err := s.sh(context.Background(), "docker inspect -f '{{range .Mounts}}{{.Source}}:{{.Destination}} {{end}}' "+got[0]); err != nil || !strings.Contains(m, s.root+"/workspace:"+s.root+"/workspace") {
		ev, _ := s.sh(context.Background(), "docker events --since "+fmt.Sprint(t0.Add(-10*time.Second).Unix())+" --until "+fmt.Sprint(time.Now().Unix())+" --filter container="+got[0])
		t.Errorf("the world does not bind the state root's workspace at the same path: %s %v\nevents:\n%s\nlogs:\n%s", m, err, ev, s.logs("compose.yaml"))
	}

	w := call(t, cs, "write_file", map[string]any{"path": "notes/hello.txt", "content": "hello from compose\n", "create_dirs": true})
	if w.IsError {
		t.Fatalf("write_file: %s", text(w))
	}
	rd := call(t, cs, "read_file", map[string]any{"path": "notes/hello.txt"})
	var rdOut struct{ Content string }
	decode(t, rd, &rdOut)
	if rdOut.Content != "hello from compose\n" {
		t.Errorf("read_file = %q", rdOut.Content)
	}
	if b, err := os.ReadFile(filepath.Join(s.root, "workspace", "notes", "hello.txt")); err != nil || string(b) != "hello from compose\n" {
		t.Errorf("the host's workspace file: %q %v", b, err)
	}

	// A private address: refused by the web policy, before any dial.
	f := call(t, cs, "web_fetch", map[string]any{"url": "http://10.0.0.1/"})
	if txt := text(f); !f.IsError || !strings.Contains(txt, "NET_DENIED") || !strings.Contains(txt, "private") {
		t.Errorf("web_fetch of a private address: %s", txt)
	}

	// An lsp definition in a Go workspace: gopls in the dsh/go world.
	for name, content := range map[string]string{
		"go/go.mod": "module example.com/m\n\ngo 1.26\n",
		"go/a.go":   "package m\n\n// Hello greets.\nfunc Hello() string { return \"hi\" }\n",
		"go/b.go":   "package m\n\nfunc Use() string { return Hello() }\n",
	} {
		if w := call(t, cs, "write_file", map[string]any{"path": name, "content": content, "create_dirs": true}); w.IsError {
			t.Fatalf("write_file %s: %s", name, text(w))
		}
	}
	l := call(t, cs, "lsp", map[string]any{"operation": "definition", "file": "go/b.go", "line": 3, "column": 28})
	if txt := text(l); l.IsError || !strings.Contains(txt, "go/a.go:4:6") {
		t.Errorf("lsp definition: %s\n%s", txt, s.logs("compose.yaml"))
	}

	s.workspaceSteps(t, &r)
	cs.Close()

	s.run(t, "down")
	s.assertGone(t)
	if got := s.worldContainers(t); len(got) != 0 {
		t.Errorf("world containers left after down: %v", got)
	}
	return r
}

// workspaceSteps drives the workspaces of the README (docs/WORKSPACES.md):
// its block as written, then over REST a workspace with a TTL, its exec
// stream, its files, pause and resume, its own MCP endpoint with its own
// token, that token refused on a server route, and its delete, which
// takes its world's container with it.
func (s *stack) workspaceSteps(t *testing.T, r *benchResult) {
	out := s.run(t, "workspaces")
	// create, exec (echo hi: "aGkK" in base64), the file read back.
	for _, want := range []string{`"name":"demo"`, `"token":"`, `{"stdout":"aGkK"}`, `"exit":{"code":0`, "\nhello\n", `"name":"hello.txt"`} {
		if !strings.Contains(out, want) {
			t.Errorf("README block workspaces: no %s in its output:\n%s", want, out)
		}
	}

	var c workspace.Created
	t0 := time.Now()
	s.rest(t, 201, &c, s.token, "POST", "/v1/workspaces", `{"name":"e2e","ttl":"10m"}`)
	r.workspaceCreate = time.Since(t0)
	if c.Token == "" || c.Workspace.Name != "e2e" || c.Workspace.Driver != "docker" || c.Workspace.State != workspace.StateRunning {
		t.Fatalf("create e2e: %+v", c)
	}
	if ttl := c.Workspace.ExpiresAt.Sub(c.Workspace.CreatedAt); ttl != 10*time.Minute {
		t.Errorf("create e2e with ttl 10m: it expires %v after its creation", ttl)
	}
	world := c.Workspace.World
	ctrs := strings.Fields(s.must(t, "docker ps -q --filter label=dev.dsh.world="+world))
	if len(ctrs) != 1 {
		t.Fatalf("the container of workspace e2e's world %s: %v, want one", world, ctrs)
	}

	// exec: NDJSON, the output, and last the exit. The world runs as the
	// workspace files' owner (--workspace-owner), never as root.
	t0 = time.Now()
	stdout, exit := s.exec(t, c.Token, "e2e", `{"argv":["sh","-c","echo hi; id -u"]}`)
	r.workspaceExec = time.Since(t0)
	if stdout != "hi\n1000\n" || exit == nil || exit.Code != 0 {
		t.Errorf("exec in e2e: stdout %q, exit %+v; want hi, uid 1000 and code 0", stdout, exit)
	}

	// files: PUT, GET back, ls/; the world sees what was written.
	s.rest(t, 204, nil, c.Token, "PUT", "/v1/workspaces/e2e/files/notes/a.txt", "written over REST\n")
	if got := s.rest(t, 200, nil, c.Token, "GET", "/v1/workspaces/e2e/files/notes/a.txt", ""); got != "written over REST\n" {
		t.Errorf("GET files/notes/a.txt = %q", got)
	}
	var ls struct {
		Entries []struct{ Name, Type string }
	}
	s.rest(t, 200, &ls, c.Token, "GET", "/v1/workspaces/e2e/ls/", "")
	if !slices.ContainsFunc(ls.Entries, func(e struct{ Name, Type string }) bool { return e.Name == "notes" && e.Type == "dir" }) {
		t.Errorf("ls/ of e2e has no directory notes: %+v", ls.Entries)
	}
	// The world, its files' owner, goes on writing what dsh wrote for it.
	if stdout, exit := s.exec(t, c.Token, "e2e", `{"argv":["sh","-c","echo by the world >> notes/a.txt && touch notes/b && cat notes/a.txt"]}`); stdout != "written over REST\nby the world\n" || exit == nil || exit.Code != 0 {
		t.Errorf("the world appends to notes/a.txt and makes notes/b: %q, exit %+v", stdout, exit)
	}

	// pause (the engine's pause of the container) and resume.
	var ws workspace.Workspace
	s.rest(t, 200, &ws, c.Token, "POST", "/v1/workspaces/e2e/pause", "")
	if st := strings.TrimSpace(s.must(t, "docker inspect -f '{{.State.Status}}' "+ctrs[0])); ws.State != workspace.StatePaused || st != "paused" {
		t.Errorf("pause: the workspace is %s, its container %s", ws.State, st)
	}
	if code, b := s.do(t, c.Token, "POST", "/v1/workspaces/e2e/exec", `{"argv":["true"]}`); code != 409 {
		t.Errorf("exec in a paused workspace: %d %s, want 409", code, b)
	}
	s.rest(t, 200, &ws, c.Token, "POST", "/v1/workspaces/e2e/resume", "")
	if _, exit := s.exec(t, c.Token, "e2e", `{"argv":["true"]}`); ws.State != workspace.StateRunning || exit == nil || exit.Code != 0 {
		t.Errorf("resume: the workspace is %s, an exec ends %+v", ws.State, exit)
	}

	// Its MCP endpoint, with its own token, in a 2025-11-25 session.
	cs := s.mcpSession(t, "/v1/workspaces/e2e/mcp", c.Token)
	ex := call(t, cs, "exec", map[string]any{"command": "cat notes/a.txt"})
	if txt := text(ex); ex.IsError || !strings.Contains(txt, "written over REST\nby the world") {
		t.Errorf("exec over the workspace's MCP endpoint: %s", txt)
	}
	rd := call(t, cs, "read_file", map[string]any{"path": "notes/a.txt"})
	var rdOut struct{ Content string }
	decode(t, rd, &rdOut)
	if rdOut.Content != "written over REST\nby the world\n" {
		t.Errorf("read_file over the workspace's MCP endpoint = %q", rdOut.Content)
	}
	if got := strings.Fields(s.must(t, "docker ps -q --filter label=dev.dsh.world="+world)); !slices.Equal(got, ctrs) {
		t.Errorf("the MCP endpoint's calls ran in containers %v, want the workspace's %v", got, ctrs)
	}
	cs.Close()

	// The workspace's token reaches only its workspace.
	if code, b := s.do(t, c.Token, "GET", "/v1/workspaces", ""); code != 403 || !strings.Contains(b, `"forbidden"`) {
		t.Errorf("GET /v1/workspaces with a workspace's token: %d %s, want 403 forbidden", code, b)
	}

	s.rest(t, 204, nil, c.Token, "DELETE", "/v1/workspaces/e2e", "")
	if !waitFor(10*time.Second, func() bool {
		return strings.TrimSpace(s.must(t, "docker ps -aq --filter label=dev.dsh.world="+world)) == ""
	}) {
		t.Errorf("the container of deleted workspace e2e is left: %s", s.must(t, "docker ps -a --filter label=dev.dsh.world="+world))
	}
	if code, _ := s.do(t, s.token, "GET", "/v1/workspaces/e2e", ""); code != 404 {
		t.Errorf("GET a deleted workspace: %d, want 404", code)
	}
	var list struct{ Workspaces []workspace.Workspace }
	s.rest(t, 200, &list, s.token, "GET", "/v1/workspaces", "")
	if len(list.Workspaces) != 0 {
		t.Errorf("workspaces left after the README's delete and the test's: %+v", list.Workspaces)
	}
}

// do sends one request to the stack's /v1 with token (a JSON body if it
// starts with "{", else bytes) and returns its status and body.
func (s *stack) do(t *testing.T, token, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://127.0.0.1:"+s.port+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if strings.HasPrefix(body, "{") {
		req.Header.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rest is do that wants status code, decoding a JSON answer into v.
func (s *stack) rest(t *testing.T, code int, v any, token, method, path, body string) string {
	t.Helper()
	got, b := s.do(t, token, method, path, body)
	if got != code {
		t.Fatalf("%s %s: %d %s, want %d\n%s", method, path, got, b, code, s.logs("compose.yaml"))
	}
	if v != nil {
		if err := json.Unmarshal([]byte(b), v); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return b
}

// exec runs an ExecRequest in workspace name and returns its stdout and
// its exit, the stream's last line (nil if there is none).
func (s *stack) exec(t *testing.T, token, name, req string) (string, *workspace.ExecExit) {
	t.Helper()
	code, b := s.do(t, token, "POST", "/v1/workspaces/"+name+"/exec", req)
	if code != 200 {
		t.Fatalf("exec %s in %s: %d %s", req, name, code, b)
	}
	var stdout strings.Builder
	var exit *workspace.ExecExit
	lines := strings.Split(strings.TrimSpace(b), "\n")
	for i, l := range lines {
		var ev workspace.ExecEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("exec %s: line %q of its answer is not JSON: %v", req, l, err)
		}
		stdout.Write(ev.Stdout)
		if ev.Exit != nil && i == len(lines)-1 {
			exit = ev.Exit
		}
	}
	return stdout.String(), exit
}

// proxyStack runs the sidecar stack of the README: the app reaches the
// allowed upstream (a server in a container on a network this test made)
// through the proxy and is refused elsewhere, with audit lines.
func (s *stack) proxyStack(t *testing.T) {
	net := s.upstreamName()
	s.must(t, "docker network create --label dev.dsh.e2e="+s.id+" "+net)
	s.must(t, "docker run -d --name "+net+" --label dev.dsh.e2e="+s.id+" --network "+net+
		" --user 0 dsh/fixture:latest sh -c 'mkdir -p /www && echo upstream-ok >/www/index.html && exec httpd -f -p 8080 -h /www'")
	ip := strings.TrimSpace(s.must(t, `docker inspect -f '{{(index .NetworkSettings.Networks "`+net+`").IPAddress}}' `+net))
	if ip == "" {
		t.Fatalf("upstream %s has no address", net)
	}
	// The test's policy: the upstream by name (so it is resolved) and by
	// address (a private address needs an entry naming it).
	os.MkdirAll(filepath.Join(s.dir, "test-policy"), 0o755)
	os.WriteFile(filepath.Join(s.dir, "test-policy", "egress.yaml"), []byte(fmt.Sprintf(
		"default: deny\nallow:\n  - %s:8080\n  - %s:8080\n", net, ip)), 0o644)
	allowed := "ALLOWED_URL=http://" + net + ":8080/"

	s.run(t, "proxy-up")
	proxy := strings.TrimSpace(s.must(t, s.cli+" -f compose.proxy.yaml ps -q proxy"))
	// The upstream is outside the stack: the proxy, and only the proxy, joins its network.
	s.must(t, "docker network connect "+net+" "+proxy)

	out := s.run(t, "proxy-try", allowed)
	if !strings.Contains(out, "upstream-ok") {
		t.Errorf("the app did not reach the allowed upstream through the proxy:\n%s", out)
	}
	if !regexp.MustCompile(`(?i)X-Dsh-Deny-Reason: .*metadata`).MatchString(out) {
		t.Errorf("the metadata address was not refused with the reason:\n%s", out)
	}
	// Refused elsewhere: the upstream on a port the policy does not list.
	other, _ := s.sh(context.Background(), `printf 'GET http://`+net+`:8081/ HTTP/1.1\r\nHost: `+net+`:8081\r\nConnection: close\r\n\r\n' | `+
		s.cli+" -f compose.proxy.yaml exec -T app nc proxy 3128")
	if !strings.Contains(other, "403 Forbidden") || !strings.Contains(other, "X-Dsh-Deny-Reason: ") {
		t.Errorf("the upstream's port 8081 was not refused by the proxy:\n%s", other)
	}

	s.run(t, "proxy-reload")
	if !waitFor(10*time.Second, func() bool { return strings.Contains(s.logs("compose.proxy.yaml"), "SIGHUP: reloaded policy") }) {
		t.Errorf("the proxy did not reload its policy on SIGHUP:\n%s", s.logs("compose.proxy.yaml"))
	}

	out = s.run(t, "proxy-audit")
	if !strings.Contains(out, "dsh_proxy_decisions_total") {
		t.Errorf("no decision metrics:\n%s", out)
	}
	lines := auditLines(t, filepath.Join(s.dir, "egress.jsonl"))
	var allow, meta, port bool
	for _, l := range lines {
		switch {
		case l.Verdict == "allow" && l.Host == net && l.Port == 8080 && l.Status == 200:
			allow = true
		case l.Verdict == "deny" && l.Host == "169.254.169.254" && l.Reason != "":
			meta = true
		case l.Verdict == "deny" && l.Host == net && l.Port == 8081:
			port = true
		}
	}
	if !allow || !meta || !port {
		t.Errorf("audit: allowed upstream %v, denied metadata %v, denied port %v:\n%+v", allow, meta, port, lines)
	}

	s.run(t, "proxy-down")
	s.must(t, "docker rm -f "+net)
	s.must(t, "docker network rm "+net)
	s.assertGone(t)
	if left := strings.TrimSpace(s.must(t, "docker ps -aq --filter label=dev.dsh.e2e="+s.id+"; docker network ls -q --filter label=dev.dsh.e2e="+s.id)); left != "" {
		t.Errorf("the test's own upstream left behind: %s", left)
	}
}

type auditLine struct {
	Verdict, Host, Reason, URL string
	Port                       int
	Status                     int
}

func auditLines(t *testing.T, file string) []auditLine {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the audit copied out of the volume: %v", err)
	}
	var out []auditLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var a auditLine
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, a)
	}
	return out
}

// assertGone checks that the project has no container, network or volume.
func (s *stack) assertGone(t *testing.T) {
	t.Helper()
	f := "label=com.docker.compose.project=" + s.project
	left := s.must(t, "docker ps -aq --filter "+f+" | sed 's/^/container /'; "+
		"docker network ls -q --filter "+f+" | sed 's/^/network /'; "+
		"docker volume ls -q --filter "+f+" | sed 's/^/volume /'")
	if strings.TrimSpace(left) != "" {
		t.Errorf("%s left after down -v:\n%s", s.project, left)
	}
}

// worldContainers are the containers of the worlds of this stack's dsh
// serve: dsh labels each with its own hostname, which is its
// container's.
func (s *stack) worldContainers(t *testing.T) []string {
	return strings.Fields(s.must(t, "docker ps -aq --filter label=dev.dsh.managed=true --filter label=dev.dsh.owner.host="+s.dshHost))
}

func (s *stack) must(t *testing.T, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := s.sh(ctx, script)
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out
}

func (s *stack) logs(file string) string {
	out, _ := s.sh(context.Background(), s.cli+" -f "+file+" logs --no-color")
	return out
}

// session is an MCP client session at the stack's /mcp with its token,
// of the revision 2025-11-25: a session with its own world for all its
// calls, as the MCP clients of today hold one (from 2026-07-28 on, each
// request stands alone and gets a fresh world).
func (s *stack) session(t *testing.T) *mcp.ClientSession {
	return s.mcpSession(t, "/mcp", s.token)
}

// mcpSession is such a session at path with token.
func (s *stack) mcpSession(t *testing.T, path, token string) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "dsh-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &bearer{token: token, rt: http.DefaultTransport}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://127.0.0.1:" + s.port + path, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("MCP over HTTP at %s: %v", path, err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("MCP at %s: the session is of revision %s, want 2025-11-25", path, v)
	}
	return cs
}

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	return mcptest.Call(t, cs, 2*time.Minute, tool, args)
}

func text(r *mcp.CallToolResult) string { return mcptest.Text(r) }

func decode(t *testing.T, r *mcp.CallToolResult, v any) {
	t.Helper()
	if r.IsError {
		t.Fatalf("tool error: %s", text(r))
	}
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// healthTime is, from the engine's record, the time from the container's
// start to the end of its first passing healthcheck.
func healthTime(t *testing.T, cid string) time.Duration {
	st := containerState(t, cid)
	for _, l := range st.Health.Log {
		if l.ExitCode == 0 {
			return l.End.Sub(st.StartedAt)
		}
	}
	t.Fatalf("no passing healthcheck of %s: %+v", cid, st.Health.Log)
	return 0
}

// listenTime is the time from the container's start to dsh serve's
// "listening on" line (the engine's timestamp of it): when /healthz
// answers, before the first healthcheck (every 1 s) asks.
func listenTime(t *testing.T, cid string) time.Duration {
	st := containerState(t, cid)
	out, err := exec.Command("docker", "logs", "-t", cid).CombinedOutput()
	if err != nil {
		t.Fatalf("docker logs %s: %v", cid, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		ts, rest, _ := strings.Cut(l, " ")
		if strings.Contains(rest, "dsh serve: listening on") {
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatalf("log timestamp %q: %v", ts, err)
			}
			return at.Sub(st.StartedAt)
		}
	}
	t.Fatalf("no listening line in the logs of %s:\n%s", cid, out)
	return 0
}

type containerStateJSON struct {
	StartedAt time.Time
	Health    struct {
		Log []struct {
			Start, End time.Time
			ExitCode   int
		}
	}
}

func containerState(t *testing.T, cid string) containerStateJSON {
	out, err := exec.Command("docker", "inspect", "-f", "{{json .State}}", cid).Output()
	if err != nil {
		t.Fatalf("docker inspect %s: %v", cid, err)
	}
	var st containerStateJSON
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func imageSize(t *testing.T, img string) int64 {
	out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Size}}", img).Output()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	fmt.Sscan(string(out), &n)
	return n
}

// reportBench logs the measurements and, with $DSH_E2E_REPORT, writes
// them there as JSON lines; the image-size and up-to-healthy targets fail
// the test.
func reportBench(t *testing.T, rs []benchResult) {
	var buf bytes.Buffer
	for _, r := range rs {
		line := map[string]any{
			"cli": r.cli, "image_bytes": r.imageBytes,
			"up_to_healthy_ms":      r.upToHealthy.Milliseconds(),
			"start_to_healthy_ms":   r.startToHealthy.Milliseconds(),
			"start_to_listening_ms": r.startToListen.Milliseconds(),
			"healthcheck_exec_ms":   r.healthcheckExec.Milliseconds(),
			"first_exec_ms":         r.firstExec.Milliseconds(),
			"second_exec_ms":        r.secondExec.Milliseconds(),
			"workspace_create_ms":   r.workspaceCreate.Milliseconds(),
			"workspace_exec_ms":     r.workspaceExec.Milliseconds(),
		}
		b, _ := json.Marshal(line)
		buf.Write(append(b, '\n'))
		t.Logf("%s", b)
		if r.imageBytes >= 30<<20 {
			t.Errorf("dsh/dsh is %d bytes, over the 30 MB target", r.imageBytes)
		}
		if r.startToHealthy >= 2*time.Second {
			t.Errorf("%s: container start to healthy %v, over the 2 s target", r.cli, r.startToHealthy)
		}
	}
	if f := os.Getenv("DSH_E2E_REPORT"); f != "" {
		os.WriteFile(f, buf.Bytes(), 0o644)
	}
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p
}

func randomID(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func waitFor(d time.Duration, ok func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return ok()
}

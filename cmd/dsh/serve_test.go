package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv/mcptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/mcp/gateway"
)

// requireNativeServe skips (or, under DSH_REQUIRE_*, fails) unless the
// native driver can run here as root with cgroups: dsh serve's end-to-end
// tests run real native worlds.
func requireNativeServe(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
}

// serveEnv is the environment of a dsh serve under test: no user
// configuration, a workspace of its own.
func serveEnv(t *testing.T) []string {
	t.Helper()
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "DSH_WORKSPACES_ROOT=" + t.TempDir()}
	return env
}

// startServeStdio connects a go-sdk client to "dsh serve ARGS" over its
// stdin and stdout; the test owns the process (cmd.Wait is its own).
func startServeStdio(t *testing.T, ws string, args ...string) (*mcp.ClientSession, *servedProc, *lockedBuffer) {
	t.Helper()
	return startServeStdioWith(t, nil, ws, args...)
}

// startServeStdioWith is startServeStdio with the client's options.
func startServeStdioWith(t *testing.T, copts *mcp.ClientOptions, ws string, args ...string) (*mcp.ClientSession, *servedProc, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(staticDsh(t), append([]string{"serve", "--workspace", ws}, args...)...)
	cmd.Env = serveEnv(t)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	// Pipes of our own, not StdinPipe/StdoutPipe: Wait closes those as
	// soon as the process exits, losing the last response still in the
	// pipe.
	inR, in, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	t.Cleanup(func() { out.Close() })
	p := &servedProc{Cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		in.Close()
		if p.wait(10*time.Second) != nil {
			cmd.Process.Kill()
			<-p.done
		}
	})
	c := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: out, Writer: in}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to dsh serve: %v\n%s", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, p, stderr
}

// servedProc is a dsh serve under test, waited for once.
type servedProc struct {
	*exec.Cmd
	done chan struct{}
	err  error
}

// wait waits up to d for the process to exit and returns how it ended.
func (p *servedProc) wait(d time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		return fmt.Errorf("dsh serve still running after %v", d)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	return mcptest.Call(t, cs, 60*time.Second, name, args)
}

func resultText(r *mcp.CallToolResult) string { return mcptest.Text(r) }

func decode[T any](t *testing.T, r *mcp.CallToolResult) T {
	t.Helper()
	var v T
	if r.IsError {
		t.Fatalf("tool error: %s", resultText(r))
	}
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// nativeState lists what the native driver keeps for the worlds of the
// dsh process pid: their cgroups, in every hierarchy (their names begin
// with the owner's pid).
func nativeState(pid int) []string {
	prefix := strconv.Itoa(pid) + "-"
	var found []string
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/dsh-native")
	dirs = append(dirs, "/sys/fs/cgroup/dsh-native")
	for _, d := range dirs {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				found = append(found, filepath.Join(d, e.Name()))
			}
		}
	}
	return found
}

func waitUntil(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkConfinedSession runs the acceptance calls of dsh serve on one
// session: a confined exec, a write then a read, and a refused fetch.
func checkConfinedSession(t *testing.T, cs *mcp.ClientSession, ws string) {
	t.Helper()
	r := decode[gateway.ExecOutput](t, callTool(t, cs, "exec", map[string]any{"command": "id; grep -E 'CapEff|NoNewPrivs' /proc/self/status"}))
	if r.ExitCode != 0 {
		t.Fatalf("exec: %+v", r)
	}
	if !regexp.MustCompile(`(?m)^CapEff:\s+0+$`).MatchString(r.Stdout.Text) || !regexp.MustCompile(`(?m)^NoNewPrivs:\s+1$`).MatchString(r.Stdout.Text) {
		t.Errorf("the world's process has privileges:\n%s", r.Stdout.Text)
	}
	// Root inside is a mapped identity: the host id behind it is not 0.
	m := decode[gateway.ExecOutput](t, callTool(t, cs, "exec", map[string]any{"argv": []string{"cat", "/proc/self/uid_map"}}))
	for _, line := range strings.Split(strings.TrimSpace(m.Stdout.Text), "\n") {
		if f := strings.Fields(line); len(f) != 3 || f[1] == "0" {
			t.Errorf("the world's uid map %q maps host root", m.Stdout.Text)
		}
	}
	decode[gateway.WriteOutput](t, callTool(t, cs, "write_file", map[string]any{"path": "notes/hello.txt", "content": "hello from the world\n", "create_dirs": true}))
	rd := decode[gateway.ReadOutput](t, callTool(t, cs, "read_file", map[string]any{"path": "notes/hello.txt"}))
	if rd.Content != "hello from the world\n" {
		t.Errorf("read_file = %q", rd.Content)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes/hello.txt")); err != nil || string(b) != "hello from the world\n" {
		t.Errorf("the workspace file = %q, %v", b, err)
	}
	// Nothing listens on 127.0.0.1:1, and the policy refuses before dialling.
	f := callTool(t, cs, "web_fetch", map[string]any{"url": "http://127.0.0.1:1/"})
	if !f.IsError || !strings.Contains(resultText(f), "NET_DENIED") || !strings.Contains(resultText(f), "loopback address") {
		t.Errorf("web_fetch of a loopback address: %s", resultText(f))
	}
}

func TestServeStdio(t *testing.T) {
	requireNativeServe(t)
	ws := t.TempDir()
	cs, cmd, stderr := startServeStdio(t, ws)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"edit_file", "exec", "list_dir", "lsp", "read_file", "skill", "status", "web_fetch", "web_search", "write_file"}; !slices.Equal(names, want) {
		t.Fatalf("tools/list = %v, want %v", names, want)
	}
	checkConfinedSession(t, cs, ws)
	pid := cmd.Process.Pid
	if len(nativeState(pid)) == 0 {
		t.Fatalf("no native state for dsh serve (pid %d): the check below would prove nothing", pid)
	}
	cs.Close()
	if err := cmd.wait(20 * time.Second); err != nil {
		t.Errorf("dsh serve after its client closed: %v", err)
	}
	if left := nativeState(pid); len(left) > 0 {
		t.Errorf("closing the session left %v", left)
	}
	// One audit line per tool call on stderr.
	if n := strings.Count(stderr.String(), `"tool":"`); n != 5 {
		t.Errorf("%d audit lines, want 5:\n%s", n, stderr)
	}
}

// startServeHTTP starts "dsh serve --http 127.0.0.1:0 ARGS" and returns its
// /mcp URL.
func startServeHTTP(t *testing.T, ws string, env []string, args ...string) (string, *servedProc) {
	t.Helper()
	cmd := exec.Command(staticDsh(t), append([]string{"serve", "--workspace", ws, "--http", "127.0.0.1:0", "--audit", "off"}, args...)...)
	cmd.Env = append(serveEnv(t), env...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	p := &servedProc{Cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if p.wait(20*time.Second) != nil {
			cmd.Process.Kill()
			<-p.done
		}
		pr.Close()
	})
	sc := bufio.NewScanner(pr)
	re := regexp.MustCompile(`listening on (http://\S+/mcp)`)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, pr)
			return m[1], p
		}
	}
	t.Fatalf("dsh serve --http did not start:\n%s", strings.Join(lines, "\n"))
	return "", nil
}

// bearer adds the token to every request.
type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func httpSession(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	return httpSessionAt(t, url, token, "2025-11-25")
}

func httpSessionAt(t *testing.T, url, token, revision string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &bearer{token: token, rt: http.DefaultTransport}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	return cs
}

func TestServeHTTPAuth(t *testing.T) {
	const token = "s3cret-token-for-the-test"
	ws := t.TempDir()
	// The token is required once configured, loopback or not. The world
	// is never opened: these requests do not get that far.
	url, _ := startServeHTTP(t, ws, []string{serveTokenEnv + "=" + token}, "--driver", "native")
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, tc := range []struct {
		name, auth, origin string
		want               int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"wrong token", "Bearer wrong", "", http.StatusUnauthorized},
		{"not bearer", "Basic " + token, "", http.StatusUnauthorized},
		{"bad origin", "Bearer " + token, "http://evil.example", http.StatusForbidden},
		{"bad origin without token", "", "https://evil.example", http.StatusForbidden},
		{"right token", "Bearer " + token, "", http.StatusOK},
		{"right token, loopback origin", "Bearer " + token, "http://localhost:6274", http.StatusOK},
	} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: HTTP %d, want %d: %s", tc.name, resp.StatusCode, tc.want, body)
		}
	}
	base := strings.TrimSuffix(url, "/mcp")
	resp, err := http.Get(base + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v %v", resp, err)
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %v %v", resp.Status, err)
	}
}

func TestServeHTTPRefusesNonLoopbackWithoutToken(t *testing.T) {
	cmd := exec.Command(staticDsh(t), "serve", "--workspace", t.TempDir(), "--http", "0.0.0.0:0")
	cmd.Env = serveEnv(t)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "token") {
		t.Errorf("dsh serve --http 0.0.0.0:0 without a token: %v\n%s", err, out)
	}
}

func TestServeHTTPSessions(t *testing.T) {
	requireNativeServe(t)
	const token = "another-test-token"
	ws := t.TempDir()
	url, cmd := startServeHTTP(t, ws, []string{serveTokenEnv + "=" + token})
	pid := cmd.Process.Pid

	one := httpSession(t, url, token)
	checkConfinedSession(t, one, ws)
	one.Close()
	waitUntil(t, "the world of the closed session removed", 20*time.Second, func() bool { return len(nativeState(pid)) == 0 })

	const n = 20
	sessions := make([]*mcp.ClientSession, n)
	for i := range sessions {
		sessions[i] = httpSession(t, url, token)
	}
	var wg sync.WaitGroup
	errs := make([]string, n)
	for i, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each world's /tmp and processes are its own: every command
			// runs at once, marked, and looks for the others.
			line := fmt.Sprintf(": marker-%d; echo %d > /tmp/mine-%d; sleep 2; ls /tmp; for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done", i, i, i)
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": line}})
			if err != nil {
				errs[i] = err.Error()
				return
			}
			var out gateway.ExecOutput
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &out)
			if res.IsError || out.ExitCode != 0 {
				errs[i] = fmt.Sprintf("exec failed: %s", resultText(res))
				return
			}
			for j := range n {
				if j == i {
					continue
				}
				if strings.Contains(out.Stdout.Text, fmt.Sprintf("mine-%d\n", j)) || strings.Contains(out.Stdout.Text, fmt.Sprintf("marker-%d;", j)) {
					errs[i] = fmt.Sprintf("session %d sees session %d's files or processes:\n%s", i, j, out.Stdout.Text)
					return
				}
			}
			if !strings.Contains(out.Stdout.Text, fmt.Sprintf("mine-%d\n", i)) || !strings.Contains(out.Stdout.Text, fmt.Sprintf("marker-%d;", i)) {
				errs[i] = fmt.Sprintf("session %d does not see its own file and process:\n%s", i, out.Stdout.Text)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	names := map[string]bool{} // one cgroup name per world, in every hierarchy
	for _, e := range nativeState(pid) {
		names[filepath.Base(e)] = true
	}
	if worlds := len(names); worlds != n {
		t.Errorf("%d native worlds for %d sessions, want one each", worlds, n)
	}
	for _, cs := range sessions {
		cs.Close()
	}
	waitUntil(t, "every world removed after its session closed", 60*time.Second, func() bool { return len(nativeState(pid)) == 0 })
}

func TestServeSIGKILLLeavesNothingTheNextStartKeeps(t *testing.T) {
	requireNativeServe(t)
	ws := t.TempDir()
	cs, cmd, _ := startServeStdio(t, ws)
	decode[gateway.ExecOutput](t, callTool(t, cs, "exec", map[string]any{"command": "true"}))
	pid := cmd.Process.Pid
	if len(nativeState(pid)) == 0 {
		t.Fatal("no world state before the kill: the check would prove nothing")
	}
	cmd.Process.Kill()
	cmd.wait(10 * time.Second)
	t.Logf("left by the killed dsh serve before the next start: %v", nativeState(pid))
	// The next start reaps before it serves.
	cs2, _, _ := startServeStdio(t, ws)
	callTool(t, cs2, "status", nil)
	if left := nativeState(pid); len(left) > 0 {
		t.Errorf("the killed dsh serve's worlds survive the next start: %v", left)
	}
}

func TestServeSIGTERMDrains(t *testing.T) {
	requireNativeServe(t)
	ws := t.TempDir()
	cs, cmd, stderr := startServeStdio(t, ws, "--grace", "20s")
	decode[gateway.ExecOutput](t, callTool(t, cs, "exec", map[string]any{"command": "true"}))
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "sleep 1; echo finished"}})
		if err != nil {
			t.Logf("exec in flight: %v", err)
		}
		done <- res
	}()
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case res := <-done:
		if res == nil || res.IsError || !strings.Contains(resultText(res), "finished") {
			t.Errorf("the call in flight at SIGTERM did not finish: %v\n%s", res, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight never returned")
	}
	pid := cmd.Process.Pid
	if err := cmd.wait(30 * time.Second); err != nil {
		t.Errorf("dsh serve after SIGTERM: %v, want exit 0", err)
	}
	if left := nativeState(pid); len(left) > 0 {
		t.Errorf("SIGTERM left %v", left)
	}
}

func TestServeHTTPStatelessRevision(t *testing.T) {
	requireNativeServe(t)
	const token = "stateless-test-token"
	ws := t.TempDir()
	url, cmd := startServeHTTP(t, ws, []string{serveTokenEnv + "=" + token})
	cs := httpSessionAt(t, url, token, "2026-07-28")
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	// Each request is its own session: a fresh world each time, closed
	// when the request ends.
	a := decode[gateway.ExecOutput](t, callTool(t, cs, "exec", map[string]any{"command": "echo a > /tmp/a; ls /tmp"}))
	b := decode[gateway.ExecOutput](t, callTool(t, cs, "exec", map[string]any{"command": "ls /tmp"}))
	if a.World == b.World || regexp.MustCompile(`(?m)^a$`).MatchString(b.Stdout.Text) {
		t.Errorf("stateless requests shared a world: %s %q, %s %q", a.World, a.Stdout.Text, b.World, b.Stdout.Text)
	}
	pid := cmd.Process.Pid
	waitUntil(t, "the per-request worlds removed", 20*time.Second, func() bool { return len(nativeState(pid)) == 0 })
}

func TestServeCancelKillsAtTheGrace(t *testing.T) {
	requireNativeServe(t)
	ws := t.TempDir()
	cs, _, _ := startServeStdio(t, ws)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// The shell and its child both ignore SIGTERM.
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{
			"command": "trap '' TERM; (trap '' TERM; sleep 300) & echo started > started; wait"}})
		done <- err
	}()
	waitUntil(t, "the command started", 30*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(ws, "started"))
		return err == nil
	})
	begin := time.Now()
	cancel()
	<-done
	// The world's processes are gone once the grace (3 s) has passed:
	// ask the same world.
	var left string
	waitUntil(t, "the process tree killed", 15*time.Second, func() bool {
		r := decode[gateway.ExecOutput](t, callTool(t, cs, "exec", map[string]any{"command": "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done"}))
		left = r.Stdout.Text
		return !strings.Contains(left, "sleep 300")
	})
	if d := time.Since(begin); d < 2*time.Second {
		t.Errorf("processes ignoring SIGTERM were gone after %v, before the 3 s grace: was it SIGTERM or SIGKILL?", d)
	}
}

func TestServeHTTPIdleAndLimitsAndSIGTERM(t *testing.T) {
	requireNativeServe(t)
	const token = "idle-test-token"
	ws := t.TempDir()
	url, p := startServeHTTP(t, ws, []string{serveTokenEnv + "=" + token}, "--idle-timeout", "1s", "--max-body", "2000")
	pid := p.Process.Pid

	// A request body over --max-body is refused.
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 3000) + `"}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(big))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 3 KB body with --max-body 2000: HTTP %d, want 413", resp.StatusCode)
	}

	// An idle session's world is closed.
	cs := httpSession(t, url, token)
	decode[gateway.ExecOutput](t, callTool(t, cs, "exec", map[string]any{"command": "true"}))
	if len(nativeState(pid)) == 0 {
		t.Fatal("no world after exec: the idle check would prove nothing")
	}
	waitUntil(t, "the idle world closed", 20*time.Second, func() bool { return len(nativeState(pid)) == 0 })
	cs.Close()

	// SIGTERM: a world open, dsh serve exits 0 and leaves nothing.
	cs = httpSession(t, url, token)
	defer cs.Close()
	decode[gateway.ExecOutput](t, callTool(t, cs, "exec", map[string]any{"command": "true"}))
	p.Process.Signal(syscall.SIGTERM)
	if err := p.wait(30 * time.Second); err != nil {
		t.Errorf("dsh serve --http after SIGTERM: %v, want exit 0", err)
	}
	if left := nativeState(pid); len(left) > 0 {
		t.Errorf("SIGTERM left %v", left)
	}
}

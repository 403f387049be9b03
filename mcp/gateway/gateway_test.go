package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/internal/testenv/mcptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/mcp/gateway"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// syncBuffer is a bytes.Buffer safe for the audit writer.
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

type fixture struct {
	g       *gateway.Gateway
	backend *execworldtest.Backend
	ws      string
	spill   string
	audit   *syncBuffer
}

// newFixture is a gateway over the fake backend (local processes, no
// confinement: these tests are of the gateway, not of confinement).
func newFixture(t *testing.T, edit func(*gateway.Options)) *fixture {
	t.Helper()
	f := &fixture{backend: execworldtest.New(), ws: t.TempDir(), spill: t.TempDir(), audit: &syncBuffer{}}
	web, err := netpolicy.New(netpolicy.WebDefault())
	if err != nil {
		t.Fatal(err)
	}
	opts := &gateway.Options{
		Open: func(ctx context.Context) (*execworld.World, error) {
			return execworld.Open(ctx, f.backend, &execworld.Options{Spec: sandbox.DefaultSpec(f.ws), Net: web})
		},
		Audit:       f.audit,
		SpillDir:    f.spill,
		Confinement: gateway.Confinement{Driver: "fake", Confined: true, Egress: "deny", WebPolicy: "public"},
	}
	if edit != nil {
		edit(opts)
	}
	f.g, err = gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.g.Close() })
	return f
}

// connect is a client session over in-memory transports.
func (f *fixture) connect(t *testing.T, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := f.g.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	return mcptest.Call(t, cs, 30*time.Second, tool, args)
}

func text(r *mcp.CallToolResult) string { return mcptest.Text(r) }

func structured[T any](t *testing.T, r *mcp.CallToolResult) T {
	t.Helper()
	var v T
	if r.IsError {
		t.Fatalf("tool error: %s", text(r))
	}
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return v
}

func wantToolError(t *testing.T, r *mcp.CallToolResult, parts ...string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want a tool error, got success: %s", text(r))
	}
	for _, p := range parts {
		if !strings.Contains(text(r), p) {
			t.Errorf("tool error %q does not say %q", text(r), p)
		}
	}
}

func TestToolsListed(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ readOnly, destructive, openWorld bool }{
		"exec":       {false, true, false},
		"read_file":  {true, false, false},
		"write_file": {false, true, false},
		"edit_file":  {false, true, false},
		"list_dir":   {true, false, false},
		"web_fetch":  {true, false, true},
		"web_search": {true, false, true},
		"status":     {true, false, false},
	}
	got := map[string]bool{}
	for _, tool := range res.Tools {
		got[tool.Name] = true
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: input schema %v, output schema %v: both must be typed", tool.Name, tool.InputSchema != nil, tool.OutputSchema != nil)
		}
		a := tool.Annotations
		if a == nil {
			t.Errorf("%s: no annotations", tool.Name)
			continue
		}
		if a.ReadOnlyHint != w.readOnly || (a.DestructiveHint != nil && *a.DestructiveHint) != w.destructive || a.OpenWorldHint == nil || *a.OpenWorldHint != w.openWorld {
			t.Errorf("%s: annotations readOnly=%v destructive=%v openWorld=%v, want %+v", tool.Name, a.ReadOnlyHint, a.DestructiveHint, a.OpenWorldHint, w)
		}
		if len(tool.Description) > 400 {
			t.Errorf("%s: description of %d characters is not concise", tool.Name, len(tool.Description))
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("tool %s missing", name)
		}
	}
}

func TestExecCommandAndArgv(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, nil)
	r := structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"command": "echo out; echo err >&2; exit 3"}))
	if r.ExitCode != 3 || r.Stdout.Text != "out\n" || r.Stderr.Text != "err\n" || r.World == "" {
		t.Errorf("exec command = %+v", r)
	}
	r = structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"argv": []string{"cat"}, "stdin": "fed $HOME"}))
	if r.ExitCode != 0 || r.Stdout.Text != "fed $HOME" {
		t.Errorf("exec argv with stdin = %+v", r)
	}
	if err := os.Mkdir(filepath.Join(f.ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"argv": []string{"pwd"}, "cwd": "sub"}))
	if strings.TrimSpace(r.Stdout.Text) != filepath.Join(f.ws, "sub") {
		t.Errorf("cwd sub: pwd = %q", r.Stdout.Text)
	}
	r = structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"command": "kill -KILL $$"}))
	if r.ExitCode != 137 || r.Signal == "" {
		t.Errorf("killed by signal: %+v", r)
	}
	r = structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"command": "sleep 5", "timeout": 0.3}))
	if !r.TimedOut || r.ExitCode != execworld.TimeoutCode {
		t.Errorf("timeout: %+v", r)
	}
}

func TestBadArgumentsAreToolErrors(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, nil)
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		parts []string
	}{
		{"exec", map[string]any{}, []string{`"command"`, "exactly one"}},
		{"exec", map[string]any{"command": "true", "argv": []string{"true"}}, []string{`"command"`, "exactly one"}},
		{"exec", map[string]any{"command": "true", "timeout": 601}, []string{`"timeout"`, "600"}},
		{"exec", map[string]any{"command": "true", "cwd": "../.."}, []string{`"cwd"`, "inside the workspace"}},
		{"exec", map[string]any{"argv": []string{"/no/such/program"}}, []string{`"argv"`, "not found"}},
		{"exec", map[string]any{"command": 7}, []string{"command"}},
		{"read_file", map[string]any{"path": "../etc/passwd"}, []string{`"path"`, "outside the workspace"}},
		{"read_file", map[string]any{"path": "/etc/passwd"}, []string{`"path"`, "outside the workspace"}},
		{"read_file", map[string]any{"path": "missing.txt"}, []string{`"path"`, "no such file"}},
		{"read_file", map[string]any{}, []string{"path"}},
		{"write_file", map[string]any{"path": "a.txt", "content": "x", "expected_version": "nope"}, []string{`"expected_version"`}},
		{"edit_file", map[string]any{"path": "a.txt", "old_text": "", "new_text": "y"}, []string{`"old_text"`}},
		{"list_dir", map[string]any{"limit": 5000}, []string{`"limit"`}},
		{"web_fetch", map[string]any{"url": ""}, []string{`"url"`}},
		{"web_search", map[string]any{"queries": []string{}}, []string{`"queries"`}},
		{"read_file", map[string]any{"path": "dsh-spill:../../etc/passwd"}, []string{`"path"`}},
	} {
		r := call(t, cs, tc.tool, tc.args)
		wantToolError(t, r, tc.parts...)
	}
}

func TestFiles(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, nil)
	w := structured[gateway.WriteOutput](t, call(t, cs, "write_file", map[string]any{"path": "d/a.txt", "content": "one\ntwo\nthree\n", "create_dirs": true}))
	if w.Bytes != 14 || w.Version == "" {
		t.Errorf("write = %+v", w)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "d/a.txt")); err != nil || string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("file on disk = %q, %v", b, err)
	}
	r := structured[gateway.ReadOutput](t, call(t, cs, "read_file", map[string]any{"path": "d/a.txt", "start_line": 2, "end_line": 3}))
	if r.Content != "two\nthree\n" || r.TotalLines != 3 || r.Binary || r.Version != w.Version {
		t.Errorf("read lines 2-3 = %+v", r)
	}
	// A change since the version was read is refused.
	wantToolError(t, call(t, cs, "write_file", map[string]any{"path": "d/a.txt", "content": "new", "expected_version": "absent"}), "expected_version")
	if err := os.WriteFile(filepath.Join(f.ws, "d/a.txt"), []byte("one\ntwo\nthree\nfour\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantToolError(t, call(t, cs, "write_file", map[string]any{"path": "d/a.txt", "content": "lost", "expected_version": r.Version}), "expected_version", "changed")
	e := structured[gateway.WriteOutput](t, call(t, cs, "edit_file", map[string]any{"path": "d/a.txt", "old_text": "two", "new_text": "TWO"}))
	if b, _ := os.ReadFile(filepath.Join(f.ws, "d/a.txt")); string(b) != "one\nTWO\nthree\nfour\n" || e.Version == "" {
		t.Errorf("after edit: %q", b)
	}
	wantToolError(t, call(t, cs, "edit_file", map[string]any{"path": "d/a.txt", "old_text": "o", "new_text": "0"}), `"old_text"`, "matches")
	// Binary content comes as base64.
	if err := os.WriteFile(filepath.Join(f.ws, "bin"), []byte{0, 1, 2, 0xff}, 0o644); err != nil {
		t.Fatal(err)
	}
	b := structured[gateway.ReadOutput](t, call(t, cs, "read_file", map[string]any{"path": "bin"}))
	if !b.Binary || b.Encoding != "base64" || b.Content != "AAEC/w==" {
		t.Errorf("binary read = %+v", b)
	}
	wantToolError(t, call(t, cs, "read_file", map[string]any{"path": "d/a.txt", "max_bytes": 3}), `"path"`, "cap")
	// A symlink out of the workspace is refused by the kernel.
	if err := os.Symlink("/etc/passwd", filepath.Join(f.ws, "link")); err != nil {
		t.Fatal(err)
	}
	wantToolError(t, call(t, cs, "read_file", map[string]any{"path": "link"}), "outside the workspace")
	l := structured[gateway.ListOutput](t, call(t, cs, "list_dir", map[string]any{"limit": 2}))
	if l.Total != 3 || !l.Truncated || len(l.Entries) != 2 || l.Entries[0].Name != "bin" || l.Entries[1].Type != "dir" {
		t.Errorf("list = %+v", l)
	}
}

func TestExecSpillsCutOutput(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, nil)
	// 100,000 numbered lines: well over the 64,000-byte tail.
	r := structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"command": "seq 1 100000"}))
	if !r.Stdout.Truncated || len(r.Stdout.Text) != gateway.ExecTailBytes || r.Stdout.Spill == "" {
		t.Fatalf("stdout = truncated %v, %d bytes, spill %q", r.Stdout.Truncated, len(r.Stdout.Text), r.Stdout.Spill)
	}
	var all strings.Builder
	for i := 1; i <= 100000; i++ {
		all.WriteString(strconv.Itoa(i))
		all.WriteByte('\n')
	}
	want := all.String()
	if r.Stdout.Bytes != int64(len(want)) || r.Stdout.Text != want[len(want)-gateway.ExecTailBytes:] {
		t.Errorf("the tail is not the exact last %d bytes", gateway.ExecTailBytes)
	}
	sp := structured[gateway.ReadOutput](t, call(t, cs, "read_file", map[string]any{"path": r.Stdout.Spill}))
	if sp.Content != want {
		t.Errorf("spill holds %d bytes, want the whole %d", len(sp.Content), len(want))
	}
	// The spill directory is private to its world and goes with it.
	dirs, _ := filepath.Glob(filepath.Join(f.spill, "dsh-spill-*"))
	if len(dirs) != 1 {
		t.Fatalf("spill dirs = %v, want one", dirs)
	}
	if fi, err := os.Stat(dirs[0]); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("spill dir mode = %v, %v; want 0700", fi.Mode(), err)
	}
	// Short output leaves no spill file.
	structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"command": "echo short"}))
	files, _ := os.ReadDir(dirs[0])
	if len(files) != 1 {
		t.Errorf("spill files = %d, want only the cut stream's", len(files))
	}
	cs.Close()
	waitFor(t, "the world and its spill directory removed", func() bool {
		d, _ := filepath.Glob(filepath.Join(f.spill, "dsh-spill-*"))
		return len(d) == 0 && f.backend.OpenInstances() == 0
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestOneWorldPerSessionLazyAndClosed(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.connect(t, nil), f.connect(t, nil)
	st := structured[gateway.StatusOutput](t, call(t, a, "status", nil))
	if st.World != "" || f.backend.OpenInstances() != 0 {
		t.Fatalf("status opened a world (%q, %d open): worlds open on the first call that needs one", st.World, f.backend.OpenInstances())
	}
	ra := structured[gateway.ExecOutput](t, call(t, a, "exec", map[string]any{"command": "echo a > /dev/null"}))
	rb := structured[gateway.ExecOutput](t, call(t, b, "exec", map[string]any{"command": "true"}))
	ra2 := structured[gateway.ExecOutput](t, call(t, a, "exec", map[string]any{"command": "true"}))
	if ra.World == rb.World || ra.World != ra2.World {
		t.Errorf("worlds: a %s, b %s, a again %s: want one per session", ra.World, rb.World, ra2.World)
	}
	if n := f.backend.OpenInstances(); n != 2 {
		t.Errorf("%d worlds open, want 2", n)
	}
	a.Close()
	waitFor(t, "session a's world closed", func() bool { return f.backend.OpenInstances() == 1 })
	f.g.Close()
	if n := f.backend.OpenInstances(); n != 0 {
		t.Errorf("after Close %d worlds open", n)
	}
	wantToolError(t, call(t, b, "exec", map[string]any{"command": "true"}), "shutting down")
}

func TestIdleTimeoutClosesTheWorld(t *testing.T) {
	f := newFixture(t, func(o *gateway.Options) { o.IdleTimeout = 200 * time.Millisecond })
	cs := f.connect(t, nil)
	r1 := structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"command": "true"}))
	waitFor(t, "the idle world closed", func() bool { return f.backend.OpenInstances() == 0 })
	r2 := structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"command": "true"}))
	if r1.World == r2.World {
		t.Errorf("the call after the idle timeout ran in the closed world %s", r1.World)
	}
}

func TestCancelKillsTheProcessTree(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, nil)
	marker := filepath.Join(f.ws, "pids")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		// A child that ignores SIGTERM, and a grandchild.
		res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{
			"command": "trap '' TERM; sleep 300 & echo $! >> " + marker + "; sh -c 'trap \"\" TERM; sleep 300' & echo $! >> " + marker + "; echo $$ >> " + marker + "; wait",
		}})
		done <- res
	}()
	waitFor(t, "the command started", func() bool {
		b, _ := os.ReadFile(marker)
		return strings.Count(string(b), "\n") == 3
	})
	cancel()
	b, _ := os.ReadFile(marker)
	pids := strings.Fields(string(b))
	waitFor(t, "every process of the tree gone (after the grace)", func() bool {
		for _, p := range pids {
			if _, err := os.Stat("/proc/" + p); err == nil {
				if st, _ := os.ReadFile("/proc/" + p + "/stat"); !strings.Contains(string(st), ") Z ") {
					return false
				}
			}
		}
		return true
	})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	waitFor(t, "the audit line of the cancelled call", func() bool { return strings.Contains(f.audit.String(), `"status":"canceled"`) })
}

func TestProgressStreamsOutput(t *testing.T) {
	f := newFixture(t, nil)
	var mu sync.Mutex
	var msgs []string
	cs := f.connect(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		msgs = append(msgs, r.Params.Message)
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "echo first; sleep 0.6; echo second"}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("exec: %v %s", err, text(res))
	}
	waitFor(t, "two progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(msgs, ""), "first\n") && strings.Contains(strings.Join(msgs, ""), "second\n")
	})
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) < 2 {
		t.Errorf("progress messages %q: want the output streamed in more than one", msgs)
	}
}

func TestWebFetchGoesThroughTheWorldPolicy(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, nil)
	// 127.0.0.1:1 - nothing listens, and the policy refuses before any dial.
	r := call(t, cs, "web_fetch", map[string]any{"url": "http://127.0.0.1:1/"})
	wantToolError(t, r, "NET_DENIED", "loopback address")
}

func TestAuditLines(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, nil)
	structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"command": "API_TOKEN=hunter2 true", "stdin": "private"}))
	call(t, cs, "read_file", map[string]any{"path": "../x"})
	lines := strings.Split(strings.TrimSpace(f.audit.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("audit has %d lines, want 2:\n%s", len(lines), f.audit.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"session", "world", "tool", "arguments", "status", "duration_ms", "bytes_out", "call"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("audit line lacks %q: %s", k, lines[0])
		}
	}
	if rec["tool"] != "exec" || rec["status"] != "ok" || rec["exit_code"] != float64(0) {
		t.Errorf("audit line = %s", lines[0])
	}
	if strings.Contains(f.audit.String(), "hunter2") || strings.Contains(f.audit.String(), "private") {
		t.Errorf("audit leaks a secret or stdin:\n%s", f.audit.String())
	}
	if !strings.Contains(lines[1], `"status":"tool_error"`) || !strings.Contains(lines[1], `"tool":"read_file"`) {
		t.Errorf("error line = %s", lines[1])
	}
}

func TestStatusResource(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, nil)
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: gateway.StatusURI})
	if err != nil {
		t.Fatal(err)
	}
	var st gateway.StatusOutput
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &st); err != nil {
		t.Fatal(err)
	}
	caps := map[string]gateway.Capability{}
	for _, c := range st.Capabilities {
		caps[c.Name] = c
	}
	if !caps["exec"].Exists || !caps["lsp"].Exists || caps["lsp"].Configured || caps["lsp"].Reason == "" || caps["mcp_bridge"].Configured || caps["web_search"].Ready || caps["web_search"].Reason == "" {
		t.Errorf("capabilities = %+v", st.Capabilities)
	}
	if st.Confinement.Driver != "fake" || st.Confinement.Egress != "deny" {
		t.Errorf("confinement = %+v", st.Confinement)
	}
}

func TestStatelessProtocolRevision(t *testing.T) {
	f := newFixture(t, nil)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := f.g.Server().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("negotiated %s, want 2026-07-28", v)
	}
	r := structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"argv": []string{"echo", "modern"}}))
	if r.Stdout.Text != "modern\n" {
		t.Errorf("exec over 2026-07-28: %+v", r)
	}
}

func TestCommandFallsBackToShWithoutBash(t *testing.T) {
	f := newFixture(t, nil)
	f.backend.StartErr = func(p sandbox.ProcessSpec) error {
		if p.Argv[0] == "bash" {
			return sandbox.ErrNotFound
		}
		return nil
	}
	cs := f.connect(t, nil)
	for range 2 {
		r := structured[gateway.ExecOutput](t, call(t, cs, "exec", map[string]any{"command": "echo via $0"}))
		if r.Stdout.Text != "via sh\n" {
			t.Errorf("without bash: %q", r.Stdout.Text)
		}
	}
	var shells []string
	for _, p := range f.backend.Started() {
		shells = append(shells, p.Argv[0])
	}
	if strings.Join(shells, " ") != "sh sh" {
		t.Errorf("started %v: bash is tried once (refused before starting), then sh for every line", shells)
	}
}

package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/lsp"
	"github.com/dsh-dev/dsh/mcp/bridge"
	"github.com/dsh-dev/dsh/mcp/gateway"
)

// fakeLSP answers queries from a table and records what it was asked.
type fakeLSP struct {
	w       *execworld.World
	answer  func(ctx context.Context, q lsp.Query) (*lsp.Result, error)
	mu      sync.Mutex
	queries []lsp.Query
	closed  bool
}

func (f *fakeLSP) Query(ctx context.Context, q lsp.Query) (*lsp.Result, error) {
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	return f.answer(ctx, q)
}

func (f *fakeLSP) Status(context.Context) []lsp.ServerStatus {
	return []lsp.ServerStatus{
		{ID: "gopls", Command: "gopls", Extensions: []string{".go"}, State: lsp.StateReady},
		{ID: "pyright", Command: "pyright-langserver", Extensions: []string{".py"}, State: lsp.StateConfigured, Why: "pyright-langserver is not found in the world"},
	}
}

func (f *fakeLSP) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return execworld.ErrClosed
	}
	f.closed = true
	return nil
}

func (f *fakeLSP) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// lspFixture is a gateway whose lsp factory makes fakeLSPs, recorded.
func lspFixture(t *testing.T, timeout, idle time.Duration, answer func(ctx context.Context, q lsp.Query) (*lsp.Result, error)) (*fixture, func() []*fakeLSP) {
	var mu sync.Mutex
	var made []*fakeLSP
	f := newFixture(t, func(o *gateway.Options) {
		o.LSPTimeout, o.IdleTimeout = timeout, idle
		o.LSP = func(w *execworld.World) (gateway.LSPClient, error) {
			c := &fakeLSP{w: w, answer: answer}
			mu.Lock()
			made = append(made, c)
			mu.Unlock()
			return c, nil
		}
	})
	return f, func() []*fakeLSP {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(made)
	}
}

func TestLSPTool(t *testing.T) {
	var locs []lsp.Location
	for i := range 103 {
		locs = append(locs, lsp.Location{Path: "/ws/a.go", Rel: "a.go", Line: i + 1, Column: 6, EndLine: i + 1, EndColumn: 11})
	}
	f, made := lspFixture(t, 0, 0, func(_ context.Context, q lsp.Query) (*lsp.Result, error) {
		switch q.Op {
		case lsp.Definition:
			return &lsp.Result{Kind: lsp.KindLocations, Server: "gopls", Locations: locs[:1]}, nil
		case lsp.References:
			return &lsp.Result{Kind: lsp.KindLocations, Server: "gopls", Locations: locs}, nil
		case lsp.Hover:
			return &lsp.Result{Kind: lsp.KindHover, Server: "gopls", Hover: "func Hello() string", HasHover: true}, nil
		}
		return nil, &lsp.Error{Code: lsp.CodeIndexing, Msg: "gopls is still indexing; try again"}
	})
	cs := f.connect(t, nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var tool *mcp.Tool
	for _, tl := range tools.Tools {
		if tl.Name == "lsp" {
			tool = tl
		}
	}
	if tool == nil {
		t.Fatal("no lsp tool listed with Options.LSP set")
	}
	if a := tool.Annotations; a == nil || !a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
		t.Errorf("lsp annotations = %+v, want read-only, not open-world", tool.Annotations)
	}
	schema, _ := json.Marshal(tool.InputSchema)
	for _, want := range []string{`"enum":["definition","references","implementation","hover"]`, `"minimum":1`, `"column"`, `"file"`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("input schema %s lacks %s", schema, want)
		}
	}
	if tool.OutputSchema == nil {
		t.Error("lsp has no output schema")
	}

	r := call(t, cs, "lsp", map[string]any{"operation": "definition", "file": "b.go", "line": 3, "column": 43})
	def := structured[gateway.LSPOutput](t, r)
	want := gateway.LSPOutput{Kind: "locations", Server: "gopls", Locations: []gateway.LSPLocation{{Path: "a.go", Line: 1, Column: 6, EndLine: 1, EndColumn: 11}}}
	if !equalJSON(def, want) || text(r) != "a.go:1:6" {
		t.Errorf("definition = %+v, %q; want %+v, a.go:1:6", def, text(r), want)
	}
	refs := structured[gateway.LSPOutput](t, call(t, cs, "lsp", map[string]any{"operation": "references", "file": "b.go", "line": 3, "column": 43}))
	if len(refs.Locations) != lsp.DefaultMaxLocations || refs.Omitted != 3 {
		t.Errorf("references: %d locations, %d omitted; want the cap of %d and 3 omitted", len(refs.Locations), refs.Omitted, lsp.DefaultMaxLocations)
	}
	r = call(t, cs, "lsp", map[string]any{"operation": "hover", "file": "b.go", "line": 3, "column": 43})
	if h := structured[gateway.LSPOutput](t, r); h.Kind != "hover" || h.Contents == nil || *h.Contents != "func Hello() string" || text(r) != "func Hello() string" {
		t.Errorf("hover = %+v, %q", h, text(r))
	}
	wantToolError(t, call(t, cs, "lsp", map[string]any{"operation": "implementation", "file": "b.go", "line": 1, "column": 1}), "LSP_INDEXING", "try again")

	// One client for the session's world, asked with the 1-based
	// position as given.
	clients := made()
	if len(clients) != 1 {
		t.Fatalf("%d LSP clients made for one world, want 1", len(clients))
	}
	if q := clients[0].queries[0]; q.Op != lsp.Definition || q.File != "b.go" || q.Line != 3 || q.Column != 43 {
		t.Errorf("query = %+v", q)
	}

	// status lists the world's language servers.
	st := structured[gateway.StatusOutput](t, call(t, cs, "status", nil))
	if len(st.LSP) != 2 || st.LSP[0].ID != "gopls" || st.LSP[0].State != "ready" || st.LSP[1].State != "configured" || st.LSP[1].Why == "" {
		t.Errorf("status lsp = %+v", st.LSP)
	}
	if c := capability(st, "lsp"); !c.Configured || !c.Ready || !strings.Contains(c.Reason, "gopls") {
		t.Errorf("lsp capability = %+v", c)
	}

	// The client goes with the world.
	cs.Close()
	waitFor(t, "the LSP client is closed with the session's world", clients[0].isClosed)
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func capability(st gateway.StatusOutput, name string) gateway.Capability {
	for _, c := range st.Capabilities {
		if c.Name == name {
			return c
		}
	}
	return gateway.Capability{}
}

func TestLSPToolBudgetIdleAndStatus(t *testing.T) {
	f, made := lspFixture(t, 200*time.Millisecond, 100*time.Millisecond, func(ctx context.Context, q lsp.Query) (*lsp.Result, error) {
		<-ctx.Done()
		return nil, &lsp.Error{Code: lsp.CodeTimeout, Msg: "the query ran out of time", Err: context.Cause(ctx)}
	})
	cs := f.connect(t, nil)
	begin := time.Now()
	wantToolError(t, call(t, cs, "lsp", map[string]any{"operation": "hover", "file": "a.go", "line": 1, "column": 1}), "LSP_TIMEOUT")
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("the call took %v past a 200ms budget", d)
	}
	// The idle timeout closes the world, and its LSP client with it.
	if len(made()) != 1 {
		t.Fatalf("%d LSP clients, want 1", len(made()))
	}
	waitFor(t, "the idle world's LSP client is closed", made()[0].isClosed)

	// Status of a session whose world is not open opens none.
	f2, made2 := lspFixture(t, 0, 0, nil)
	cs2 := f2.connect(t, nil)
	st := structured[gateway.StatusOutput](t, call(t, cs2, "status", nil))
	if c := capability(st, "lsp"); !c.Configured || c.Ready || st.World != "" || len(made2()) != 0 {
		t.Errorf("status before any world: lsp %+v, world %q, %d clients", c, st.World, len(made2()))
	}
}

// memUpstream serves srv over in-memory transports, one connection per
// Start.
type memUpstream struct {
	srv    *mcp.Server
	starts atomic.Int32
}

func (u *memUpstream) Start(ctx context.Context) (*bridge.Link, error) {
	u.starts.Add(1)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := u.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	return &bridge.Link{Transport: ct, Stop: func(context.Context) error { go ss.Close(); return nil }}, nil
}

// upstream is a go-sdk server with tools echo, fail and slow; slow
// reports progress and waits until it is cancelled (then cancelled is
// closed).
func upstream(cancelled chan<- struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	s.AddTool(&mcp.Tool{Name: "echo", Description: "echoes", InputSchema: json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + string(req.Params.Arguments)}}, StructuredContent: map[string]any{"got": json.RawMessage(req.Params.Arguments)}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}, IsError: true}, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half way"})
			}
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		})
	return s
}

func addTool(s *mcp.Server, name string) {
	s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
		})
}

func startBridge(t *testing.T, servers ...bridge.Server) *bridge.Bridge {
	t.Helper()
	for i := range servers {
		servers[i].ProtocolVersion = "2025-11-25"
		servers[i].StartupTimeout = 5 * time.Second
	}
	b, err := bridge.New(servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		if strings.HasPrefix(tl.Name, "mcp__") {
			names = append(names, tl.Name)
		}
	}
	slices.Sort(names)
	return names
}

func TestBridgedTools(t *testing.T) {
	cancelled := make(chan struct{})
	srv := upstream(cancelled)
	up := &memUpstream{srv: srv}
	b := startBridge(t, bridge.Server{Name: "up", Upstream: up})
	f := newFixture(t, func(o *gateway.Options) { o.Bridge = b })
	var changed atomic.Int32
	progress := make(chan *mcp.ProgressNotificationParams, 4)
	cs := f.connect(t, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params
		},
	})

	// The first tools/list has the bridged tools, with their schemas.
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var echo *mcp.Tool
	var bridgedNames []string
	for _, tl := range res.Tools {
		if strings.HasPrefix(tl.Name, "mcp__") {
			bridgedNames = append(bridgedNames, tl.Name)
		}
		if tl.Name == "mcp__up__echo" {
			echo = tl
		}
	}
	slices.Sort(bridgedNames)
	if want := []string{"mcp__up__echo", "mcp__up__fail", "mcp__up__slow"}; !slices.Equal(bridgedNames, want) {
		t.Fatalf("first tools/list has bridged tools %q, want %q", bridgedNames, want)
	}
	if s, _ := json.Marshal(echo.InputSchema); !strings.Contains(string(s), `"msg"`) || echo.Description != "echoes" {
		t.Errorf("mcp__up__echo: schema %s, description %q: want the upstream's", s, echo.Description)
	}

	// A call reaches the upstream under its raw name; content and
	// structured content come back as sent.
	r := call(t, cs, "mcp__up__echo", map[string]any{"msg": "hi"})
	if r.IsError || text(r) != `echo: {"msg":"hi"}` {
		t.Errorf("mcp__up__echo = %v, %q", r.IsError, text(r))
	}
	if sc, _ := json.Marshal(r.StructuredContent); string(sc) != `{"got":{"msg":"hi"}}` {
		t.Errorf("structuredContent = %s", sc)
	}
	r = call(t, cs, "mcp__up__fail", nil)
	if !r.IsError || text(r) != "it broke" {
		t.Errorf("mcp__up__fail = isError %v, %q; want the upstream's error result", r.IsError, text(r))
	}

	// Progress comes through; cancelling the call cancels it upstream.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "mcp__up__slow", Arguments: map[string]any{}}
		p.SetProgressToken("tok-1")
		_, err := cs.CallTool(ctx, p)
		done <- err
	}()
	select {
	case p := <-progress:
		if p.ProgressToken != "tok-1" || p.Message != "half way" || p.Progress != 1 || p.Total != 2 {
			t.Errorf("progress = %+v, want the client's token and the upstream's progress", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification reached the client")
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the client's call did not cancel the upstream's")
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call = %v", err)
	}

	// A change of the upstream's tools reaches the client.
	addTool(srv, "added")
	waitFor(t, "list_changed reaches the client", func() bool { return changed.Load() > 0 })
	waitFor(t, "the added tool is listed", func() bool { return slices.Contains(toolNames(t, cs), "mcp__up__added") })
	if r := call(t, cs, "mcp__up__added", nil); r.IsError || text(r) != "added" {
		t.Errorf("mcp__up__added = %q", text(r))
	}
	n := changed.Load()
	srv.RemoveTools("fail")
	waitFor(t, "the removed tool is gone", func() bool { return !slices.Contains(toolNames(t, cs), "mcp__up__fail") })
	waitFor(t, "a second list_changed", func() bool { return changed.Load() > n })

	// status reports the bridge's servers.
	st := structured[gateway.StatusOutput](t, call(t, cs, "status", nil))
	if c := capability(st, "mcp_bridge"); !c.Configured || !c.Ready {
		t.Errorf("mcp_bridge capability = %+v", c)
	}
	if len(st.MCPServers) != 1 || st.MCPServers[0].Name != "up" || st.MCPServers[0].State != "ready" || st.MCPServers[0].Tools != 3 {
		t.Errorf("mcp_servers = %+v", st.MCPServers)
	}
	// Each bridged call has its audit line.
	var echoLine, failLine bool
	for _, l := range strings.Split(f.audit.String(), "\n") {
		echoLine = echoLine || strings.Contains(l, `"tool":"mcp__up__echo"`) && strings.Contains(l, `"status":"ok"`)
		failLine = failLine || strings.Contains(l, `"tool":"mcp__up__fail"`) && strings.Contains(l, `"status":"tool_error"`) && strings.Contains(l, `"error":"it broke"`)
	}
	if !echoLine || !failLine {
		t.Errorf("audit lacks the bridged calls:\n%s", f.audit.String())
	}
}

// A server given up takes its tools away from connected clients.
func TestBridgedToolsGoWhenTheServerFails(t *testing.T) {
	srv := upstream(make(chan struct{}))
	up := &memUpstream{srv: srv}
	b := startBridge(t, bridge.Server{Name: "up", Upstream: up, Reconnect: bridge.Reconnect{Disabled: true}})
	f := newFixture(t, func(o *gateway.Options) { o.Bridge = b })
	cs := f.connect(t, nil)
	if len(toolNames(t, cs)) != 3 {
		t.Fatalf("tools = %q", toolNames(t, cs))
	}
	// Closing the bridge stops its servers: their tools go.
	b.Close()
	waitFor(t, "the tools of a closed bridge go", func() bool { return len(toolNames(t, cs)) == 0 })
}

// The bridge's prompts and resources are served too, and follow the
// upstream's changes.
func TestBridgedPromptsAndResources(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{
		Prompts: &mcp.PromptCapabilities{ListChanged: true}, Resources: &mcp.ResourceCapabilities{ListChanged: true},
	}})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
	})
	readme := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "contents of " + req.Params.URI}}}, nil
	}
	srv.AddResource(&mcp.Resource{URI: "file:///readme", Name: "readme"}, readme)
	// One that would shadow the gateway's own is not served.
	srv.AddResource(&mcp.Resource{URI: gateway.StatusURI, Name: "fake-status"}, readme)
	b := startBridge(t, bridge.Server{Name: "up", Upstream: &memUpstream{srv: srv}})
	f := newFixture(t, func(o *gateway.Options) { o.Bridge = b })
	var promptsChanged, resourcesChanged atomic.Int32
	cs := f.connect(t, &mcp.ClientOptions{
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { promptsChanged.Add(1) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resourcesChanged.Add(1) },
	})
	ctx := context.Background()
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__up__greet", Arguments: map[string]string{"who": "world"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := pr.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "hello world" {
		t.Errorf("prompt = %+v", pr.Messages[0].Content)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///readme"})
	if err != nil || rr.Contents[0].Text != "contents of file:///readme" {
		t.Fatalf("read file:///readme = %+v, %v", rr, err)
	}
	st, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: gateway.StatusURI})
	if err != nil || !strings.Contains(st.Contents[0].Text, `"capabilities"`) {
		t.Errorf("dsh://status is shadowed by the upstream's: %+v, %v", st, err)
	}

	srv.AddPrompt(&mcp.Prompt{Name: "bye"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	srv.RemoveResources("file:///readme")
	waitFor(t, "prompt and resource list_changed reach the client", func() bool { return promptsChanged.Load() > 0 && resourcesChanged.Load() > 0 })
	waitFor(t, "the new prompt is listed and the removed resource gone", func() bool {
		ps, err1 := cs.ListPrompts(ctx, nil)
		rs, err2 := cs.ListResources(ctx, nil)
		if err1 != nil || err2 != nil {
			return false
		}
		hasBye := slices.ContainsFunc(ps.Prompts, func(p *mcp.Prompt) bool { return p.Name == "mcp__up__bye" })
		hasReadme := slices.ContainsFunc(rs.Resources, func(r *mcp.Resource) bool { return r.URI == "file:///readme" })
		return hasBye && !hasReadme
	})
}

// A lazy server is listed from its cached catalog in the first
// tools/list and started on its first call.
func TestBridgedLazyServerFromTheCache(t *testing.T) {
	cache := t.TempDir()
	srv := upstream(make(chan struct{}))
	up := &memUpstream{srv: srv}
	// An eager run caches the catalog.
	b, err := bridge.New([]bridge.Server{{Name: "up", Upstream: up, CacheKey: "k", ProtocolVersion: "2025-11-25"}}, &bridge.Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Close()
	starts := up.starts.Load()
	// The live catalog will differ from the cached one.
	addTool(srv, "extra")

	b, err = bridge.New([]bridge.Server{{Name: "up", Upstream: up, CacheKey: "k", ProtocolVersion: "2025-11-25", Lazy: true}}, &bridge.Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *gateway.Options) { o.Bridge = b })
	cs := f.connect(t, nil)
	if got, want := toolNames(t, cs), []string{"mcp__up__echo", "mcp__up__fail", "mcp__up__slow"}; !slices.Equal(got, want) {
		t.Fatalf("first tools/list with a lazy server = %q, want its cached %q", got, want)
	}
	if up.starts.Load() != starts {
		t.Fatal("the lazy server was started to be listed")
	}
	if r := call(t, cs, "mcp__up__echo", map[string]any{"a": 1}); r.IsError || text(r) != `echo: {"a":1}` {
		t.Errorf("first call of a lazy server = %q", text(r))
	}
	if up.starts.Load() != starts+1 {
		t.Errorf("%d starts for the first call of a lazy server, want 1", up.starts.Load()-starts)
	}
	// The live tools replace the cached ones (clients are told), and
	// status reports the drift.
	waitFor(t, "the live tool is listed", func() bool { return slices.Contains(toolNames(t, cs), "mcp__up__extra") })
	st := structured[gateway.StatusOutput](t, call(t, cs, "status", nil))
	if len(st.MCPServers) != 1 || len(st.MCPServers[0].Drift) == 0 || !strings.Contains(strings.Join(st.MCPServers[0].Drift, " "), "extra") {
		t.Errorf("status of a server whose live tools differ from its cache: %+v", st.MCPServers)
	}
}

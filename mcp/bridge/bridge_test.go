package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestNewReportsEveryProblem(t *testing.T) {
	up := &fakeUpstream{}
	_, err := New([]Server{
		{Name: "ok", Upstream: up},
		{Name: "bad.name", Upstream: up},
		{Name: "ok", Upstream: up},
		{Name: strings.Repeat("x", 33)},
		{Name: "pat", Upstream: up, ToolDeny: []string{"["}},
	}, nil)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want a *ConfigError", err)
	}
	want := []string{
		`servers[1].name: "bad.name" must be`,
		`servers[2].name: "ok" is already the name of servers[0]`,
		`servers[3].name: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" must be`,
		`servers[3].upstream: none given`,
		`servers[4].tools.deny[0]: "[" is not a valid pattern`,
	}
	if len(ce.Problems) != len(want) {
		t.Fatalf("problems = %q, want %d", ce.Problems, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(ce.Problems[i], w) {
			t.Errorf("problem %d = %q, want it to start with %q", i, ce.Problems[i], w)
		}
	}
}

func TestToolsUnderPublicNamesRawOnTheWire(t *testing.T) {
	up := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "read.file", "search") }}
	b := start(t, Server{Name: "fs", Upstream: up})
	if got, want := publicNames(b), []string{"mcp__fs__read_file_a70c27002fc8", "mcp__fs__search"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %q, want %q", got, want)
	}
	res, err := call(t, b, "mcp__fs__read_file_a70c27002fc8", `{"path":"a"}`)
	if err != nil {
		t.Fatal(err)
	}
	// The echo tool answers with the name it received: the raw one.
	if want := `read.file: {"path":"a"}`; res.Text != want {
		t.Errorf("Text = %q, want %q", res.Text, want)
	}
	// Arguments that are no object are sent as {}.
	res, err = call(t, b, "mcp__fs__search", `[1,2]`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `search: {}`; res.Text != want {
		t.Errorf("Text for non-object args = %q, want %q", res.Text, want)
	}
	if _, err := call(t, b, "mcp__fs__nope", `{}`); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Call(unknown) = %v, want ErrUnknownTool", err)
	}
}

func TestToolAllowDeny(t *testing.T) {
	up := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "read_file", "read_dir", "write_file") }}
	b := start(t, Server{Name: "fs", Upstream: up, ToolAllow: []string{"read_*", "write_file"}, ToolDeny: []string{"read_dir"}})
	if got, want := publicNames(b), []string{"mcp__fs__read_file", "mcp__fs__write_file"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %q, want %q", got, want)
	}
}

func TestSyncDrainsEveryPage(t *testing.T) {
	var names []string
	for i := range 7 {
		names = append(names, fmt.Sprintf("t%d", i))
	}
	up := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(&mcp.ServerOptions{PageSize: 2}, names...) }}
	b := start(t, Server{Name: "p", Upstream: up})
	if got := len(b.Tools()); got != 7 {
		t.Fatalf("%d tools after a sync over pages of 2, want 7", got)
	}
}

func TestListChangedResyncs(t *testing.T) {
	var srv *mcp.Server
	up := &fakeUpstream{build: func(int) *mcp.Server {
		srv = echoServer(&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}}, "a")
		return srv
	}}
	b := start(t, Server{Name: "s", Upstream: up})
	var events atomic.Int32
	defer b.Subscribe(func(ev Event) {
		if ev.Kind == ToolsChanged && ev.Server == "s" {
			events.Add(1)
		}
	})()
	addEcho(srv, "b") // the server sends notifications/tools/list_changed
	waitFor(t, "the new tool is listed", func() bool { return len(b.Tools()) == 2 })
	if events.Load() == 0 {
		t.Error("no ToolsChanged event for the re-sync")
	}
	srv.RemoveTools("a")
	waitFor(t, "the removed tool is gone", func() bool { return slices.Equal(publicNames(b), []string{"mcp__s__b"}) })
}

// listOverride makes tools/list answer with f's result once f returns
// one, else as the server would.
func listOverride(f func(n int) (*mcp.ListToolsResult, error)) mcp.Middleware {
	var calls atomic.Int32
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				if r, err := f(int(calls.Add(1))); r != nil || err != nil {
					return r, err
				}
			}
			return next(ctx, method, req)
		}
	}
}

func TestInvalidListKeepsPreviousGeneration(t *testing.T) {
	for _, tt := range []struct {
		name string
		list func() (*mcp.ListToolsResult, error)
		want string
	}{
		{"duplicate", func() (*mcp.ListToolsResult, error) {
			tool := &mcp.Tool{Name: "x", InputSchema: map[string]any{"type": "object"}}
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{tool, tool}}, nil
		}, `tool "x" is listed twice`},
		{"fetch failure", func() (*mcp.ListToolsResult, error) {
			return nil, errors.New("database down")
		}, "database down"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var srv *mcp.Server
			up := &fakeUpstream{build: func(int) *mcp.Server {
				srv = echoServer(&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}}, "a")
				srv.AddReceivingMiddleware(listOverride(func(n int) (*mcp.ListToolsResult, error) {
					if n == 1 {
						return nil, nil
					}
					return tt.list()
				}))
				return srv
			}}
			b := start(t, Server{Name: "s", Upstream: up})
			srvState := b.server("s")
			sess, _ := srvState.waitReady(context.Background())
			err := srvState.sync(context.Background(), sess, srvState.epoch, kindTools)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("sync = %v, want an error containing %q", err, tt.want)
			}
			if got := publicNames(b); !slices.Equal(got, []string{"mcp__s__a"}) {
				t.Errorf("tools after a refused list = %q, want the previous generation", got)
			}
		})
	}
}

func TestCrossServerConflictRollsBack(t *testing.T) {
	upX := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "_b", "other") }}
	upY := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "b", "more") }}
	b := start(t, Server{Name: "x", Upstream: upX})
	b2 := b.server("x")
	_ = b2
	// A second server whose tool spells the same public name: it gets no
	// tools at all, and the first keeps its own.
	y := newServer(b, Server{Name: "x_", Upstream: upY, StartupTimeout: 5 * time.Second, Reconnect: Reconnect{Disabled: true}})
	b.servers = append(b.servers, y)
	y.ensureStarted()
	_, err := y.waitReady(context.Background())
	if err == nil || !strings.Contains(err.Error(), "has the public name mcp__x___b, which server x's tool \"_b\" holds") {
		t.Fatalf("conflicting server: %v, want the conflict named", err)
	}
	if got, want := publicNames(b), []string{"mcp__x___b", "mcp__x__other"}; !slices.Equal(got, want) {
		t.Errorf("tools = %q, want only x's %q", got, want)
	}
}

func TestResultMapping(t *testing.T) {
	srv := func(int) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "r"}, nil)
		s.AddTool(&mcp.Tool{Name: "rich", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{
					Content: []mcp.Content{
						&mcp.TextContent{Text: "one"},
						&mcp.TextContent{Text: "two"},
						&mcp.ResourceLink{Name: "readme", URI: "file:///w/README"},
						&mcp.ImageContent{MIMEType: "image/png", Data: []byte("abc")},
						&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("ab")},
						&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://x", Text: "t"}},
					},
					StructuredContent: map[string]any{"n": 1},
				}, nil
			})
		s.AddTool(&mcp.Tool{Name: "bad", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such file"}}}, nil
			})
		s.AddTool(&mcp.Tool{Name: "empty", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		return s
	}
	b := start(t, Server{Name: "r", Upstream: &fakeUpstream{build: srv}})

	res, err := call(t, b, "mcp__r__rich", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	wantText := "one\ntwo\nResource link: readme (file:///w/README)\n[image: image/png, 3 bytes]\n[audio: audio/wav, 2 bytes, not shown]\n[embedded resource: mem://x, not shown]"
	if res.Text != wantText {
		t.Errorf("Text:\n%s\nwant:\n%s", res.Text, wantText)
	}
	js, _ := json.Marshal(res)
	var got map[string]any
	json.Unmarshal(js, &got)
	if n := len(got["content"].([]any)); n != 6 {
		t.Errorf("canonical content has %d blocks, want all 6: %s", n, js)
	}
	if diff := cmp.Diff(map[string]any{"n": float64(1)}, got["structuredContent"]); diff != "" {
		t.Errorf("structuredContent (-want +got):\n%s", diff)
	}
	if got["isError"] != false {
		t.Errorf("isError = %v, want false", got["isError"])
	}

	res, err = call(t, b, "mcp__r__bad", `{}`)
	var te *ToolError
	if !errors.As(err, &te) || !res.IsError || err.Error() != "tool mcp__r__bad failed: no such file" {
		t.Errorf("isError result: %v (%+v), want a *ToolError with the text", err, res)
	}

	res, err = call(t, b, "mcp__r__empty", `{}`)
	if err != nil || res.Text != "(mcp__r__empty returned no model-visible content)" {
		t.Errorf("empty result: %q, %v", res.Text, err)
	}
}

// blockingServer's tool "wait" blocks until its request is cancelled,
// recording that; "ok" answers at once.
func blockingServer(cancelled chan<- struct{}, entered chan<- struct{}) func(int) *mcp.Server {
	return func(int) *mcp.Server {
		s := echoServer(nil, "ok")
		s.AddTool(&mcp.Tool{Name: "wait", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if entered != nil {
					entered <- struct{}{}
				}
				<-ctx.Done()
				if cancelled != nil {
					cancelled <- struct{}{}
				}
				return nil, ctx.Err()
			})
		return s
	}
}

func TestCallCancellationReachesTheServer(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	entered := make(chan struct{}, 1)
	b := start(t, Server{Name: "c", Upstream: &fakeUpstream{build: blockingServer(cancelled, entered)}})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.Call(ctx, "mcp__c__wait", nil, nil)
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Call = %v, want context.Canceled", err)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's handler was never cancelled: notifications/cancelled did not arrive")
	}
}

func TestCallTimeout(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	entered := make(chan struct{}, 1)
	b := start(t, Server{Name: "c", Upstream: &fakeUpstream{build: blockingServer(cancelled, entered)}, CallTimeout: 300 * time.Millisecond})
	_, err := call(t, b, "mcp__c__wait", `{}`)
	// The request reached the server before the timeout (else there is
	// nothing on the server to cancel).
	select {
	case <-entered:
	default:
		t.Fatal("the call timed out before the server saw it; the machine is too slow for this test's 300ms")
	}
	if err == nil || err.Error() != "tool mcp__c__wait: no result within the call timeout of 300ms" {
		t.Fatalf("Call past its timeout = %v", err)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the timed-out call was not cancelled on the server")
	}
}

func TestReconnectAfterCrash(t *testing.T) {
	up := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "a") }}
	b := start(t, Server{Name: "s", Upstream: up, Reconnect: fast})
	up.kill()
	waitFor(t, "a second connection is up", func() bool {
		starts, _, _ := up.counts()
		st, _ := state(b, "s")
		return starts == 2 && st == "ready"
	})
	if _, err := call(t, b, "mcp__s__a", `{}`); err != nil {
		t.Errorf("call after the reconnect: %v", err)
	}
}

func TestKilledMidCallFailsThatCallOnly(t *testing.T) {
	entered := make(chan struct{}, 1)
	up := &fakeUpstream{build: blockingServer(nil, entered)}
	b := start(t, Server{Name: "s", Upstream: up, Reconnect: fast})
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, b, "mcp__s__wait", `{}`)
		errc <- err
	}()
	<-entered
	up.kill()
	err := <-errc
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "lost during the call") {
		t.Fatalf("call whose server died = %v, want ErrUnavailable naming the lost connection", err)
	}
	// The next call waits out the reconnect and succeeds.
	if res, err := call(t, b, "mcp__s__ok", `{}`); err != nil || res.Text != "ok: {}" {
		t.Errorf("next call = %v, %v", res, err)
	}
}

func TestBudgetExhaustionUnregisters(t *testing.T) {
	up := &fakeUpstream{
		build: func(int) *mcp.Server { return echoServer(nil, "a") },
		fail: func(n int) error {
			if n > 0 {
				return errBoom
			}
			return nil
		},
	}
	b := start(t, Server{Name: "s", Upstream: up, Reconnect: fast})
	var gone atomic.Bool
	defer b.Subscribe(func(ev Event) {
		if ev.Kind == ToolsChanged && len(b.Tools()) == 0 {
			gone.Store(true)
		}
	})()
	up.kill()
	waitFor(t, "the server is given up", func() bool { st, _ := state(b, "s"); return st == "failed" })
	_, reason := state(b, "s")
	if want := "gave up after 3 reconnect attempts; last: starting: boom: no such program"; reason != want {
		t.Errorf("reason = %q, want %q", reason, want)
	}
	if starts, _, _ := up.counts(); starts != 4 {
		t.Errorf("%d starts, want the first and 3 reconnect attempts", starts)
	}
	if len(b.Tools()) != 0 || !gone.Load() {
		t.Errorf("tools after exhaustion: %q (event seen: %v), want none", publicNames(b), gone.Load())
	}
	if _, err := call(t, b, "mcp__s__a", `{}`); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("call after exhaustion = %v, want ErrUnknownTool", err)
	}
}

func TestCrashLoopExhaustsStableConnectionResets(t *testing.T) {
	// Every connection dies right after it is up: the budget is spent
	// although every start succeeds.
	up := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "a") }}
	b := start(t, Server{Name: "loop", Upstream: up, Reconnect: fast})
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if st, _ := state(b, "loop"); st == "ready" {
				up.kill()
			}
		}
	}()
	waitFor(t, "the crash loop is given up", func() bool { st, _ := state(b, "loop"); return st == "failed" })
	close(stop)
	if _, reason := state(b, "loop"); !strings.Contains(reason, "gave up after 3 reconnect attempts; last: connection lost") {
		t.Errorf("reason = %q", reason)
	}

	// Connections that stay up MaxDelay reset the budget: many more
	// outages than MaxAttempts, and the server is never given up.
	up2 := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "a") }}
	b2 := start(t, Server{Name: "stable", Upstream: up2, Reconnect: fast})
	for i := range 2 * fast.MaxAttempts {
		waitFor(t, "ready", func() bool { st, _ := state(b2, "stable"); return st == "ready" })
		time.Sleep(fast.MaxDelay + 5*time.Millisecond)
		up2.kill()
		waitFor(t, fmt.Sprintf("restart %d", i+1), func() bool { s, _, _ := up2.counts(); return s == i+2 })
	}
	waitFor(t, "ready", func() bool { st, _ := state(b2, "stable"); return st == "ready" })
}

func TestReconnectDelay(t *testing.T) {
	r := Reconnect{}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := r.Delay(i + 1); got != w {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, w)
		}
	}
}

// silent is an upstream that never answers: its transport's other end
// reads nothing.
type silent struct{ stopped atomic.Int32 }

func (s *silent) Start(context.Context) (*Link, error) {
	ct, _ := mcp.NewInMemoryTransports()
	return &Link{Transport: ct, Stop: func(context.Context) error { s.stopped.Add(1); return nil }}, nil
}

func TestStartupDeadline(t *testing.T) {
	up := &silent{}
	b, err := New([]Server{{Name: "mute", Upstream: up, Required: true, StartupTimeout: 100 * time.Millisecond, Reconnect: Reconnect{Disabled: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	begin := time.Now()
	err = b.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer within the startup timeout of 100ms") {
		t.Fatalf("Start with a server that never answers = %v", err)
	}
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("Start took %v past a 100ms deadline", d)
	}
	waitFor(t, "the silent server is stopped", func() bool { return up.stopped.Load() == 1 })
}

func TestStaleNotificationIgnored(t *testing.T) {
	var lists atomic.Int32
	up := &fakeUpstream{build: func(int) *mcp.Server {
		s := echoServer(nil, "a")
		s.AddReceivingMiddleware(listOverride(func(int) (*mcp.ListToolsResult, error) { lists.Add(1); return nil, nil }))
		return s
	}}
	b := start(t, Server{Name: "s", Upstream: up, Reconnect: fast})
	up.kill()
	waitFor(t, "reconnected", func() bool { s, _, _ := up.counts(); st, _ := state(b, "s"); return s == 2 && st == "ready" })
	before := lists.Load()
	b.server("s").resync(1, ToolsChanged) // the first connection's epoch
	if lists.Load() != before {
		t.Error("a list_changed of the replaced connection started a sync")
	}
	b.server("s").resync(2, ToolsChanged)
	if lists.Load() != before+1 {
		t.Error("a list_changed of the current connection started no sync")
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	up := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "a") }}
	b, _ := New([]Server{{Name: "s", Upstream: up}}, nil)
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if _, live, _ := up.counts(); live != 0 {
		t.Errorf("%d connections live after Close", live)
	}
	if _, err := call(t, b, "mcp__s__a", `{}`); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close = %v, want ErrClosed", err)
	}
}

func TestLazyServerStartsOnItsFirstCall(t *testing.T) {
	up := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "a") }}
	other := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "b") }}
	b := start(t, Server{Name: "lazy", Upstream: up, Lazy: true}, Server{Name: "lazy2", Upstream: other, Lazy: true})
	if st, _ := state(b, "lazy"); st != "idle" {
		t.Fatalf("lazy server before any call: %s, want idle", st)
	}
	if starts, _, _ := up.counts(); starts != 0 {
		t.Fatalf("lazy server started %d times before any call", starts)
	}
	res, err := call(t, b, "mcp__lazy__a", `{}`)
	if err != nil || res.Text != "a: {}" {
		t.Fatalf("first call of a lazy server = %+v, %v", res, err)
	}
	if starts, _, _ := other.counts(); starts != 0 {
		t.Errorf("a call of mcp__lazy__a started server lazy2")
	}
}

func TestStructuredContentValidatedAgainstOutputSchema(t *testing.T) {
	srv := func(int) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "o"}, nil)
		schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
		for name, sc := range map[string]any{"good": map[string]any{"n": 3}, "bad": map[string]any{"n": "three"}} {
			s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, OutputSchema: schema},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{StructuredContent: sc, Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}, nil
				})
		}
		return s
	}
	b := start(t, Server{Name: "o", Upstream: &fakeUpstream{build: srv}})
	if _, err := call(t, b, "mcp__o__good", `{}`); err != nil {
		t.Errorf("matching structuredContent: %v", err)
	}
	_, err := call(t, b, "mcp__o__bad", `{}`)
	if err == nil || !strings.Contains(err.Error(), "does not match the outputSchema") {
		t.Errorf("mismatching structuredContent: %v, want it refused", err)
	}
}

// stuck wraps an upstream whose processes never end when stopped.
type stuck struct {
	*fakeUpstream
	stops atomic.Int32
}

func (s *stuck) Start(ctx context.Context) (*Link, error) {
	l, err := s.fakeUpstream.Start(ctx)
	if err != nil {
		return nil, err
	}
	l.Stop = func(ctx context.Context) error {
		s.stops.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}
	return l, nil
}

func TestProcessThatWillNotStopIsNeverJoinedByASecond(t *testing.T) {
	if testing.Short() {
		t.Skip("waits StopTimeout")
	}
	up := &stuck{fakeUpstream: &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "a") }}}
	b, err := New([]Server{{Name: "s", Upstream: up, StartupTimeout: 5 * time.Second, Reconnect: fast}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	up.kill()
	deadline := time.Now().Add(StopTimeout + 5*time.Second)
	for {
		if st, _ := state(b, "s"); st == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the supervisor did not give up on a process that would not stop")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, reason := state(b, "s")
	if !strings.Contains(reason, "did not end within 5s") || !strings.Contains(reason, "two never run at once") {
		t.Errorf("reason = %q", reason)
	}
	if starts, _, _ := up.counts(); starts != 1 {
		t.Errorf("%d starts: another process was started while the first would not stop", starts)
	}
}

package bridge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func startCached(t *testing.T, dir string, s Server) *Bridge {
	t.Helper()
	if s.StartupTimeout == 0 {
		s.StartupTimeout = 5 * time.Second
	}
	b, err := New([]Server{s}, &Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCatalogCacheListsALazyServerBeforeItStarts(t *testing.T) {
	dir := t.TempDir()
	up := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "a", "b") }}
	first := startCached(t, dir, Server{Name: "s", Upstream: up, CacheKey: "cmd v1"})
	first.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "s-*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %q, want one", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode: %v, %v; want 0600", fi.Mode(), err)
	}

	up2 := &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "a", "b") }}
	b := startCached(t, dir, Server{Name: "s", Upstream: up2, CacheKey: "cmd v1", Lazy: true})
	if got := publicNames(b); !slices.Equal(got, []string{"mcp__s__a", "mcp__s__b"}) {
		t.Fatalf("tools of the lazy server before it starts = %q, want the cached ones", got)
	}
	if st := b.Status()[0]; st.State != "idle" || !st.Cached {
		t.Errorf("status before the first call: %+v, want idle and cached", st)
	}
	if starts, _, _ := up2.counts(); starts != 0 {
		t.Fatal("listing the cached catalog started the server")
	}
	if res, err := call(t, b, "mcp__s__b", `{}`); err != nil || res.Text != "b: {}" {
		t.Fatalf("first call of the lazy server = %+v, %v", res, err)
	}
	if st := b.Status()[0]; st.Cached || len(st.Drift) != 0 {
		t.Errorf("status after the live sync: %+v, want confirmed, no drift", st)
	}

	// Another configuration (another key) does not get this catalog.
	other := startCached(t, dir, Server{Name: "s", Upstream: &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "a") }}, CacheKey: "cmd v2", Lazy: true})
	if got := publicNames(other); len(got) != 0 {
		t.Errorf("a server with another cache key lists %q", got)
	}
}

func TestCatalogDriftIsReported(t *testing.T) {
	dir := t.TempDir()
	startCached(t, dir, Server{Name: "s", Upstream: &fakeUpstream{build: func(int) *mcp.Server { return echoServer(nil, "a", "gone") }}, CacheKey: "k"}).Close()

	changed := func(int) *mcp.Server {
		s := echoServer(nil, "new")
		s.AddTool(&mcp.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		return s
	}
	var events atomic.Int32
	b, err := New([]Server{{Name: "s", Upstream: &fakeUpstream{build: changed}, CacheKey: "k", StartupTimeout: 5 * time.Second}}, &Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	defer b.Subscribe(func(ev Event) {
		if ev.Kind == ToolsChanged {
			events.Add(1)
		}
	})()
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{`tool "a" has a new input schema`, `tool "gone" is gone`, `tool "new" is new`}
	if got := b.Status()[0].Drift; !slices.Equal(got, want) {
		t.Errorf("drift = %q, want %q", got, want)
	}
	if events.Load() == 0 {
		t.Error("the live generation replaced the cached one without a ToolsChanged event")
	}
	if got := publicNames(b); !slices.Equal(got, []string{"mcp__s__a", "mcp__s__new"}) {
		t.Errorf("tools after the live sync = %q", got)
	}
}

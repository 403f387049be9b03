package bridge

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/netpolicy"
)

// httpServer is a go-sdk Streamable HTTP server on loopback that records
// the Authorization header it gets.
func httpServer(t *testing.T) (*httptest.Server, *atomic.Value) {
	var auth atomic.Value
	auth.Store("")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer(nil, "hello") }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &auth
}

func netWorld(t *testing.T, allow ...string) func(context.Context) (*execworld.World, error) {
	p, err := netpolicy.New(netpolicy.Config{Default: "deny", Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := execworldtest.NewWorld(t, &execworld.Options{Net: p})
	return func(context.Context) (*execworld.World, error) { return w, nil }
}

func TestHTTPUpstreamThroughTheWorldsNet(t *testing.T) {
	srv, auth := httpServer(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	up := &HTTP{URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer t0k"}, World: netWorld(t, addr)}
	b := start(t, Server{Name: "web", Upstream: up})
	res, err := call(t, b, "mcp__web__hello", `{"x":1}`)
	if err != nil || res.Text != `hello: {"x":1}` {
		t.Fatalf("call over Streamable HTTP = %+v, %v", res, err)
	}
	if got := auth.Load(); got != "Bearer t0k" {
		t.Errorf("Authorization the server got = %q, want the configured header", got)
	}
}

func TestHTTPUpstreamNotAllowedIsRefusedBeforeConnecting(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	// The server's own port is not allowed, another one is.
	up := &HTTP{URL: srv.URL, World: netWorld(t, "127.0.0.1:1")}
	b, err := New([]Server{{Name: "web", Upstream: up, Required: true, StartupTimeout: 5 * time.Second, Reconnect: Reconnect{Disabled: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("Start with a destination the policy refuses = %v, want a denial", err)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error %v is not ErrUnavailable", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d request(s); the refusal must come before any connect", n)
	}
}

// A Streamable HTTP server that goes away and comes back on the same
// address: the supervisor notices the lost connection and reconnects.
func TestHTTPUpstreamReconnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return echoServer(nil, "hello") }, nil)
	serve := func(l net.Listener) *http.Server {
		s := &http.Server{Handler: handler}
		go s.Serve(l)
		return s
	}
	srv := serve(ln)
	up := &HTTP{URL: "http://" + addr, World: netWorld(t, addr)}
	b := start(t, Server{Name: "web", Upstream: up, Reconnect: Reconnect{InitialDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond, MaxAttempts: 20}})
	if _, err := call(t, b, "mcp__web__hello", `{}`); err != nil {
		t.Fatal(err)
	}
	srv.Close() // ends the standalone SSE stream: the session is lost
	waitFor(t, "the lost connection is noticed", func() bool { st, _ := state(b, "web"); return st != "ready" })
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	srv2 := serve(ln2)
	defer srv2.Close()
	waitFor(t, "reconnected", func() bool { st, _ := state(b, "web"); return st == "ready" })
	if res, err := call(t, b, "mcp__web__hello", `{"again":true}`); err != nil || res.Text != `hello: {"again":true}` {
		t.Errorf("call after the reconnect = %+v, %v", res, err)
	}
}

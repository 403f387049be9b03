package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
)

func TestProxyConnectionLimitPerWorld(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, netpolicy.Config{Allow: []string{echo.String()}}, nil, &Options{MaxConnsPerWorld: 1})
	resp, _, _ := send(t, env.addr, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("first connection: status %d", resp.StatusCode)
	}
	resp, _, _ = send(t, env.addr, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	if b := body(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(b, "limit 1") {
		t.Errorf("second connection: status %d %q, want 503 naming the limit", resp.StatusCode, b)
	}
}

func TestProxyShutdownDrainsTunnels(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, netpolicy.Config{Allow: []string{echo.String()}}, nil, nil)
	resp, c, br := send(t, env.addr, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	idle, err := net.Dial("tcp", env.addr) // a client that never sends a request
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()

	done := make(chan error, 1)
	go func() { done <- env.p.Shutdown(context.Background()) }()
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Error("an idle client connection stayed open after Shutdown began")
	}
	// Shutdown has begun (the idle connection was closed), yet the open
	// tunnel still carries bytes both ways.
	if _, err := io.WriteString(c, "still here"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("still here"))
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "still here" {
		t.Fatalf("tunnel during Shutdown: %q, %v", buf, err)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v while a tunnel was open", err)
	default:
	}
	if c2, err := net.Dial("tcp", env.addr); err == nil {
		c2.Close()
		t.Error("the proxy accepted a new connection after Shutdown began")
	}
	c.Close()
	if err := <-done; err != nil {
		t.Errorf("Shutdown = %v, want nil after the last tunnel closed", err)
	}
}

func TestProxyShutdownDeadlineClosesTunnels(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, netpolicy.Config{Allow: []string{echo.String()}}, nil, nil)
	resp, _, br := send(t, env.addr, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := env.p.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with an ended context = %v, want context.Canceled", err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("the tunnel stayed open after Shutdown's context ended")
	}
	recs := env.waitRecords(t, 1)
	if recs[0]["error"] != "proxy shut down" {
		t.Errorf("audit record %v, want error \"proxy shut down\"", recs[0])
	}
}

func TestProxyIdleTunnelIsClosed(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, netpolicy.Config{Allow: []string{echo.String()}}, nil, &Options{IdleTimeout: 50 * time.Millisecond})
	resp, _, br := send(t, env.addr, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// Nothing is sent: the proxy must end the tunnel by itself.
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("read a byte from an idle tunnel")
	}
	recs := env.waitRecords(t, 1)
	if recs[0]["error"] != "idle timeout" {
		t.Errorf("audit record %v, want error \"idle timeout\"", recs[0])
	}
}

func TestProxyServesUnixSocket(t *testing.T) {
	echo := echoServer(t)
	path := filepath.Join(t.TempDir(), "egress.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	env := startProxyOn(t, l, netpolicy.Config{Allow: []string{echo.String()}}, nil, nil)
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT over the unix socket: %v %v", resp, err)
	}
	payload := bytes.Repeat([]byte("0123456789"), 100_000)
	go func() { c.Write(payload); c.(*net.UnixConn).CloseWrite() }()
	got, err := io.ReadAll(br)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("echo over the unix socket tunnel: %d bytes, %v; want %d", len(got), err, len(payload))
	}
	recs := env.waitRecords(t, 1)
	if !strings.HasPrefix(recs[0]["client"].(string), "unix:") || recs[0]["bytes_down"] != float64(len(payload)) {
		t.Errorf("audit record %v, want a unix client and %d bytes down", recs[0], len(payload))
	}
}

// A proxy given no Dialer has the zero Dialer, whose nil Policy denies
// everything: it answers 403 and connects nowhere.
func TestProxyWithoutDialerDeniesEverything(t *testing.T) {
	echo := echoServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env := &proxyEnv{audit: &syncBuffer{}}
	p := New(nil, &Options{Audit: env.audit})
	go p.Serve(l)
	defer p.Close()
	for _, raw := range []string{
		"CONNECT " + echo.String() + " HTTP/1.1\r\n\r\n",
		"GET http://" + echo.String() + "/ HTTP/1.1\r\nHost: " + echo.String() + "\r\n\r\n",
	} {
		resp, c, _ := send(t, l.Addr().String(), raw)
		c.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", firstLine(raw), resp.StatusCode)
		}
	}
	for _, r := range env.waitRecords(t, 2) {
		if r["verdict"] != "deny" {
			t.Errorf("audit record %v, want verdict deny", r)
		}
	}
}

func TestProxyCloseIsIdempotent(t *testing.T) {
	env := startProxy(t, netpolicy.Config{}, nil, nil)
	if err := env.p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := env.p.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := env.p.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown after Close = %v", err)
	}
}

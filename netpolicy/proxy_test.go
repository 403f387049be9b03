package netpolicy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Every test here sends packets only to loopback listeners it started.
// Denied destinations are refused by the Dialer before any connect; the
// connect log (the Dialer's OnConnect hook) proves it, and as a safety
// net the hook refuses anything that is not loopback, so even a wrong
// proxy could not send a packet elsewhere.

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

// connectLog records the addresses the Dialer was about to connect to.
type connectLog struct {
	mu    sync.Mutex
	addrs []netip.AddrPort
}

func (l *connectLog) hook(_ string, ap netip.AddrPort) error {
	l.mu.Lock()
	l.addrs = append(l.addrs, ap)
	l.mu.Unlock()
	if !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("test safety net: refusing to connect to non-loopback %s", ap)
	}
	return nil
}

func (l *connectLog) list() []netip.AddrPort {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]netip.AddrPort(nil), l.addrs...)
}

// countingListener counts accepted connections, to prove the proxy never
// connected to itself.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

type proxyEnv struct {
	p        *Proxy
	addr     string
	ln       *countingListener
	audit    *syncBuffer
	connects *connectLog
	reg      *prometheus.Registry
	served   chan error
}

// startProxy serves a proxy for policy c on a loopback port; names
// resolve only through stub.
func startProxy(t testing.TB, c Config, stub StubResolver, opts *ProxyOptions) *proxyEnv {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startProxyOn(t, l, c, stub, opts)
}

func startProxyOn(t testing.TB, l net.Listener, c Config, stub StubResolver, opts *ProxyOptions) *proxyEnv {
	t.Helper()
	pol, err := New(c)
	if err != nil {
		t.Fatalf("New(%+v): %v", c, err)
	}
	env := &proxyEnv{audit: &syncBuffer{}, connects: &connectLog{}, reg: prometheus.NewRegistry(), served: make(chan error, 1)}
	m, err := NewProxyMetrics(env.reg)
	if err != nil {
		t.Fatal(err)
	}
	o := ProxyOptions{}
	if opts != nil {
		o = *opts
	}
	if o.World == "" {
		o.World = "test"
	}
	o.Audit, o.Metrics = env.audit, m
	if stub == nil {
		stub = StubResolver{}
	}
	d := &Dialer{Policy: pol, Resolver: stub, OnConnect: env.connects.hook}
	env.p = NewProxy(d, &o)
	env.ln = &countingListener{Listener: l}
	env.addr = l.Addr().String()
	go func() { env.served <- env.p.Serve(env.ln) }()
	t.Cleanup(func() {
		env.p.Close()
		if err := <-env.served; !errors.Is(err, ErrProxyClosed) {
			t.Errorf("Serve returned %v, want ErrProxyClosed", err)
		}
	})
	return env
}

// records parses the audit log, failing the test on any line that is not
// a JSON object.
func (e *proxyEnv) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(e.audit.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line %q is not JSON: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// waitRecords waits until the audit log has n lines: a record is written
// when its connection ends, which may be just after the client saw it.
func (e *proxyEnv) waitRecords(t *testing.T, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs := e.records(t)
		if len(recs) >= n || time.Now().After(deadline) {
			if len(recs) < n {
				t.Fatalf("audit log has %d records, want %d:\n%s", len(recs), n, e.audit.String())
			}
			return recs
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// echoServer echoes every connection until EOF, then closes it.
func echoServer(t *testing.T) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).AddrPort()
}

// seen is what the HTTP upstream reports about a request it received.
type seen struct {
	Host   string
	URI    string
	Method string
	Header http.Header
	Body   string
}

func httpUpstream(t *testing.T) (*httptest.Server, netip.AddrPort) {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Proxy-Authenticate", "Basic realm=upstream")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(seen{Host: r.Host, URI: r.RequestURI, Method: r.Method, Header: r.Header, Body: string(body)})
	}))
	t.Cleanup(s.Close)
	return s, s.Listener.Addr().(*net.TCPAddr).AddrPort()
}

// send writes raw to a new connection to the proxy and reads the
// response head.
func send(t *testing.T, proxyAddr, raw string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(raw + " x")[0]})
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", firstLine(raw), err)
	}
	return resp, c, br
}

func firstLine(raw string) string {
	l, _, _ := strings.Cut(raw, "\r\n")
	return l
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProxyConnectTunnelsBytesBothWays(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, Config{Allow: []string{echo.String()}},
		StubResolver{"echo.test": {echo.Addr()}}, nil)

	for _, target := range []string{echo.String(), fmt.Sprintf("echo.test:%d", echo.Port())} {
		t.Run(target, func(t *testing.T) {
			resp, c, br := send(t, env.addr, "CONNECT "+target+" HTTP/1.1\r\nHost: ignored.test:1\r\n\r\n")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("CONNECT %s: status %d (%s), want 200", target, resp.StatusCode, body(t, resp))
			}
			payload := make([]byte, 3<<20+17)
			rand.Read(payload)
			errc := make(chan error, 1)
			go func() {
				_, err := c.Write(payload)
				if err == nil {
					err = c.(*net.TCPConn).CloseWrite()
				}
				errc <- err
			}()
			got, err := io.ReadAll(br)
			if err != nil {
				t.Fatalf("reading the echo: %v", err)
			}
			if err := <-errc; err != nil {
				t.Fatalf("writing: %v", err)
			}
			if !bytes.Equal(got, payload) {
				t.Fatalf("echo through the tunnel: got %d bytes, want the %d sent", len(got), len(payload))
			}
		})
	}
	recs := env.waitRecords(t, 2)
	for _, r := range recs {
		if r["verdict"] != "allow" || r["method"] != "CONNECT" || r["addr"] != "127.0.0.1" ||
			r["bytes_up"] != float64(3<<20+17) || r["bytes_down"] != float64(3<<20+17) {
			t.Errorf("audit record %v: want an allowed CONNECT to 127.0.0.1 with %d bytes each way", r, 3<<20+17)
		}
	}
	if got := env.connects.list(); len(got) != 2 || got[0] != echo || got[1] != echo {
		t.Errorf("connects = %v, want two to %v", got, echo)
	}
}

func TestProxyDeniesBeforeConnect(t *testing.T) {
	echo := echoServer(t)
	stub := StubResolver{
		"intranet.test":  {netip.MustParseAddr("10.1.2.3")},
		"meta.test":      {netip.MustParseAddr("169.254.169.254")},
		"v6private.test": {netip.MustParseAddr("fd00::1")},
		"mapped.test":    {netip.MustParseAddr("::ffff:192.168.0.1")},
		"mixed.test":     {echo.Addr(), netip.MustParseAddr("10.0.0.1")},
		"loop.test":      {netip.MustParseAddr("127.0.0.2")},
	}
	// Default public: everything below is refused for what it is, not
	// for want of an allow entry. Only the echo server is allowed.
	env := startProxy(t, Config{Default: "public", Allow: []string{echo.String()}}, stub, nil)
	p := fmt.Sprint(echo.Port())
	targets := []string{
		"10.0.0.1:443", "172.16.0.1:443", "192.168.1.1:80", "100.64.0.1:443",
		"169.254.169.254:80", "169.254.170.2:80", "0.0.0.0:" + p, "127.0.0.1:22",
		"127.0.0.2:" + p, "224.0.0.1:80", "255.255.255.255:80", "198.18.0.1:80",
		"192.0.2.1:443", "203.0.113.9:443", "240.0.0.1:80",
		"[::1]:443", "[::]:" + p, "[fe80::1]:443", "[fc00::1]:443", "[ff02::1]:80", "[2001:db8::1]:443",
		"[::ffff:10.0.0.1]:443", "[::ffff:169.254.169.254]:80", "[::ffff:127.0.0.2]:" + p,
		"[64:ff9b::a00:1]:443", "[2002:a00:1::]:443", "[::10.0.0.1]:443",
		"2130706433:22", "0x7f000001:22", "127.1:22", "017700000001:22", "10.1:443",
		"metadata.google.internal:80", "METADATA.google.internal.:80", "instance-data:80",
		"intranet.test:443", "meta.test:80", "v6private.test:443", "mapped.test:443",
		"mixed.test:" + p, "loop.test:" + p, "localhost:22",
	}
	for _, target := range targets {
		for _, raw := range []string{
			"CONNECT " + target + " HTTP/1.1\r\nHost: " + echo.String() + "\r\n\r\n",
			"GET http://" + target + "/ HTTP/1.1\r\nHost: " + echo.String() + "\r\n\r\n",
		} {
			resp, _, _ := send(t, env.addr, raw)
			b := body(t, resp)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s: status %d (%q), want 403", firstLine(raw), resp.StatusCode, b)
				continue
			}
			if resp.Header.Get("X-Dsh-Deny-Reason") == "" || !strings.Contains(b, "denied") {
				t.Errorf("%s: 403 without a reason: header %q, body %q", firstLine(raw), resp.Header.Get("X-Dsh-Deny-Reason"), b)
			}
		}
	}
	if got := env.connects.list(); len(got) != 0 {
		t.Errorf("the proxy connected to %v; denied targets must be refused before any connect", got)
	}
	recs := env.waitRecords(t, 2*len(targets))
	for _, r := range recs {
		if r["verdict"] != "deny" || r["status"] != float64(403) || r["reason"] == "" || r["rule"] == "" {
			t.Errorf("audit record %v: want verdict deny, status 403, a reason and a rule", r)
		}
	}
}

func TestProxyRefusesItself(t *testing.T) {
	env := startProxy(t, Config{Allow: []string{"127.0.0.0/8", "::1"}},
		StubResolver{"self.test": {netip.MustParseAddr("127.0.0.1")}}, nil)
	_, port, _ := net.SplitHostPort(env.addr)
	for _, raw := range []string{
		"CONNECT " + env.addr + " HTTP/1.1\r\n\r\n",
		"CONNECT self.test:" + port + " HTTP/1.1\r\n\r\n",
		"CONNECT localhost:" + port + " HTTP/1.1\r\n\r\n",
		"CONNECT [::ffff:127.0.0.1]:" + port + " HTTP/1.1\r\n\r\n",
		"GET http://" + env.addr + "/metrics HTTP/1.1\r\n\r\n",
		"GET http://self.test:" + port + "/ HTTP/1.1\r\n\r\n",
	} {
		resp, _, _ := send(t, env.addr, raw)
		b := body(t, resp)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(b, "proxy-self") {
			t.Errorf("%s: status %d %q, want 403 by rule proxy-self", firstLine(raw), resp.StatusCode, b)
		}
	}
	if n := env.ln.n.Load(); n != 6 {
		t.Errorf("the proxy accepted %d connections for the 6 requests; it connected to itself", n)
	}
}

func TestProxyMalformedRequests(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, Config{Allow: []string{echo.String()}}, nil, &ProxyOptions{MaxHeaderBytes: 1024})
	e := echo.String()
	for _, tc := range []struct {
		raw  string
		want int
	}{
		{"GET / HTTP/1.1\r\nHost: " + e + "\r\n\r\n", 400},             // origin-form
		{"GET /x HTTP/1.1\r\n\r\n", 400},                               // origin-form, no Host
		{"OPTIONS * HTTP/1.1\r\nHost: " + e + "\r\n\r\n", 400},         // asterisk-form
		{"GET https://" + e + "/ HTTP/1.1\r\n\r\n", 400},               // https goes through CONNECT
		{"GET ftp://" + e + "/ HTTP/1.1\r\n\r\n", 400},                 // not http
		{"GET http://user@" + e + "/ HTTP/1.1\r\n\r\n", 400},           // userinfo
		{"GET http:///x HTTP/1.1\r\nHost: " + e + "\r\n\r\n", 400},     // no host in the target
		{"CONNECT 127.0.0.1 HTTP/1.1\r\nHost: " + e + "\r\n\r\n", 400}, // no port; Host must not fill in
		{"CONNECT / HTTP/1.1\r\nHost: " + e + "\r\n\r\n", 400},
		{"CONNECT http://" + e + " HTTP/1.1\r\n\r\n", 400},
		{"CONNECT user@" + e + " HTTP/1.1\r\n\r\n", 400},
		{"CONNECT 127.0.0.1:0 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT 127.0.0.1:http HTTP/1.1\r\n\r\n", 400},
		{"CONNECT :443 HTTP/1.1\r\n\r\n", 400},
		{"CONNECT exa%6dple.test:443 HTTP/1.1\r\n\r\n", 400},
		{"hello\r\n\r\n", 400},
		{"GET http://" + e + "/ HTTP/9.9\r\n\r\n", 505},
		{"GET http://" + e + "/ HTTP/1.1\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431},
	} {
		resp, _, _ := send(t, env.addr, tc.raw)
		b := body(t, resp)
		if resp.StatusCode != tc.want {
			t.Errorf("%.60q: status %d (%q), want %d", firstLine(tc.raw), resp.StatusCode, b, tc.want)
		}
		if !strings.HasPrefix(b, "dsh proxy: ") {
			t.Errorf("%.60q: body %q does not say who refused", firstLine(tc.raw), b)
		}
	}
	if got := env.connects.list(); len(got) != 0 {
		t.Errorf("the proxy connected to %v for malformed requests", got)
	}
	for _, r := range env.waitRecords(t, 19) {
		if r["verdict"] != "deny" {
			t.Errorf("audit record %v: want verdict deny", r)
		}
	}
}

func TestProxyHostHeaderCannotRedirect(t *testing.T) {
	_, up := httpUpstream(t)
	env := startProxy(t, Config{Allow: []string{up.String()}}, nil, nil)

	// The target says the upstream; the Host header names a private
	// address. The request goes to the target, with the target's Host.
	resp, _, _ := send(t, env.addr, "GET http://"+up.String()+"/x?y=1 HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	var s seen
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.Host != up.String() || s.URI != "/x?y=1" {
		t.Errorf("upstream saw Host %q URI %q, want Host %q URI /x?y=1", s.Host, s.URI, up.String())
	}

	// The target is private; a Host header naming the allowed upstream
	// does not help.
	resp, _, _ = send(t, env.addr, "GET http://10.0.0.1/ HTTP/1.1\r\nHost: "+up.String()+"\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want 403", resp.StatusCode)
	}
	if got := env.connects.list(); len(got) != 1 || got[0] != up {
		t.Errorf("connects = %v, want exactly one, to %v", got, up)
	}
	for _, r := range env.waitRecords(t, 2) {
		if r["verdict"] == "allow" && r["url"] != "http://"+up.String()+"/x" {
			t.Errorf("audit url = %v, want http://%s/x (the target's path, without the query)", r["url"], up)
		}
	}
}

func TestProxyForwardStripsHopByHopAndKeepsAlive(t *testing.T) {
	_, up := httpUpstream(t)
	env := startProxy(t, Config{Allow: []string{up.String()}}, nil, nil)
	c, err := net.Dial("tcp", env.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i, raw := range []string{
		"POST http://" + up.String() + "/a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-Private\r\nX-Private: secret\r\n" +
			"Proxy-Authorization: Basic Zm9vOmJhcg==\r\nProxy-Connection: keep-alive\r\nKeep-Alive: 300\r\nTe: trailers\r\n" +
			"Upgrade: websocket\r\nX-End-To-End: kept\r\nContent-Length: 5\r\n\r\nhello",
		"GET http://" + up.String() + "/b HTTP/1.1\r\nX-End-To-End: kept\r\n\r\n",
	} {
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on the kept-alive connection: %v", i, err)
		}
		var s seen
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		for _, h := range []string{"X-Private", "Proxy-Authorization", "Proxy-Connection", "Keep-Alive", "Te", "Upgrade"} {
			if v := s.Header.Get(h); v != "" {
				t.Errorf("request %d: upstream received hop-by-hop header %s: %q", i, h, v)
			}
		}
		if s.Header.Get("X-End-To-End") != "kept" {
			t.Errorf("request %d: end-to-end header lost: %v", i, s.Header)
		}
		if v := resp.Header.Get("Proxy-Authenticate"); v != "" {
			t.Errorf("request %d: client received the upstream's Proxy-Authenticate %q", i, v)
		}
		if i == 0 && (s.Method != "POST" || s.Body != "hello") {
			t.Errorf("upstream got %s with body %q, want POST hello", s.Method, s.Body)
		}
	}
	recs := env.waitRecords(t, 2)
	if recs[0]["bytes_up"] != float64(5) || recs[0]["bytes_down"].(float64) <= 0 || recs[0]["status"] != float64(200) {
		t.Errorf("audit record of the POST: %v, want bytes_up 5, bytes_down > 0, status 200", recs[0])
	}
}

func TestProxyAuditRecordFields(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, Config{Allow: []string{echo.String()}}, nil, &ProxyOptions{World: "w1"})
	resp, c, _ := send(t, env.addr, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	c.Close()
	resp, _, _ = send(t, env.addr, "CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 403 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	recs := env.waitRecords(t, 2)
	for _, r := range recs {
		for _, k := range []string{"time", "world", "client", "method", "host", "port", "addr", "verdict", "reason", "rule", "bytes_up", "bytes_down", "duration_ms"} {
			if _, ok := r[k]; !ok {
				t.Errorf("audit record %v lacks %q", r, k)
			}
		}
		if r["world"] != "w1" || !strings.HasPrefix(r["client"].(string), "127.0.0.1:") {
			t.Errorf("audit record %v: want world w1 and the client's address", r)
		}
		if _, err := time.Parse(time.RFC3339Nano, r["time"].(string)); err != nil {
			t.Errorf("audit time %v: %v", r["time"], err)
		}
	}
	// A tunnel's record is written when it ends, so the order may vary.
	if recs[0]["verdict"] == "deny" {
		recs[0], recs[1] = recs[1], recs[0]
	}
	if recs[0]["verdict"] != "allow" || recs[1]["verdict"] != "deny" || recs[1]["host"] != "10.0.0.1" || recs[1]["port"] != float64(443) {
		t.Errorf("audit records %v, want an allow and a deny of 10.0.0.1:443", recs)
	}
}

func TestProxyMetrics(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, Config{Allow: []string{echo.String()}}, nil, &ProxyOptions{World: "m"})
	resp, c, br := send(t, env.addr, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	io.ReadFull(br, buf)
	if got := metricValue(t, env.reg, "dsh_proxy_open_connections", map[string]string{"world": "m"}); got != 1 {
		t.Errorf("open connections with a tunnel up = %v, want 1", got)
	}
	c.Close()
	send(t, env.addr, "CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n")
	env.waitRecords(t, 2)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"dsh_proxy_decisions_total", map[string]string{"world": "m", "verdict": "allow", "reason": "allow"}, 1},
		{"dsh_proxy_decisions_total", map[string]string{"world": "m", "verdict": "deny", "reason": "special"}, 1},
		{"dsh_proxy_bytes_total", map[string]string{"world": "m", "direction": "up"}, 4},
		{"dsh_proxy_bytes_total", map[string]string{"world": "m", "direction": "down"}, 4},
	} {
		if got := metricValue(t, env.reg, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for metricValue(t, env.reg, "dsh_proxy_open_connections", map[string]string{"world": "m"}) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("open connections did not return to 0 after every client closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func metricValue(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
	}
	return 0
}

func TestProxyConnectionLimitPerWorld(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, Config{Allow: []string{echo.String()}}, nil, &ProxyOptions{MaxConnsPerWorld: 1})
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
	env := startProxy(t, Config{Allow: []string{echo.String()}}, nil, nil)
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
	env := startProxy(t, Config{Allow: []string{echo.String()}}, nil, nil)
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
	env := startProxy(t, Config{Allow: []string{echo.String()}}, nil, &ProxyOptions{IdleTimeout: 50 * time.Millisecond})
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
	env := startProxyOn(t, l, Config{Allow: []string{echo.String()}}, nil, nil)
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

func TestProxyRouteBySourceAddress(t *testing.T) {
	echo := echoServer(t)
	open := &Dialer{Policy: MustNew(Config{Allow: []string{echo.String()}}), OnConnect: (&connectLog{}).hook}
	closed := &Dialer{Policy: MustNew(SandboxDefault())}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	audit := &syncBuffer{}
	p := NewProxy(nil, &ProxyOptions{Audit: audit, Route: func(client net.Addr) (string, *Dialer, bool) {
		switch client.(*net.TCPAddr).AddrPort().Addr() {
		case netip.MustParseAddr("127.0.0.1"):
			return "open", open, true
		case netip.MustParseAddr("127.0.0.2"):
			return "closed", closed, true
		}
		return "", nil, false
	}})
	go p.Serve(l)
	defer p.Close()

	for _, tc := range []struct {
		from  string
		world string
		want  int
	}{{"127.0.0.1", "open", 200}, {"127.0.0.2", "closed", 403}, {"127.0.0.3", "", 403}} {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tc.from)}}
		c, err := d.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
		if err != nil {
			t.Fatalf("from %s: %v", tc.from, err)
		}
		if resp.StatusCode != tc.want {
			t.Errorf("CONNECT from %s: status %d, want %d", tc.from, resp.StatusCode, tc.want)
		}
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(audit.String(), "\n") < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for _, w := range []string{`"world":"open"`, `"world":"closed"`, `"reason":"unknown client"`} {
		if !strings.Contains(audit.String(), w) {
			t.Errorf("audit log lacks %s:\n%s", w, audit.String())
		}
	}
}

func TestProxyCloseIsIdempotent(t *testing.T) {
	env := startProxy(t, Config{}, nil, nil)
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

func TestProxyRetriesPooledConnectionClosedByUpstream(t *testing.T) {
	// An upstream that answers one request per connection and then closes
	// it, without saying so: the proxy pools the connection, finds it dead
	// on the next request, and sends that request again on a new one.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	up := l.Addr().String()
	env := startProxy(t, Config{Allow: []string{up}}, nil, nil)
	for i := range 3 {
		resp, _, _ := send(t, env.addr, "GET http://"+up+"/ HTTP/1.1\r\n\r\n")
		if b := body(t, resp); resp.StatusCode != 200 || b != "ok" {
			t.Fatalf("request %d: status %d %q, want 200 ok", i, resp.StatusCode, b)
		}
	}
	if n := accepted.Load(); n < 3 {
		t.Errorf("upstream accepted %d connections for 3 requests on one-shot connections", n)
	}
}

func TestProxyForwardBodies(t *testing.T) {
	_, up := httpUpstream(t)
	env := startProxy(t, Config{Allow: []string{up.String()}}, nil, nil)
	u := "http://" + up.String() + "/"

	t.Run("expect-100-continue", func(t *testing.T) {
		c, err := net.Dial("tcp", env.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "PUT "+u+" HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
		br := bufio.NewReader(c)
		// The client sends its body only after the proxy's 100.
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusContinue {
			t.Fatalf("interim response: %v %v, want 100 Continue", resp, err)
		}
		io.WriteString(c, "data")
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		var s seen
		json.NewDecoder(resp.Body).Decode(&s)
		if resp.StatusCode != 200 || s.Body != "data" || s.Header.Get("Expect") != "" {
			t.Errorf("status %d, upstream saw body %q and Expect %q; want 200, data and no Expect", resp.StatusCode, s.Body, s.Header.Get("Expect"))
		}
	})
	t.Run("chunked", func(t *testing.T) {
		resp, _, _ := send(t, env.addr, "POST "+u+" HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
		var s seen
		json.NewDecoder(resp.Body).Decode(&s)
		if resp.StatusCode != 200 || s.Body != "abcde" {
			t.Errorf("status %d, upstream saw body %q; want 200 and abcde", resp.StatusCode, s.Body)
		}
	})
	t.Run("http-1.0-client", func(t *testing.T) {
		resp, _, br := send(t, env.addr, "GET "+u+" HTTP/1.0\r\n\r\n")
		if resp.StatusCode != 200 || len(resp.TransferEncoding) != 0 {
			t.Errorf("status %d transfer-encoding %v, want 200 without chunking", resp.StatusCode, resp.TransferEncoding)
		}
		io.Copy(io.Discard, resp.Body)
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("after the response to an HTTP/1.0 client: %v, want the connection closed", err)
		}
	})
}

// FuzzProxyRequest feeds arbitrary bytes to a proxy whose policy allows
// nothing: whatever arrives, the proxy never connects anywhere, never
// answers 2xx, and answers with a well-formed HTTP/1.1 response or closes.
func FuzzProxyRequest(f *testing.F) {
	for _, seed := range []string{
		"CONNECT 127.0.0.1:80 HTTP/1.1\r\n\r\n",
		"CONNECT example.test:443 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\nhello",
		"GET http://127.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"POST http://[::1]:8080/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"GET http://0x7f.1/ HTTP/1.0\r\n\r\n",
		"CONNECT [::ffff:127.0.0.1]:22 HTTP/1.1\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"\r\n\r\n",
	} {
		f.Add(seed)
	}
	env := startProxy(f, Config{}, StubResolver{"example.test": {netip.MustParseAddr("127.0.0.1")}},
		&ProxyOptions{HeaderTimeout: 2 * time.Second})
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := net.Dial("tcp", env.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		go func() {
			io.WriteString(c, raw)
			c.(*net.TCPConn).CloseWrite()
		}()
		br := bufio.NewReader(c)
		if _, err := br.Peek(1); err != nil {
			return // closed without an answer: nothing was a request
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
		if err != nil {
			t.Fatalf("answer to %q is not an HTTP response: %v", raw, err)
		}
		if resp.StatusCode < 300 {
			t.Fatalf("answer to %q under a deny-all policy: %s", raw, resp.Status)
		}
		if got := env.connects.list(); len(got) != 0 {
			t.Fatalf("the proxy connected to %v under a deny-all policy (input %q)", got, raw)
		}
	})
}

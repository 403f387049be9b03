package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
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
func startProxy(t testing.TB, c netpolicy.Config, stub netpolicy.StubResolver, opts *Options) *proxyEnv {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startProxyOn(t, l, c, stub, opts)
}

func startProxyOn(t testing.TB, l net.Listener, c netpolicy.Config, stub netpolicy.StubResolver, opts *Options) *proxyEnv {
	t.Helper()
	pol, err := netpolicy.New(c)
	if err != nil {
		t.Fatalf("New(%+v): %v", c, err)
	}
	env := &proxyEnv{audit: &syncBuffer{}, connects: &connectLog{}, reg: prometheus.NewRegistry(), served: make(chan error, 1)}
	m, err := NewMetrics(env.reg)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.World == "" {
		o.World = "test"
	}
	o.Audit, o.Metrics = env.audit, m
	if stub == nil {
		stub = netpolicy.StubResolver{}
	}
	d := &netpolicy.Dialer{Policy: pol, Resolver: stub, OnConnect: env.connects.hook}
	env.p = New(d, &o)
	env.ln = &countingListener{Listener: l}
	env.addr = l.Addr().String()
	go func() { env.served <- env.p.Serve(env.ln) }()
	t.Cleanup(func() {
		env.p.Close()
		if err := <-env.served; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
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

package proxy

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
)

func TestProxyConnectTunnelsBytesBothWays(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, netpolicy.Config{Allow: []string{echo.String(), fmt.Sprintf("echo.test:%d", echo.Port())}},
		netpolicy.StubResolver{"echo.test": {echo.Addr()}}, nil)

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
	stub := netpolicy.StubResolver{
		"intranet.test":  {netip.MustParseAddr("10.1.2.3")},
		"meta.test":      {netip.MustParseAddr("169.254.169.254")},
		"v6private.test": {netip.MustParseAddr("fd00::1")},
		"mapped.test":    {netip.MustParseAddr("::ffff:192.168.0.1")},
		"mixed.test":     {echo.Addr(), netip.MustParseAddr("10.0.0.1")},
		"loop.test":      {netip.MustParseAddr("127.0.0.2")},
	}
	// Default public: everything below is refused for what it is, not
	// for want of an allow entry. Only the echo server is allowed.
	env := startProxy(t, netpolicy.Config{Default: "public", Allow: []string{echo.String()}}, stub, nil)
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
	env := startProxy(t, netpolicy.Config{Allow: []string{"self.test", "127.0.0.0/8", "::1"}},
		netpolicy.StubResolver{"self.test": {netip.MustParseAddr("127.0.0.1")}}, nil)
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
	env := startProxy(t, netpolicy.Config{Allow: []string{echo.String()}}, nil, &Options{MaxHeaderBytes: 1024})
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
	env := startProxy(f, netpolicy.Config{}, netpolicy.StubResolver{"example.test": {netip.MustParseAddr("127.0.0.1")}},
		&Options{HeaderTimeout: 2 * time.Second})
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

func TestProxyUpstreamFailuresAre502(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String() // nothing listens here once l is closed
	l.Close()
	env := startProxy(t, netpolicy.Config{Allow: []string{closed, "nowhere.test:443"}}, netpolicy.StubResolver{}, nil)
	for _, tc := range []struct {
		target, reason string
	}{
		{closed, reasonUnreach},
		{"nowhere.test:443", reasonResolve},
	} {
		resp, _, _ := send(t, env.addr, "CONNECT "+tc.target+" HTTP/1.1\r\n\r\n")
		if b := body(t, resp); resp.StatusCode != http.StatusBadGateway || !strings.Contains(b, tc.reason) {
			t.Errorf("CONNECT %s: status %d %q, want 502 saying %q", tc.target, resp.StatusCode, b, tc.reason)
		}
	}
	recs := env.waitRecords(t, 2)
	for _, r := range recs {
		if r["error"] == nil || r["status"] != float64(502) {
			t.Errorf("audit record %v, want status 502 and the error", r)
		}
	}
}

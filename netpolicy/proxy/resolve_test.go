package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/netpolicy"
)

// TestProxyResolvesOnlyNamesANameRuleAllows: through a loopback proxy,
// CONNECT and plain HTTP requests for names no rule allows are refused
// with no query, even on the port of an IP:port entry; the name a host
// entry allows is looked up and reached.
func TestProxyResolvesOnlyNamesANameRuleAllows(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from loopback")
	}))
	t.Cleanup(srv.Close)
	ps := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	rec := &netpolicy.RecordingResolver{Next: netpolicy.StubResolver{"ok.test": {netip.MustParseAddr("127.0.0.1")}}}
	pol := netpolicy.MustNew(netpolicy.Config{Allow: []string{"127.0.0.1:" + ps, "ok.test:" + ps}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := New(&netpolicy.Dialer{Policy: pol, Resolver: rec}, &Options{World: "test"})
	go p.Serve(l)
	t.Cleanup(func() { p.Close() })
	addr := l.Addr().String()

	for _, raw := range []string{
		"CONNECT secret-1.attacker.test:" + ps + " HTTP/1.1\r\n\r\n",
		"GET http://secret-2.attacker.test:" + ps + "/ HTTP/1.1\r\nHost: secret-2.attacker.test:" + ps + "\r\n\r\n",
		"CONNECT secret-3.attacker.test:443 HTTP/1.1\r\n\r\n",
		"GET http://secret-4.attacker.test/ HTTP/1.1\r\nHost: secret-4.attacker.test\r\n\r\n",
	} {
		resp, _, _ := send(t, addr, raw)
		b := body(t, resp)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d %q; want 403", firstLine(raw), resp.StatusCode, b)
		}
		if strings.Contains(raw, ":"+ps) && !strings.Contains(b, "name-not-resolved") {
			t.Errorf("%s: %q; want the rule name-not-resolved", firstLine(raw), b)
		}
	}
	if q := rec.Queries(); len(q) != 0 {
		t.Fatalf("the proxy looked up %q for requests no rule allows; want no query", q)
	}

	resp, _, _ := send(t, addr, "GET http://ok.test:"+ps+"/ HTTP/1.1\r\nHost: ok.test:"+ps+"\r\n\r\n")
	if b := body(t, resp); resp.StatusCode != http.StatusOK || b != "hello from loopback" {
		t.Errorf("GET http://ok.test:%s/: status %d %q; want 200 from the server", ps, resp.StatusCode, b)
	}
	resp, _, _ = send(t, addr, "CONNECT ok.test:"+ps+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("CONNECT ok.test:%s: status %d; want 200", ps, resp.StatusCode)
	}
	if q := rec.Queries(); !slices.Equal(q, []string{"ok.test", "ok.test"}) {
		t.Errorf("queries %q; want ok.test once per request", q)
	}
}

package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dsh-dev/dsh/netpolicy"
)

// BenchmarkProxyForwardInProcess measures one kept-alive forwarded GET
// through the proxy, client and upstream in the same process; compare
// BenchmarkDirectGETInProcess, the same request without the proxy. The
// end-to-end comparison, with the proxy in its own process, is in
// bench/proxy.
func BenchmarkProxyForwardInProcess(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	p := New(&netpolicy.Dialer{Policy: netpolicy.MustNew(netpolicy.Config{Allow: []string{up.Listener.Addr().String()}})}, nil)
	go p.Serve(l)
	defer p.Close()
	benchGET(b, l.Addr().String(), "GET "+up.URL+"/x HTTP/1.1\r\nHost: x\r\n\r\n")
}

func BenchmarkDirectGETInProcess(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer up.Close()
	benchGET(b, up.Listener.Addr().String(), "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
}

func benchGET(b *testing.B, addr, raw string) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := io.WriteString(c, raw); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

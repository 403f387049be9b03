package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/dsh-dev/dsh/netpolicy"
)

func TestProxyHostHeaderCannotRedirect(t *testing.T) {
	_, up := httpUpstream(t)
	env := startProxy(t, netpolicy.Config{Allow: []string{up.String()}}, nil, nil)

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
	env := startProxy(t, netpolicy.Config{Allow: []string{up.String()}}, nil, nil)
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
	env := startProxy(t, netpolicy.Config{Allow: []string{up}}, nil, nil)
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
	env := startProxy(t, netpolicy.Config{Allow: []string{up.String()}}, nil, nil)
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

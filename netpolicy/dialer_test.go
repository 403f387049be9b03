package netpolicy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"testing"
)

// dialLog records the addresses the dialer was about to connect to
// (OnConnect runs in the Control hook, before connect(2)).
type dialLog struct {
	mu    sync.Mutex
	addrs []netip.AddrPort // guarded by mu
}

func (l *dialLog) hook(refuse bool) func(string, netip.AddrPort) error {
	return func(_ string, ap netip.AddrPort) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.addrs = append(l.addrs, ap)
		if refuse {
			return errors.New("test: connect refused by OnConnect")
		}
		return nil
	}
}

func (l *dialLog) got() []netip.AddrPort {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]netip.AddrPort(nil), l.addrs...)
}

// loopbackOnly is installed as the dialer's redirect hook in every test:
// it sits just before the kernel connect, so if the dialer were wrong
// and tried a non-loopback address, the test fails and the connect goes
// to a closed loopback port instead of the network.
func loopbackOnly(t *testing.T) func(netip.AddrPort) netip.AddrPort {
	return func(ap netip.AddrPort) netip.AddrPort {
		if !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("dialer was about to connect to %s", ap)
			return netip.MustParseAddrPort("127.0.0.1:1")
		}
		return ap
	}
}

// loopbackHTTP starts an HTTP server on 127.0.0.1 and returns its port.
func loopbackHTTP(t *testing.T) uint16 {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from loopback")
	}))
	t.Cleanup(srv.Close)
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	return ap.Port()
}

func mustAddrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestDialerMixedAnswersFailClosed(t *testing.T) {
	port := loopbackHTTP(t)
	p := MustNew(Config{Default: "public", Allow: []string{"127.0.0.1:" + strconv.Itoa(int(port))}})
	stub := StubResolver{
		"mixed.test":    mustAddrs("127.0.0.1", "10.0.0.1"),
		"mixed2.test":   mustAddrs("10.0.0.1", "127.0.0.1"),
		"metadata.test": mustAddrs("127.0.0.1", "169.254.169.254"),
		"mapped.test":   mustAddrs("127.0.0.1", "::ffff:192.168.0.1"),
		"nat64.test":    mustAddrs("127.0.0.1", "64:ff9b::a9fe:a9fe"),
		"v6.test":       mustAddrs("127.0.0.1", "fe80::1"),
	}
	for name := range stub {
		var log dialLog
		d := &Dialer{Policy: p, Resolver: stub, OnConnect: log.hook(false), redirect: loopbackOnly(t)}
		c, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort(name, strconv.Itoa(int(port))))
		if err == nil {
			c.Close()
		}
		if !errors.Is(err, ErrDenied) {
			t.Errorf("DialContext(%s) = %v; want ErrDenied", name, err)
		}
		if got := log.got(); len(got) != 0 {
			t.Errorf("DialContext(%s) attempted connects %v; want none", name, got)
		}
		dec, as, err := d.Check(context.Background(), name, port)
		if err != nil || dec.Verdict != Deny || len(as) != 2 {
			t.Errorf("Check(%s) = %v %s, %v, %v; want deny with both addresses", name, dec.Verdict, dec.Rule, as, err)
		}
	}
}

// rebinder answers first with an allowed address and afterwards with a
// forbidden one, like a DNS rebinding attacker with TTL 0.
type rebinder struct {
	mu     sync.Mutex
	calls  int // guarded by mu
	first  []netip.Addr
	second []netip.Addr
}

func (r *rebinder) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls == 1 {
		return r.first, nil
	}
	return r.second, nil
}

func TestDialerRebindingCannotPass(t *testing.T) {
	port := loopbackHTTP(t)
	ps := strconv.Itoa(int(port))
	p := MustNew(Config{Allow: []string{"127.0.0.1:" + ps, "rebind.test"}})
	for _, evil := range []string{"169.254.169.254", "10.0.0.1", "127.0.0.2", "::1"} {
		rb := &rebinder{first: mustAddrs("127.0.0.1"), second: mustAddrs(evil)}
		var log dialLog
		d := &Dialer{Policy: p, Resolver: rb, OnConnect: log.hook(false), redirect: loopbackOnly(t)}
		tr := d.Transport()
		tr.DisableKeepAlives = true
		client := &http.Client{Transport: tr}
		url := "http://rebind.test:" + ps + "/"

		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("first GET %s (answer 127.0.0.1) = %v", url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello from loopback" {
			t.Fatalf("first GET body = %q", body)
		}
		_, err = client.Get(url)
		if !errors.Is(err, ErrDenied) {
			t.Errorf("second GET after rebinding to %s = %v; want ErrDenied", evil, err)
		}
		want := []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)}
		if got := log.got(); len(got) != 1 || got[0] != want[0] {
			t.Errorf("rebinding to %s: connects %v; want only %v", evil, got, want)
		}
	}
}

func TestDialerControlRechecksConnectedAddress(t *testing.T) {
	port := loopbackHTTP(t)
	p := MustNew(Config{Allow: []string{"svc.test", "127.0.0.0/8"}})
	var log dialLog
	d := &Dialer{Policy: p, Resolver: StubResolver{"svc.test": mustAddrs("127.0.0.1")}, OnConnect: log.hook(false)}
	// Something between check and connect swaps the address (the hook
	// stands in for any such bug or race): Control must refuse it, even
	// though the policy would allow 127.0.0.2 itself.
	d.redirect = func(ap netip.AddrPort) netip.AddrPort {
		return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), ap.Port())
	}
	_, err := d.DialContext(context.Background(), "tcp", "svc.test:"+strconv.Itoa(int(port)))
	var de *DeniedError
	if !errors.As(err, &de) || de.Decision.Rule != "dial-check" {
		t.Fatalf("DialContext with swapped address = %v; want a dial-check denial", err)
	}
	if got := log.got(); len(got) != 0 {
		t.Errorf("connects %v; want none", got)
	}
}

func TestDialerDialsCheckedAddressNotName(t *testing.T) {
	port := loopbackHTTP(t)
	ps := strconv.Itoa(int(port))
	var log dialLog
	rec := &RecordingResolver{Next: StubResolver{"svc.test": mustAddrs("127.0.0.1")}}
	d := &Dialer{Policy: MustNew(Config{Allow: []string{"svc.test:" + ps, "127.0.0.1:" + ps}}), Resolver: rec, OnConnect: log.hook(false), redirect: loopbackOnly(t)}
	c, err := d.DialContext(context.Background(), "tcp", "SVC.test.:"+ps)
	if err != nil {
		t.Fatalf("DialContext = %v", err)
	}
	defer c.Close()
	if got := c.RemoteAddr().String(); got != "127.0.0.1:"+ps {
		t.Errorf("connected to %s; want 127.0.0.1:%s", got, ps)
	}
	if q := rec.Queries(); len(q) != 1 || q[0] != "svc.test" {
		t.Errorf("resolver asked %v; want exactly [svc.test]", q)
	}
	if got := log.got(); len(got) != 1 || got[0].String() != "127.0.0.1:"+ps {
		t.Errorf("connects %v; want [127.0.0.1:%s]", got, ps)
	}
}

// TestDialerRefusesBeforeConnect: nothing forbidden reaches the connect
// step, whatever the spelling.
func TestDialerRefusesBeforeConnect(t *testing.T) {
	stub := StubResolver{
		"private.test":   mustAddrs("10.1.2.3"),
		"meta.test":      mustAddrs("169.254.169.254"),
		"ula.test":       mustAddrs("fd00::1"),
		"teredo.test":    mustAddrs("2001:0:4136:e378:8000:63bf:3fff:fdd2"),
		"loop.test":      mustAddrs("127.0.0.1"),
		"mapped.test":    mustAddrs("::ffff:127.0.0.1"),
		"linklocal.test": mustAddrs("fe80::1%lo"),
		// Public names that point at forbidden addresses.
		"localtest.me":          mustAddrs("127.0.0.1"),
		"127.0.0.1.nip.io":      mustAddrs("127.0.0.1"),
		"a9fea9fe.rbndr.us":     mustAddrs("169.254.169.254"),
		"metadata.attacker.com": mustAddrs("fd00:ec2::254"),
		"cgnat.example":         mustAddrs("100.64.0.1"),
		"nat64.example":         mustAddrs("64:ff9b::c0a8:1"),
	}
	p := MustNew(WebDefault())
	for _, target := range []string{"private.test:443", "meta.test:80", "ula.test:443", "teredo.test:443", "loop.test:80",
		"mapped.test:80", "linklocal.test:443", "127.1:80", "0x7f000001:80", "[::1]:443", "localhost:80", "x.localhost:443",
		"metadata.google.internal:80", "169.254.169.254:80", "localtest.me:80", "127.0.0.1.nip.io:80",
		"a9fea9fe.rbndr.us:80", "metadata.attacker.com:80", "cgnat.example:443", "nat64.example:443", "[::ffff:a9fe:a9fe]:80", "１２７。０。０。１:80", "8.8.8.8:22"} {
		var log dialLog
		d := &Dialer{Policy: p, Resolver: stub, OnConnect: log.hook(true), redirect: loopbackOnly(t)}
		_, err := d.DialContext(context.Background(), "tcp", target)
		if !errors.Is(err, ErrDenied) {
			t.Errorf("DialContext(%s) = %v; want ErrDenied", target, err)
		}
		if got := log.got(); len(got) != 0 {
			t.Errorf("DialContext(%s) attempted connects %v; want none", target, got)
		}
	}
}

func TestDialerInvalidInput(t *testing.T) {
	d := &Dialer{Policy: MustNew(WebDefault()), Resolver: failResolver{t}, redirect: loopbackOnly(t)}
	for _, a := range []string{"127.0.0.1", "host:0", "host:65536", "host:+1", "ho st:80", "%31.0.0.1:80", "[fe80::1%eth0]:80", "256.1.1.1:80"} {
		if _, err := d.DialContext(context.Background(), "tcp", a); !errors.Is(err, ErrInvalidTarget) {
			t.Errorf("DialContext(%q) = %v; want ErrInvalidTarget", a, err)
		}
	}
	if _, err := d.DialContext(context.Background(), "udp", "8.8.8.8:53"); err == nil {
		t.Error("DialContext(udp) succeeded; only tcp is supported")
	}
}

func TestDialerNilPolicyDenies(t *testing.T) {
	port := loopbackHTTP(t)
	d := &Dialer{Resolver: failResolver{t}, redirect: loopbackOnly(t)}
	if _, err := d.DialContext(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(int(port))); !errors.Is(err, ErrDenied) {
		t.Errorf("zero Dialer DialContext = %v; want ErrDenied", err)
	}
}

func TestDialerFamilies(t *testing.T) {
	port := loopbackHTTP(t)
	ps := strconv.Itoa(int(port))
	d := &Dialer{Policy: MustNew(Config{Allow: []string{"v4.test:" + ps, "127.0.0.1:" + ps, "[::1]:" + ps}}),
		Resolver: StubResolver{"v4.test": mustAddrs("127.0.0.1")}, redirect: loopbackOnly(t)}
	if _, err := d.DialContext(context.Background(), "tcp6", "v4.test:"+ps); err == nil || errors.Is(err, ErrDenied) {
		t.Errorf("tcp6 to an IPv4-only name = %v; want a no-address error", err)
	}
	c, err := d.DialContext(context.Background(), "tcp4", "v4.test:"+ps)
	if err != nil {
		t.Fatalf("tcp4 = %v", err)
	}
	c.Close()
}

// TestCheckDoesNotResolveDeniedNames: a name the policy denies whatever
// its addresses is never looked up (no DNS leak).
func TestCheckDoesNotResolveDeniedNames(t *testing.T) {
	d := &Dialer{Policy: MustNew(Config{Allow: []string{"ok.example.org"}, Deny: []string{"*.evil.test"}}), Resolver: failResolver{t}}
	for _, h := range []string{"secret-data.attacker.example", "x.evil.test", "metadata.google.internal"} {
		dec, _, err := d.Check(context.Background(), h, 443)
		if err != nil || dec.Verdict != Deny {
			t.Errorf("Check(%s) = %v, %v; want deny", h, dec.Verdict, err)
		}
	}
}

func TestCheckResolveFailure(t *testing.T) {
	d := &Dialer{Policy: MustNew(WebDefault()), Resolver: StubResolver{}}
	dec, _, err := d.Check(context.Background(), "unknown.test", 443)
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound || dec.Verdict != Deny {
		t.Errorf("Check(unknown) = %v, %v; want deny with a not-found DNS error", dec.Verdict, err)
	}
}

func TestTransportIgnoresEnvironmentProxy(t *testing.T) {
	port := loopbackHTTP(t)
	ps := strconv.Itoa(int(port))
	// A proxy from the environment would be a way around the dialer.
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("http_proxy", "http://127.0.0.1:1")
	d := &Dialer{Policy: MustNew(Config{Allow: []string{"svc.test:" + ps, "127.0.0.1:" + ps}}), Resolver: StubResolver{"svc.test": mustAddrs("127.0.0.1")}, redirect: loopbackOnly(t)}
	tr := d.Transport()
	if tr.Proxy != nil {
		t.Fatal("Transport().Proxy is set; it must be nil")
	}
	resp, err := (&http.Client{Transport: tr}).Get("http://svc.test:" + ps + "/")
	if err != nil {
		t.Fatalf("GET through Transport = %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
	// The same server on a port the policy does not name is refused.
	_, err = (&http.Client{Transport: tr}).Get("http://svc.test:" + strconv.Itoa(int(port)+1) + "/")
	if !errors.Is(err, ErrDenied) {
		t.Errorf("GET to an unlisted port = %v; want ErrDenied", err)
	}
}

func TestStubResolverFamilies(t *testing.T) {
	s := StubResolver{"Both.Test": mustAddrs("192.0.2.1", "2001:db8::1", "::ffff:192.0.2.2")}
	for _, tt := range []struct {
		network, host string
		n             int
	}{{"ip", "Both.Test", 3}, {"ip4", "Both.Test", 2}, {"ip6", "Both.Test", 1}} {
		got, err := s.LookupNetIP(context.Background(), tt.network, tt.host)
		if err != nil || len(got) != tt.n {
			t.Errorf("LookupNetIP(%s, %s) = %v, %v; want %d addresses", tt.network, tt.host, got, err, tt.n)
		}
	}
	if _, err := s.LookupNetIP(context.Background(), "ip", "other.test"); err == nil {
		t.Error("unknown name resolved")
	}
}

func TestCheckInvalidResolverAnswerFailsClosed(t *testing.T) {
	d := &Dialer{Policy: MustNew(Config{Default: "public"}), Resolver: StubResolver{"bad.test": {netip.MustParseAddr("1.1.1.1"), {}}}, redirect: loopbackOnly(t)}
	dec, _, err := d.Check(context.Background(), "bad.test", 443)
	if err != nil || dec.Verdict != Deny {
		t.Errorf("Check with an invalid answer = %v %s, %v; want deny", dec.Verdict, dec.Reason, err)
	}
}

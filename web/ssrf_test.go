package web

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-dev/dsh/netpolicy"
)

// Every test here proves a refusal before any connect: the dialer's
// connect seam (testDialer) records what reaches connect(2), refuses and
// reports anything not on loopback, and the tests check that nothing but
// the test's own allowed server was connected.

var forbiddenStub = netpolicy.StubResolver{
	"meta.test":      {netip.MustParseAddr("169.254.169.254")},
	"private.test":   {netip.MustParseAddr("10.0.0.7")},
	"cgnat.test":     {netip.MustParseAddr("100.64.1.2")},
	"ula.test":       {netip.MustParseAddr("fd12::1")},
	"mapped.test":    {netip.MustParseAddr("::ffff:192.168.0.1")},
	"nat64.test":     {netip.MustParseAddr("64:ff9b::a9fe:a9fe")},
	"loop.test":      {netip.MustParseAddr("127.0.0.1")},
	"doc.test":       {netip.MustParseAddr("203.0.113.9")},
	"zero.test":      {netip.MustParseAddr("0.0.0.0")},
	"linklocal.test": {netip.MustParseAddr("fe80::1")},
}

func TestFetchRefusesNamesResolvingToForbiddenAddresses(t *testing.T) {
	f, log := newTestFetcher(t, FetchOptions{}, nil, forbiddenStub)
	for name := range forbiddenStub {
		for _, u := range []string{"http://" + name + "/", "https://" + name + "/x", "http://" + strings.ToUpper(name) + ":443/"} {
			we := fetchErr(t, f, u)
			if we.Code != CodeNetDenied || we.Reason() == "" {
				t.Errorf("Fetch(%s) = %v, want %s with a reason", u, we, CodeNetDenied)
			}
		}
	}
	if c := log.list(); len(c) != 0 {
		t.Errorf("connects happened: %v", c)
	}
}

func TestFetchRefusesEncodedAddresses(t *testing.T) {
	f, log := newTestFetcher(t, FetchOptions{}, nil, forbiddenStub)
	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data/",
		"http://[::ffff:169.254.169.254]/",
		"http://[::ffff:a9fe:a9fe]/",
		"http://0xa9fea9fe/",
		"http://2852039166/",
		"http://0251.0376.0251.0376/",
		"http://169.254.43518/",
		"http://169。254。169。254/", // ideographic full stops, mapped by IDNA
		"http://[64:ff9b::a9fe:a9fe]/",
		"http://[2002:a9fe:a9fe::]/",
		"http://100.100.100.200/",
		"http://metadata.google.internal/",
		"http://127.1/",
		"http://0x7f000001/",
		"http://2130706433/",
		"http://[::1]/",
		"http://localhost/",
		"http://LOCALHOST./",
		"http://0/",
		"http://[::]/",
		"http://10.0.0.1/",
		"http://192.168.1.1:443/",
		"http://[fd00::1]/",
		"http://[fe80::1%25eth0]/",
	} {
		we := fetchErr(t, f, u)
		if we.Code != CodeNetDenied && we.Code != CodeInvalidURL {
			t.Errorf("Fetch(%s) = %v, want %s (or %s)", u, we, CodeNetDenied, CodeInvalidURL)
		}
	}
	if c := log.list(); len(c) != 0 {
		t.Errorf("connects happened: %v", c)
	}
}

func TestFetchRefusesNameWithAnyForbiddenAddress(t *testing.T) {
	srv := newServer(t, htmlHandler("x"))
	stub := netpolicy.StubResolver{"mixed.test": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.1")}}
	f, log := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, stub)
	_, port, _ := strings.Cut(srv.hostPort(), ":")
	if we := fetchErr(t, f, "http://mixed.test:"+port+"/"); we.Code != CodeNetDenied {
		t.Errorf("name with an allowed and a forbidden address: %v, want %s", we, CodeNetDenied)
	}
	if srv.hits.Load() != 0 || len(log.list()) != 0 {
		t.Errorf("a name with a forbidden address was connected (%v)", log.list())
	}
}

func TestRedirectsToForbiddenTargets(t *testing.T) {
	// other is a loopback server the policy does not admit: a redirect
	// there must not reach it.
	other := newServer(t, htmlHandler("other"))
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscan(r.URL.Query().Get("code"), &code)
		to := r.URL.Query().Get("to")
		if to == "LONG" { // too long to pass in the request URL itself
			to = "/" + strings.Repeat("a", DefaultMaxURLLength)
		}
		w.Header().Set("Location", to)
		w.WriteHeader(code)
	})
	_, otherPort, _ := strings.Cut(other.hostPort(), ":")
	self := netip.MustParseAddrPort(srv.hostPort())

	// denied: in cross-origin mode the dialer refuses (NET_DENIED); the
	// rest fail URL re-validation (WEB_REDIRECT_BLOCKED) in both modes.
	locations := []struct {
		loc    string
		denied bool
	}{
		{"http://169.254.169.254/latest/meta-data/", true},
		{"//169.254.169.254/latest/meta-data/", true},
		{"//meta.test/", true},
		{"http://private.test/", true},
		{"https://meta.test/", true}, // scheme switch as well
		{"//ula.test:443/", true},
		{"//[::ffff:a9fe:a9fe]/", true},
		{"http://0xa9fea9fe/", true},
		{"//2852039166/", true},
		{"http://169。254。169。254/", true},
		{"//metadata.google.internal/computeMetadata/v1/", true},
		{"http://127.1:" + otherPort + "/", true},
		{"//localhost:" + otherPort + "/", true},
		{"http://[::1]:" + otherPort + "/", true},
		{"//user:pw@169.254.169.254/", false},
		{"file:///etc/passwd", false},
		{"ftp://127.0.0.1:" + otherPort + "/", false},
		{"gopher://127.0.0.1:" + otherPort + "/_GET", false},
		{"javascript:alert(1)", false},
		{"data:text/html,hi", false},
		{"LONG", false}, // resolves to a URL over the length limit
	}
	for _, cross := range []bool{false, true} {
		f, log := newTestFetcher(t, FetchOptions{CrossOriginRedirects: cross}, []string{srv.hostPort()}, forbiddenStub)
		for _, code := range []int{301, 302, 303, 307, 308} {
			for _, l := range locations {
				u := fmt.Sprintf("%s/?code=%d&to=%s", srv.URL, code, urlQueryEscape(l.loc))
				we := fetchErr(t, f, u)
				want := CodeRedirectBlocked
				if cross && l.denied {
					want = CodeNetDenied
				}
				if we.Code != want {
					t.Errorf("cross=%v HTTP %d Location %.60q: %v, want %s", cross, code, l.loc, we, want)
				}
			}
		}
		for _, c := range log.list() {
			if c != self {
				t.Errorf("cross=%v: connected to %v; only %v may be connected", cross, c, self)
			}
		}
	}
	if n := other.hits.Load(); n != 0 {
		t.Errorf("the unadmitted loopback server was reached %d times", n)
	}
}

func TestRedirectSchemeSwitchSameHost(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://"+r.Host+"/", http.StatusMovedPermanently)
	})
	f, _ := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort()}, nil)
	if we := fetchErr(t, f, srv.URL); we.Code != CodeRedirectBlocked {
		t.Errorf("http -> https on the same host and port: %v, want %s", we, CodeRedirectBlocked)
	}
}

// seqResolver answers a name with the next of its answers on each lookup
// (the last one repeats): a rebinding DNS server.
type seqResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
}

func (s *seqResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.answers[strings.ToLower(host)]
	if len(seq) == 0 {
		return nil, fmt.Errorf("seqResolver: no answer for %s", host)
	}
	a := seq[0]
	if len(seq) > 1 {
		s.answers[strings.ToLower(host)] = seq[1:]
	}
	return a, nil
}

func TestRedirectRelativeToRebindingName(t *testing.T) {
	// A same-origin, relative redirect keeps the host name; if the name
	// now resolves to a forbidden address, the next hop's dial refuses
	// it. The server closes each connection so every hop dials anew.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		var code int
		fmt.Sscan(r.URL.Query().Get("code"), &code)
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(code)
	})
	self := netip.MustParseAddrPort(srv.hostPort())
	_, port, _ := strings.Cut(srv.hostPort(), ":")
	host := "rebind.test:" + port
	for _, code := range []int{301, 302, 303, 307, 308} {
		for _, loc := range []string{"/latest/meta-data/", "meta-data", "//" + host + "/x", "http://" + host + "/x", "?again"} {
			res := &seqResolver{answers: map[string][][]netip.Addr{
				"rebind.test": {{netip.MustParseAddr("127.0.0.1")}, {netip.MustParseAddr("169.254.169.254")}},
			}}
			// The name is allowed by name: an address entry alone would
			// not have it resolved.
			f, log := newTestFetcher(t, FetchOptions{}, []string{srv.hostPort(), host}, res)
			u := fmt.Sprintf("http://%s/?code=%d&to=%s", host, code, urlQueryEscape(loc))
			if we := fetchErr(t, f, u); we.Code != CodeNetDenied {
				t.Errorf("HTTP %d to %q after rebinding: %v, want %s", code, loc, we, CodeNetDenied)
			}
			if c := log.list(); len(c) != 1 || c[0] != self {
				t.Errorf("HTTP %d to %q: connects %v, want only the first hop to %v", code, loc, c, self)
			}
		}
	}
}

package web

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dsh-dev/dsh/netpolicy"
)

// connectLog records every connect the guarded dialer lets through to
// the kernel (after its policy checks).
type connectLog struct {
	mu    sync.Mutex
	addrs []netip.AddrPort
}

func (l *connectLog) list() []netip.AddrPort {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]netip.AddrPort(nil), l.addrs...)
}

// testDialer returns a Dialer under the web default policy plus allow
// entries, resolving names only through stub. Its connect seam refuses,
// before connect(2), any address that is not loopback, and fails the
// test: the network rule says no packet may leave loopback even if the
// code under test is wrong.
func testDialer(t *testing.T, allow []string, stub netpolicy.Resolver) (*netpolicy.Dialer, *connectLog) {
	t.Helper()
	c := netpolicy.WebDefault()
	c.Allow = append(c.Allow, allow...)
	p, err := netpolicy.New(c)
	if err != nil {
		t.Fatalf("netpolicy.New(%+v): %v", c, err)
	}
	if stub == nil {
		stub = netpolicy.StubResolver{}
	}
	log := &connectLog{}
	d := &netpolicy.Dialer{
		Policy:   p,
		Resolver: stub,
		OnConnect: func(network string, ap netip.AddrPort) error {
			log.mu.Lock()
			log.addrs = append(log.addrs, ap)
			log.mu.Unlock()
			if !ap.Addr().Unmap().IsLoopback() {
				t.Errorf("the dialer let a connect to %v through; refused by the test seam", ap)
				return errors.New("test seam: non-loopback connect refused")
			}
			return nil
		},
	}
	return d, log
}

// newTestFetcher returns a Fetcher over testDialer.
func newTestFetcher(t *testing.T, opts FetchOptions, allow []string, stub netpolicy.Resolver) (*Fetcher, *connectLog) {
	t.Helper()
	d, log := testDialer(t, allow, stub)
	opts.Dialer = d
	f, err := NewFetcher(&opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, log
}

// countingServer is a loopback httptest server that counts requests.
type countingServer struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// hostPort is the server's 127.0.0.1:port, the allow entry that admits it.
func (s *countingServer) hostPort() string { return s.Listener.Addr().String() }

func fetchErr(t *testing.T, f *Fetcher, url string) *Error {
	t.Helper()
	res, err := f.Fetch(context.Background(), url)
	if err == nil {
		t.Fatalf("Fetch(%q) = %+v, want an error", url, res)
	}
	var we *Error
	if !errors.As(err, &we) {
		t.Fatalf("Fetch(%q) error %T %v is not a *web.Error", url, err, err)
	}
	return we
}

func fetchOK(t *testing.T, f *Fetcher, url string) *Result {
	t.Helper()
	res, err := f.Fetch(context.Background(), url)
	if err != nil {
		t.Fatalf("Fetch(%q): %v", url, err)
	}
	return res
}

package netpolicy

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// Resolver looks up the addresses of a name. *net.Resolver implements it;
// network is "ip", "ip4" or "ip6".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// StubResolver answers from a fixed table, for tests and for pinned names
// (dsh policy check --resolve). Keys are host names (case and a trailing
// dot do not matter); an unknown name is a not-found *net.DNSError.
type StubResolver map[string][]netip.Addr

// LookupNetIP returns the table's addresses of host, filtered by network.
func (s StubResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	addrs, ok := s[host]
	if !ok {
		addrs, ok = s[strings.TrimSuffix(strings.ToLower(host), ".")]
	}
	if !ok {
		return nil, &net.DNSError{Err: "no such host (not in stub resolver)", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		switch network {
		case "ip4":
			if !a.Unmap().Is4() {
				continue
			}
		case "ip6":
			if !a.Is6() || a.Is4In6() {
				continue
			}
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no " + network + " address (stub resolver)", Name: host, IsNotFound: true}
	}
	return out, nil
}

// RecordingResolver records every name it is asked to look up, then
// answers from Next; with Next nil every lookup fails as not found, so a
// test that uses it sends no query anywhere. Tests use it to prove which
// names a Policy lets the Dialer look up. It is safe for concurrent use.
type RecordingResolver struct {
	Next Resolver

	mu      sync.Mutex
	queries []string
}

// LookupNetIP records host and asks Next.
func (r *RecordingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.queries = append(r.queries, host)
	r.mu.Unlock()
	if r.Next == nil {
		return nil, &net.DNSError{Err: "no such host (recording resolver)", Name: host, IsNotFound: true}
	}
	return r.Next.LookupNetIP(ctx, network, host)
}

// Queries returns the names looked up so far, in order.
func (r *RecordingResolver) Queries() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.queries)
}

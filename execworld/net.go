package execworld

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/dsh-dev/dsh/netpolicy"
)

// Net is dsh's own egress on a world's behalf: web fetches and
// Streamable HTTP MCP servers dial through it, never directly. Every
// connection goes through a netpolicy.Dialer under the world's Net
// policy, so names are resolved and every address is checked before the
// checked address is dialled.
type Net struct {
	dialer atomic.Pointer[netpolicy.Dialer] // replaced by setPolicy
	client *http.Client
	tr     *http.Transport
}

func newNet(d *netpolicy.Dialer) *Net {
	n := &Net{}
	n.dialer.Store(d)
	n.tr = netpolicy.NewTransport(n.DialContext)
	n.client = &http.Client{Transport: n.tr}
	return n
}

// Policy is the policy Net applies.
func (n *Net) Policy() *netpolicy.Policy { return n.dialer.Load().Policy }

// Dialer is the guarded dialer; callers that need a Transport of their own
// build it from Dialer().Transport().
func (n *Net) Dialer() *netpolicy.Dialer { return n.dialer.Load() }

// DialContext dials address under the policy. A refusal is a
// *netpolicy.DeniedError (errors.Is(err, netpolicy.ErrDenied)).
func (n *Net) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return n.dialer.Load().DialContext(ctx, network, address)
}

// setPolicy makes p the policy of every later dial, and drops the idle
// connections an earlier policy allowed.
func (n *Net) setPolicy(p *netpolicy.Policy) {
	d := *n.dialer.Load()
	d.Policy = p
	n.dialer.Store(&d)
	n.tr.CloseIdleConnections()
}

// HTTPClient returns the world's HTTP client: no proxy from the
// environment, no cookies, every dial guarded. Callers set their own
// redirect rules and timeouts on a copy.
func (n *Net) HTTPClient() *http.Client { return n.client }

func (n *Net) close() { n.tr.CloseIdleConnections() }

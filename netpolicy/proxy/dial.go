package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"

	"github.com/dsh-dev/dsh/netpolicy"
)

// Reasons the proxy itself gives, beside the Policy's.
const (
	reasonSelf      = "proxy itself"
	reasonMalformed = "malformed request"
	reasonResolve   = "cannot resolve host"
	reasonUnreach   = "upstream unreachable"
	reasonTimeout   = "upstream timed out"
	ruleSelf        = "proxy-self"
	verdictDenyName = "deny"
)

// guardDialer returns a copy of d whose connects are refused, before the
// kernel sends anything, when they would reach the proxy itself (a
// request loop, or a way to reach the proxy's other listeners). The check
// runs in the Dialer's OnConnect hook, on the address being connected, so
// it holds whatever a name resolves to. A nil Policy denies everything,
// as it does in any Dialer; the copy spells it out, so that dialTarget can
// judge the address connected to with g.Policy.
func (p *Proxy) guardDialer(d *netpolicy.Dialer) *netpolicy.Dialer {
	g := *d
	if g.Policy == nil {
		g.Policy = netpolicy.MustNew(netpolicy.SandboxDefault())
	}
	next := d.OnConnect
	g.OnConnect = func(network string, ap netip.AddrPort) error {
		if p.isSelf(ap) {
			return &netpolicy.DeniedError{Decision: netpolicy.Decision{Verdict: netpolicy.Deny, Stage: netpolicy.StageDeny, Rule: ruleSelf, Addr: ap.Addr(), Port: ap.Port(),
				Reason: fmt.Sprintf("%s is the proxy's own address", ap)}}
		}
		if next != nil {
			return next(network, ap)
		}
		return nil
	}
	return &g
}

// dialTarget connects to t through the world's guarded Dialer, which
// resolves the name, judges every address, and connects only to an
// address it judged. It returns the Decision that allowed the connection
// (the Policy's judgement of the address connected to), for the audit.
func (p *Proxy) dialTarget(ctx context.Context, w *world, address string) (net.Conn, netpolicy.Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.ConnectTimeout)
	defer cancel()
	d := w.d.Load()
	c, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, netpolicy.Decision{}, err
	}
	var dec netpolicy.Decision
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		host, _, _ := net.SplitHostPort(address)
		ap := ta.AddrPort()
		dec = d.Policy.Decide(host, ap.Addr().Unmap(), ap.Port())
	}
	return c, dec, nil
}

// answerDenied writes the 403 of a denial, with the reason in
// X-Dsh-Deny-Reason and a body that says what was refused and why.
func (cc *clientConn) answerDenied(dec netpolicy.Decision, target string) {
	rule := ""
	if dec.Rule != "" {
		rule = " [rule " + dec.Rule + "]"
	}
	cc.writeError(http.StatusForbidden, dec.Reason, fmt.Sprintf(
		"dsh proxy: egress to %s denied by the network policy of world %q: %s%s\n",
		target, cc.w.name, dec.Reason, rule))
}

// answerDialError writes the answer to a failed dial (a denial, a bad
// host, a resolution or connection failure) and fills rec.
func (cc *clientConn) answerDialError(rec *AuditRecord, err error, target string) {
	var de *netpolicy.DeniedError
	if errors.As(err, &de) {
		rec.setDecision(de.Decision)
		rec.Status = http.StatusForbidden
		cc.answerDenied(de.Decision, target)
		return
	}
	rec.Verdict = verdictDenyName
	rec.Error = err.Error()
	switch {
	case errors.Is(err, netpolicy.ErrInvalidTarget):
		rec.Reason, rec.Status = reasonMalformed, http.StatusBadRequest
	case isDNSError(err):
		rec.Reason, rec.Status = reasonResolve, http.StatusBadGateway
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		rec.Verdict = "allow"
		rec.Reason, rec.Status = reasonTimeout, http.StatusGatewayTimeout
	default:
		rec.Verdict = "allow"
		rec.Reason, rec.Status = reasonUnreach, http.StatusBadGateway
	}
	rec.metricReason = rec.Reason
	cc.writeError(rec.Status, "", fmt.Sprintf("dsh proxy: %s: %s: %v\n", rec.Reason, target, err))
}

func isDNSError(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

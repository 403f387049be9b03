package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// Dialer connects only where its Policy allows. It resolves a name
// itself — only a name that a name rule could allow (Policy.MayResolve),
// so that DNS carries nothing out for the others — judges every address,
// refuses the name if any address is forbidden, dials the addresses it
// checked (never the name), and re-checks in the socket's Control hook
// the address the kernel is about to connect to. A name that changes its answer (DNS rebinding) therefore
// gains nothing: the answer judged is the answer dialled.
//
// The zero Dialer denies everything; set Policy.
type Dialer struct {
	// Policy judges destinations. If nil, everything is denied.
	Policy *Policy
	// Resolver looks up names. If nil, net.DefaultResolver is used.
	Resolver Resolver
	// World marks the dialer of a world's egress proxy: a loopback
	// address (127.0.0.0/8, ::1, localhost) is then the world's own and
	// refused whatever the Policy says; the host's loopback is reached
	// only as HostName (see HostName).
	World bool
	// Timeout bounds connecting (all addresses together). If zero, 10s.
	Timeout time.Duration
	// OnConnect, if non-nil, is called from the Control hook after the
	// address passed the re-check and before the kernel connects; a
	// non-nil error aborts that connect. Tests use it to record connects
	// and to refuse them, so that no packet is sent.
	OnConnect func(network string, addr netip.AddrPort) error

	// redirect, set only by tests, replaces the address handed to the
	// kernel after the check, to prove that the Control re-check refuses
	// an address other than the one checked.
	redirect func(netip.AddrPort) netip.AddrPort
}

const defaultDialTimeout = 10 * time.Second

// denyAll is the policy of a Dialer without one, made on first use (not
// in every start of dsh).
var denyAll = sync.OnceValue(func() *Policy { return MustNew(SandboxDefault()) })

func (d *Dialer) policy() *Policy {
	if d.Policy == nil {
		return denyAll()
	}
	return d.Policy
}

func (d *Dialer) resolver() Resolver {
	if d.Resolver == nil {
		return net.DefaultResolver
	}
	return d.Resolver
}

// Check resolves host and judges every address for port without
// connecting. The Decision is the first denial, or the first address's
// allow when all are allowed. err is non-nil only when no decision could
// be made on the addresses (invalid host: ErrInvalidTarget; resolution
// failure); the Decision is then a denial that says why.
func (d *Dialer) Check(ctx context.Context, host string, port uint16) (Decision, []netip.Addr, error) {
	dec, addrs, err := d.check(ctx, host, port)
	if err == nil && dec.Verdict == Allow && d.World && dec.Host != HostName {
		for _, a := range addrs {
			if a.Unmap().IsLoopback() {
				return worldLoopback(dec, a.Unmap()), addrs, nil
			}
		}
	}
	return dec, addrs, err
}

func (d *Dialer) check(ctx context.Context, host string, port uint16) (Decision, []netip.Addr, error) {
	p := d.policy()
	info, err := parseHostBracket(host, host)
	if err != nil {
		var te *TargetError
		errors.As(err, &te)
		return Decision{Verdict: Deny, Stage: StageInvalid, Rule: "invalid", Reason: "invalid: " + te.Reason, Host: host, Port: port}, nil, err
	}
	if info.addr.IsValid() {
		return p.Decide(host, info.addr, port), []netip.Addr{info.addr}, nil
	}
	if info.localhost || info.hostLoopback {
		// RFC 6761: localhost names are loopback; never ask DNS. Nor for
		// HostName, which is the host's loopback by definition.
		return p.Decide(info.name, loopbackV4, port), []netip.Addr{loopbackV4}, nil
	}
	// Judge the name first: a name that no name rule could allow is never
	// looked up, so DNS cannot carry data out for it.
	if dec, ok := p.MayResolve(info.name, port); !ok {
		return dec, nil, nil
	}
	addrs, err := d.resolver().LookupNetIP(ctx, "ip", info.name)
	if err == nil && len(addrs) == 0 {
		err = &net.DNSError{Err: "no addresses", Name: info.name, IsNotFound: true}
	}
	if err != nil {
		dec := Decision{Verdict: Deny, Stage: StageInvalid, Rule: "resolve", Host: info.name, Port: port,
			Reason: "cannot resolve " + info.name + ": " + err.Error()}
		return dec, nil, fmt.Errorf("netpolicy: resolving %s: %w", info.name, err)
	}
	var first Decision
	for i, a := range addrs {
		if !a.IsValid() {
			// A resolver that answers with nothing usable fails closed.
			return Decision{Verdict: Deny, Stage: StageInvalid, Rule: "resolve", Host: info.name, Port: port,
				Reason: "the resolver returned an invalid address for " + info.name}, addrs, nil
		}
		dec := p.Decide(info.name, a, port)
		if dec.Verdict != Allow {
			if len(addrs) > 1 {
				dec.Reason += fmt.Sprintf(" (%s has %d addresses; a name with any forbidden address is refused)", info.name, len(addrs))
			}
			return dec, addrs, nil
		}
		if i == 0 {
			first = dec
		}
	}
	return first, addrs, nil
}

// DialContext connects to address ("host:port") over tcp, tcp4 or tcp6
// if the Policy allows every address of host. A denial is a
// *DeniedError (errors.Is(err, ErrDenied)).
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("netpolicy: dialing %s %s: network %q is not supported; only tcp", network, address, network)
	}
	host, ps, err := net.SplitHostPort(address)
	if err != nil {
		return nil, invalidf(address, "not host:port: %v", err)
	}
	port, err := parsePort(ps)
	if err != nil {
		return nil, invalidf(address, "%v", err)
	}
	dec, addrs, err := d.Check(ctx, host, port)
	if err != nil {
		return nil, err
	}
	if dec.Verdict != Allow {
		return nil, &DeniedError{Decision: dec}
	}
	var targets []netip.AddrPort
	for _, a := range addrs {
		a = a.WithZone("").Unmap()
		if (network == "tcp4" && !a.Is4()) || (network == "tcp6" && !a.Is6()) {
			continue
		}
		targets = append(targets, netip.AddrPortFrom(a, port))
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("netpolicy: dialing %s: no %s address among %v", address, network, addrs)
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = defaultDialTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var errs []error
	for i, t := range targets {
		// Share the remaining time among the addresses left, so one
		// black-holed address cannot use up the whole budget.
		actx, acancel := context.WithTimeout(ctx, partialTimeout(ctx, len(targets)-i))
		c, err := d.dialChecked(actx, network, host, t, targets)
		acancel()
		if err == nil {
			return c, nil
		}
		if errors.Is(err, ErrDenied) || ctx.Err() != nil {
			return nil, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// partialTimeout is the share of ctx's remaining time for one of n
// addresses, at least 2s (or all that is left).
func partialTimeout(ctx context.Context, n int) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return defaultDialTimeout
	}
	left := time.Until(dl)
	share := left / time.Duration(n)
	if share < 2*time.Second {
		share = min(2*time.Second, left)
	}
	return share
}

// dialChecked connects to t, one of the checked addresses. The Control
// hook runs after the socket exists and before connect(2): it refuses any
// address that is not among those checked or that the Policy denies.
func (d *Dialer) dialChecked(ctx context.Context, network, host string, t netip.AddrPort, checked []netip.AddrPort) (net.Conn, error) {
	p := d.policy()
	nd := net.Dialer{
		Control: func(cnet, caddr string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(caddr)
			if err != nil {
				return &DeniedError{Decision: Decision{Verdict: Deny, Stage: StageInvalid, Rule: "dial-check", Host: host,
					Reason: "cannot parse the address being connected: " + caddr}}
			}
			ap = netip.AddrPortFrom(ap.Addr().WithZone("").Unmap(), ap.Port())
			known := false
			for _, c := range checked {
				known = known || c == ap
			}
			if !known {
				return &DeniedError{Decision: Decision{Verdict: Deny, Stage: StageInvalid, Rule: "dial-check", Host: host, Addr: ap.Addr(), Port: ap.Port(),
					Reason: "the address being connected is not one that was checked"}}
			}
			if dec := p.Decide(host, ap.Addr(), ap.Port()); dec.Verdict != Allow {
				return &DeniedError{Decision: dec}
			}
			if d.OnConnect != nil {
				return d.OnConnect(cnet, ap)
			}
			return nil
		},
	}
	if d.redirect != nil {
		t = d.redirect(t)
	}
	c, err := nd.DialContext(ctx, network, t.String())
	if err != nil {
		// Surface a Control refusal as the *DeniedError it is.
		var de *DeniedError
		if errors.As(err, &de) {
			return nil, de
		}
		return nil, err
	}
	return c, nil
}

// Transport returns an http.Transport that dials only through d: no
// proxy from the environment (Proxy is nil), no client certificates or
// other ambient credentials.
func (d *Dialer) Transport() *http.Transport { return NewTransport(d.DialContext) }

// NewTransport returns the http.Transport of a guarded dial function
// (Dialer.Transport for any dialer, such as a world's Net): every
// connection made by dial, no proxy from the environment, no client
// certificates or other ambient credentials.
func NewTransport(dial func(ctx context.Context, network, address string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

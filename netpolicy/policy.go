package netpolicy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
)

// Policy is a validated, immutable egress policy. It is safe for
// concurrent use.
type Policy struct {
	public bool
	ports  []uint16 // for default public; empty = any
	allow  []rule
	deny   []rule
	// addrAllow is whether some allow entry matches addresses (an IP or
	// CIDR); only then can a name's addresses change a name-only denial.
	addrAllow bool
}

// New validates c and returns its Policy. The error lists every problem
// in c (it matches ErrInvalidPolicy and is a *PolicyError).
func New(c Config) (*Policy, error) {
	p := &Policy{}
	var problems []string
	switch c.Default {
	case "", "deny":
	case "public":
		p.public = true
	default:
		problems = append(problems, fmt.Sprintf("default %q: must be deny or public", c.Default))
	}
	for _, port := range c.Ports {
		if port < 1 || port > 65535 {
			problems = append(problems, fmt.Sprintf("port %d: must be 1-65535", port))
			continue
		}
		p.ports = append(p.ports, uint16(port))
	}
	for _, e := range c.Allow {
		r, err := parseRule(e)
		if err != nil {
			problems = append(problems, "allow "+err.Error())
			continue
		}
		if r.kind == rulePrefix && r.prefix.IsSingleIP() {
			if why, ok := metadataAddrs[r.prefix.Addr()]; ok {
				problems = append(problems, fmt.Sprintf("allow entry %q: %s is a cloud metadata address (%s) and can never be allowed", e, r.prefix.Addr(), why))
				continue
			}
		}
		if r.kind == ruleHost {
			if why, ok := metadataNames[r.name]; ok {
				problems = append(problems, fmt.Sprintf("allow entry %q: %s is a cloud metadata name (%s) and can never be allowed", e, r.name, why))
				continue
			}
		}
		if r.isAddr() {
			p.addrAllow = true
		}
		p.allow = append(p.allow, r)
	}
	for _, e := range c.Deny {
		r, err := parseRule(e)
		if err != nil {
			problems = append(problems, "deny "+err.Error())
			continue
		}
		p.deny = append(p.deny, r)
	}
	if len(problems) > 0 {
		return nil, &PolicyError{Problems: problems}
	}
	return p, nil
}

// MustNew is New for policies known to be valid (tests, built-in
// defaults); it panics on error.
func MustNew(c Config) *Policy {
	p, err := New(c)
	if err != nil {
		panic(err)
	}
	return p
}

// Decide judges a connection to host at addr on port. host may be empty
// when only an address is known; addr may be invalid when only a name is
// known (a pre-check: the Dialer judges every address again). host is
// normalised as parseHost describes; a host that is itself an address in
// any spelling is judged as that address.
//
// The order is fixed and the first match wins: always-deny (cloud
// metadata), explicit deny, special-purpose addresses (unless an IP or
// CIDR allow entry covers the address), explicit allow, the default.
func (p *Policy) Decide(host string, addr netip.Addr, port uint16) Decision {
	d, _ := p.decide(host, addr, port)
	return d
}

// decide is Decide that also reports whether a name-only decision is
// final: whether no address the name could resolve to can change it.
func (p *Policy) decide(host string, addr netip.Addr, port uint16) (Decision, bool) {
	d := Decision{Host: host, Port: port}
	if host != "" {
		info, err := parseHostBracket(host, host)
		if err != nil {
			d.Stage, d.Rule = StageInvalid, "invalid"
			d.Reason = "invalid: " + err.(*TargetError).Reason
			return d, true
		}
		d.Host = info.String()
		switch {
		case info.addr.IsValid():
			ha := info.addr.WithZone("").Unmap()
			if addr.IsValid() && addr.WithZone("").Unmap() != ha {
				d.Addr = addr
				d.Stage, d.Rule = StageInvalid, "invalid"
				d.Reason = fmt.Sprintf("invalid: host %s is the address %s but the connection is to %s", host, ha, addr)
				return d, true
			}
			addr = ha
		case info.localhost && !addr.IsValid():
			addr = loopbackV4
		case info.localhost && !addr.Unmap().IsLoopback():
			d.Addr = addr
			d.Stage, d.Rule = StageInvalid, "invalid"
			d.Reason = "invalid: " + info.name + " is a localhost name (RFC 6761) but the connection is to " + addr.String()
			return d, true
		}
		host = info.name
	} else if !addr.IsValid() {
		d.Stage, d.Rule, d.Reason = StageInvalid, "invalid", "invalid: neither host nor address given"
		return d, true
	}
	a := addr.WithZone("").Unmap()
	d.Addr = a

	// 1. always-deny.
	if host != "" {
		if t, ok := metadataNameText[host]; ok {
			return p.denied(d, StageAlwaysDeny, t.rule, t.reason[0]), true
		}
	}
	var al [3]netip.Addr
	n := 0
	if a.IsValid() {
		al, n = aliases(a)
		for i, x := range al[:n] {
			if t, ok := metadataText[x]; ok {
				return p.denied(d, StageAlwaysDeny, t.rule, t.reason[min(i, 1)]), true
			}
		}
	}

	// 2. explicit deny; addresses are matched in every IPv6 disguise.
	for i := range p.deny {
		r := &p.deny[i]
		if !r.matchPort(port) {
			continue
		}
		hit := host != "" && r.matchName(host)
		for _, x := range al[:n] {
			hit = hit || r.matchAddr(x)
		}
		if hit {
			return p.denied(d, StageDeny, "deny:"+r.text, "matches deny entry "+strconv.Quote(r.text)), true
		}
	}

	// 3. special-purpose addresses; only an address entry unlocks one.
	if a.IsValid() {
		if s, via, _ := classify(a); s != nil {
			for i := range p.allow {
				r := &p.allow[i]
				if r.isAddr() && r.matchPort(port) && r.matchAddr(a) {
					d.Verdict, d.Stage, d.Rule = Allow, StageAllow, "allow:"+r.text
					d.Reason = a.String() + " is " + s.Name + " (" + s.Source + "), allowed by entry " + strconv.Quote(r.text)
					return d, true
				}
			}
			return p.denied(d, StageSpecial, specialRule(s, via), specialReason(s, via)), true
		}
	}

	// 4. explicit allow.
	for i := range p.allow {
		r := &p.allow[i]
		if !r.matchPort(port) {
			continue
		}
		if (host != "" && r.matchName(host)) || (a.IsValid() && r.matchAddr(a)) {
			d.Verdict, d.Stage, d.Rule = Allow, StageAllow, "allow:"+r.text
			d.Reason = "matches allow entry " + strconv.Quote(r.text)
			return d, true
		}
	}

	// 5. the default. A name-only denial here is final unless an address
	// entry could still match one of the name's addresses.
	final := !p.addrAllowOnPort(port)
	if !p.public {
		return p.denied(d, StageDefault, "default:deny",
			"no allow entry matches and the default is deny; add an allow entry for this destination"), final
	}
	if !p.portOK(port) {
		return p.denied(d, StageDefault, "default:public",
			"port "+portString(port)+" is not among the ports "+p.portsString()+" that default: public allows; add an allow entry with this port"), final
	}
	d.Verdict, d.Stage, d.Rule = Allow, StageDefault, "default:public"
	if a.IsValid() {
		d.Reason = "globally reachable address (default: public)"
	} else {
		d.Reason = "default: public; every address of the name is checked when it is dialled"
	}
	return d, a.IsValid()
}

func (p *Policy) denied(d Decision, s Stage, rule, reason string) Decision {
	d.Verdict, d.Stage, d.Rule, d.Reason = Deny, s, rule, reason
	return d
}

func (p *Policy) portOK(port uint16) bool {
	return len(p.ports) == 0 || slices.Contains(p.ports, port)
}

func (p *Policy) portsString() string {
	return fmt.Sprint(p.ports)
}

func (p *Policy) addrAllowOnPort(port uint16) bool {
	if !p.addrAllow {
		return false
	}
	for i := range p.allow {
		if p.allow[i].isAddr() && p.allow[i].matchPort(port) {
			return true
		}
	}
	return false
}

// embeddedText holds Decision.Rule and Reason for every pair of an
// embedding row (NAT64, 6to4) and an IPv4 row, built once so that
// deciding an embedded address does not allocate.
var embeddedText = func() map[[2]*specialRow][2]string {
	m := map[[2]*specialRow][2]string{}
	for i := range specialV6 {
		via := &specialV6[i]
		if via.Embed == embedNone {
			continue
		}
		for j := range specialV4 {
			s := &specialV4[j]
			m[[2]*specialRow{via, s}] = [2]string{
				"special:" + via.Prefix.String() + ">" + s.Prefix.String(),
				via.Name + " address (" + via.Prefix.String() + ") that embeds a " + s.reason,
			}
		}
	}
	return m
}()

func specialRule(s, via *specialRow) string {
	if via != nil {
		return embeddedText[[2]*specialRow{via, s}][0]
	}
	return s.rule
}

func specialReason(s, via *specialRow) string {
	if via != nil {
		return embeddedText[[2]*specialRow{via, s}][1]
	}
	return s.reason
}

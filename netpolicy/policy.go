package netpolicy

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
)

// Policy is a validated, immutable egress policy. It is safe for
// concurrent use.
type Policy struct {
	public bool
	ports  []uint16 // for default public; empty = any
	allow  []rule
	deny   []rule
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
// metadata), explicit deny, HostName (allowed only by an entry naming
// it; see decideHostLoopback), a name no name rule could allow (see
// MayResolve), special-purpose addresses (unless an IP or CIDR allow
// entry covers the address), explicit allow, the default.
func (p *Policy) Decide(host string, addr netip.Addr, port uint16) Decision {
	d := Decision{Host: host, Port: port}
	name := false         // host is a name that only DNS could turn into addresses
	hostLoopback := false // host is HostName
	if host != "" {
		info, err := parseHostBracket(host, host)
		if err != nil {
			d.Stage, d.Rule = StageInvalid, "invalid"
			d.Reason = "invalid: " + err.(*TargetError).Reason
			return d
		}
		d.Host = info.String()
		switch {
		case info.addr.IsValid():
			ha := info.addr.WithZone("").Unmap()
			if addr.IsValid() && addr.WithZone("").Unmap() != ha {
				d.Addr = addr
				d.Stage, d.Rule = StageInvalid, "invalid"
				d.Reason = fmt.Sprintf("invalid: host %s is the address %s but the connection is to %s", host, ha, addr)
				return d
			}
			addr = ha
		case (info.localhost || info.hostLoopback) && !addr.IsValid():
			addr = loopbackV4
		case info.localhost && !addr.Unmap().IsLoopback():
			d.Addr = addr
			d.Stage, d.Rule = StageInvalid, "invalid"
			d.Reason = "invalid: " + info.name + " is a localhost name (RFC 6761) but the connection is to " + addr.String()
			return d
		case info.hostLoopback && addr.WithZone("").Unmap() != loopbackV4:
			d.Addr = addr
			d.Stage, d.Rule = StageInvalid, "invalid"
			d.Reason = "invalid: " + HostName + " is the host's loopback 127.0.0.1 but the connection is to " + addr.String()
			return d
		}
		host = info.name
		hostLoopback = info.hostLoopback
		name = !info.addr.IsValid() && !info.localhost && !info.hostLoopback
	} else if !addr.IsValid() {
		d.Stage, d.Rule, d.Reason = StageInvalid, "invalid", "invalid: neither host nor address given"
		return d
	}
	a := addr.WithZone("").Unmap()
	d.Addr = a

	// 1. always-deny.
	if host != "" {
		if t, ok := metadataNameText[host]; ok {
			return p.denied(d, StageAlwaysDeny, t.rule, t.reason[0])
		}
	}
	var al [3]netip.Addr
	n := 0
	if a.IsValid() {
		al, n = aliases(a)
		for i, x := range al[:n] {
			if t, ok := metadataText[x]; ok {
				return p.denied(d, StageAlwaysDeny, t.rule, t.reason[min(i, 1)])
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
			return p.denied(d, StageDeny, "deny:"+r.text, "matches deny entry "+strconv.Quote(r.text))
		}
	}

	// The host's loopback by its name: only an entry naming it.
	if hostLoopback {
		return p.decideHostLoopback(d, port)
	}

	// 3. a name no name rule could allow: never resolved, so its
	// addresses cannot matter.
	if name && !p.nameRuleCouldAllow(host, port) {
		return p.nameDenied(d, host, port)
	}

	// 4. special-purpose addresses; only an address entry unlocks one.
	if a.IsValid() {
		if s, via, _ := classify(a); s != nil {
			for i := range p.allow {
				r := &p.allow[i]
				if r.isAddr() && r.matchPort(port) && r.matchAddr(a) {
					d.Verdict, d.Stage, d.Rule = Allow, StageAllow, "allow:"+r.text
					d.Reason = a.String() + " is " + s.Name + " (" + s.Source + "), allowed by entry " + strconv.Quote(r.text)
					return d
				}
			}
			return p.denied(d, StageSpecial, specialRule(s, via), specialReason(s, via))
		}
	}

	// 5. explicit allow.
	for i := range p.allow {
		r := &p.allow[i]
		if !r.matchPort(port) {
			continue
		}
		if (host != "" && r.matchName(host)) || (a.IsValid() && r.matchAddr(a)) {
			d.Verdict, d.Stage, d.Rule = Allow, StageAllow, "allow:"+r.text
			d.Reason = "matches allow entry " + strconv.Quote(r.text)
			return d
		}
	}

	// 6. the default.
	if !p.public || !p.portOK(port) {
		return p.defaultDenied(d, port)
	}
	d.Verdict, d.Stage, d.Rule = Allow, StageDefault, "default:public"
	if a.IsValid() {
		d.Reason = "globally reachable address (default: public)"
	} else {
		d.Reason = "default: public; every address of the name is checked when it is dialled"
	}
	return d
}

// MayResolve judges the name host for port before any lookup and reports
// whether a Dialer may resolve it: only when a name rule could allow it —
// an allow entry that is a host name, a glob or "*" matching host and
// port, or default public admitting port — and no always-deny or deny
// entry refuses the name. IP and CIDR entries never make a name
// resolvable: they allow addresses written as addresses, because looking
// a name up to see whether it lands in an allowed range would itself
// carry data out (in the query, to whoever serves the name). When
// MayResolve reports false the Decision is the final one, a denial for a
// name; for an address literal or a localhost name it is the judgement of
// that address, which needs no lookup either.
func (p *Policy) MayResolve(host string, port uint16) (Decision, bool) {
	d := p.Decide(host, netip.Addr{}, port)
	return d, d.Verdict == Allow && !d.Addr.IsValid()
}

// nameRuleCouldAllow reports whether an allow entry that matches names,
// or default public, could allow the name host on port.
func (p *Policy) nameRuleCouldAllow(host string, port uint16) bool {
	if p.public && p.portOK(port) {
		return true
	}
	for i := range p.allow {
		r := &p.allow[i]
		if !r.isAddr() && r.matchPort(port) && r.matchName(host) {
			return true
		}
	}
	return false
}

// ruleNameUnresolved is the Rule of a name denied because only an address
// entry could have matched it, had it been resolved.
const ruleNameUnresolved = "name-not-resolved"

// nameDenied is the denial of the name host, which no name rule could
// allow on port. When an IP or CIDR entry covers port, the user may have
// expected it to match the name's addresses: the reason says why it does
// not and how to allow the name.
func (p *Policy) nameDenied(d Decision, host string, port uint16) Decision {
	var entry *rule
	for i := range p.allow {
		if p.allow[i].isAddr() && p.allow[i].matchPort(port) {
			entry = &p.allow[i]
			break
		}
	}
	if entry == nil {
		return p.defaultDenied(d, port)
	}
	hp := net.JoinHostPort(host, portString(port))
	why := "no allow entry names " + hp + " and the default is deny"
	if p.public {
		why = "port " + portString(port) + " is not among the ports " + p.portsString() + " that default: public allows and no allow entry names " + hp
	}
	return p.denied(d, StageDefault, ruleNameUnresolved, why+
		"; a name is never resolved to see whether it lands in an IP or CIDR entry such as "+strconv.Quote(entry.text)+
		" (the lookup alone would carry data out in DNS); allow it by name, e.g. --allow "+hp)
}

// defaultDenied is the default's denial of d.
func (p *Policy) defaultDenied(d Decision, port uint16) Decision {
	if !p.public {
		return p.denied(d, StageDefault, "default:deny",
			"no allow entry matches and the default is deny; add an allow entry for this destination")
	}
	return p.denied(d, StageDefault, "default:public",
		"port "+portString(port)+" is not among the ports "+p.portsString()+" that default: public allows; add an allow entry with this port")
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

// embeddedText holds Decision.Rule and Reason for every pair of an
// embedding row (NAT64, 6to4) and an IPv4 row, built once (on the first
// such decision, not in every start of dsh) so that deciding an embedded
// address does not allocate.
var embeddedText = sync.OnceValue(func() map[[2]*specialRow][2]string {
	m := map[[2]*specialRow][2]string{}
	t := specials()
	for i := range t.v6 {
		via := &t.v6[i]
		if via.Embed == embedNone {
			continue
		}
		for j := range t.v4 {
			s := &t.v4[j]
			m[[2]*specialRow{via, s}] = [2]string{
				"special:" + via.Prefix.String() + ">" + s.Prefix.String(),
				via.Name + " address (" + via.Prefix.String() + ") that embeds a " + s.reason,
			}
		}
	}
	return m
})

func specialRule(s, via *specialRow) string {
	if via != nil {
		return embeddedText()[[2]*specialRow{via, s}][0]
	}
	return s.rule
}

func specialReason(s, via *specialRow) string {
	if via != nil {
		return embeddedText()[[2]*specialRow{via, s}][1]
	}
	return s.reason
}

package netpolicy

import (
	"net/netip"
	"strconv"
)

// HostName is the one name for the host's loopback (127.0.0.1) from
// inside a world: host.dsh.internal:PORT reaches a service listening on
// the host's 127.0.0.1:PORT. It is never resolved: the Dialer maps it
// to 127.0.0.1 itself, and the Policy allows it only by an allow entry
// that names it ("host.dsh.internal" or "host.dsh.internal:PORT");
// "*", globs and default public never do, so a host service is reached
// only when the user asked for exactly that.
//
// For a world's Dialer (Dialer.World), 127.0.0.1, ::1 and localhost are
// the world's own loopback, which a world's clients reach directly
// (execworld sets NO_PROXY): the proxy refuses them whatever the policy
// says, so an entry such as 127.0.0.1:8080 never means the host's
// loopback for a world. Elsewhere (dsh's own dials from the host, dsh
// fetch) an address entry keeps its plain meaning.
const HostName = "host.dsh.internal"

// ruleHostLoopback is the Rule of a refused HostName.
const ruleHostLoopback = "special:" + HostName

// decideHostLoopback judges HostName on port, d.Addr being 127.0.0.1.
func (p *Policy) decideHostLoopback(d Decision, port uint16) Decision {
	for i := range p.allow {
		r := &p.allow[i]
		if r.kind == ruleHost && r.name == HostName && r.matchPort(port) {
			d.Verdict, d.Stage, d.Rule = Allow, StageAllow, "allow:"+r.text
			d.Reason = HostName + " is the host's loopback (127.0.0.1), allowed by entry " + strconv.Quote(r.text)
			return d
		}
	}
	hp := HostName + ":" + portString(port)
	return p.denied(d, StageSpecial, ruleHostLoopback,
		HostName+" is the host's loopback (127.0.0.1); only an allow entry naming it reaches it, e.g. --allow "+hp)
}

// ruleWorldLoopback is the Rule of a loopback address a world's Dialer
// refuses.
const ruleWorldLoopback = "special:world-loopback"

// worldLoopback refuses dec, an allowed connection to the loopback
// address a, for a world's Dialer.
func worldLoopback(dec Decision, a netip.Addr) Decision {
	dec.Verdict, dec.Stage, dec.Rule = Deny, StageSpecial, ruleWorldLoopback
	dec.Reason = a.String() + " is the world's own loopback, which its processes reach directly (NO_PROXY); the host's loopback is " +
		HostName + ":PORT, reached only by an allow entry naming it"
	return dec
}

package netpolicy

import "net/netip"

// Verdict is the outcome of a decision. The zero value is Deny, so a
// Decision that was never filled in fails closed.
type Verdict int

const (
	Deny Verdict = iota
	Allow
)

func (v Verdict) String() string {
	switch v {
	case Deny:
		return "deny"
	case Allow:
		return "allow"
	}
	return "invalid-verdict"
}

// Stage names the step of the decision order that produced a Decision.
type Stage int

const (
	// StageInvalid: the host or address could not be judged (bad spelling).
	StageInvalid Stage = iota
	// StageAlwaysDeny: a cloud metadata name or address.
	StageAlwaysDeny
	// StageDeny: an explicit deny entry.
	StageDeny
	// StageSpecial: a special-purpose (not globally reachable) address.
	StageSpecial
	// StageAllow: an explicit allow entry.
	StageAllow
	// StageDefault: the policy's default.
	StageDefault
)

func (s Stage) String() string {
	switch s {
	case StageInvalid:
		return "invalid"
	case StageAlwaysDeny:
		return "always-deny"
	case StageDeny:
		return "deny"
	case StageSpecial:
		return "special"
	case StageAllow:
		return "allow"
	case StageDefault:
		return "default"
	}
	return "invalid-stage"
}

// Decision is the judgement of one destination: the verdict, why, and the
// rule that matched.
type Decision struct {
	Verdict Verdict
	// Reason is a sentence for humans: what matched and, for a denial,
	// how to allow it if that is possible.
	Reason string
	// Rule identifies what matched, as "<stage>:<entry>", for example
	// "deny:tracker.example.com", "special:10.0.0.0/8",
	// "always-deny:169.254.169.254", "default:public", or one of the
	// rules that name no entry: "name-not-resolved" (a name that only an
	// IP or CIDR entry could have matched; names are not resolved for
	// those), "invalid", "resolve", "dial-check", "proxy-self".
	Rule string
	// Stage is the step of the decision order that decided.
	Stage Stage
	// Host is the normalised host name judged ("" for an address alone).
	Host string
	// Addr is the address judged (invalid when only a name was judged).
	Addr netip.Addr
	// Port is the destination port (0 when unknown).
	Port uint16
}

// Allowed reports whether the verdict is Allow.
func (d Decision) Allowed() bool { return d.Verdict == Allow }

package netpolicy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ruleKind is the form of an allow or deny entry.
type ruleKind int

const (
	ruleAny    ruleKind = iota // "*": every host and address
	ruleHost                   // "example.org": that name exactly
	ruleSuffix                 // "*.example.org": names below example.org
	rulePrefix                 // "10.0.0.0/8", "192.0.2.1": addresses
)

func (k ruleKind) String() string {
	switch k {
	case ruleAny:
		return "any"
	case ruleHost:
		return "host"
	case ruleSuffix:
		return "suffix"
	case rulePrefix:
		return "prefix"
	}
	return "invalid-rule-kind"
}

// rule is one parsed allow or deny entry.
type rule struct {
	text   string // the entry as written, for Decision.Rule
	kind   ruleKind
	name   string       // ruleHost: the name; ruleSuffix: ".example.org"
	prefix netip.Prefix // rulePrefix
	port   uint16       // 0 = any port
}

// parseRule parses an entry. Names are normalised like hosts; addresses
// must be written canonically (a.b.c.d, not 127.1), CIDRs without host
// bits, so an entry means what it looks like.
func parseRule(entry string) (rule, error) {
	r := rule{text: entry}
	s := strings.TrimSpace(entry)
	if s != entry || s == "" {
		return r, fmt.Errorf("entry %q: empty or surrounded by spaces", entry)
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return r, fmt.Errorf("entry %q: not a valid CIDR: %v", entry, err)
		}
		if p.Masked() != p {
			return r, fmt.Errorf("entry %q: CIDR has host bits set; did you mean %s?", entry, p.Masked())
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		r.kind, r.prefix = rulePrefix, p
		return r, nil
	}
	host, port, err := splitEntryPort(s)
	if err != nil {
		return r, fmt.Errorf("entry %q: %v", entry, err)
	}
	r.port = port
	if host == "*" {
		r.kind = ruleAny
		return r, nil
	}
	if strings.HasPrefix(host, "[") || strings.Count(host, ":") >= 2 {
		h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return r, fmt.Errorf("entry %q: not a valid IPv6 address (zones are not accepted)", entry)
		}
		a = a.Unmap()
		r.kind, r.prefix = rulePrefix, netip.PrefixFrom(a, a.BitLen())
		return r, nil
	}
	suffix := false
	if strings.HasPrefix(host, "*.") {
		suffix, host = true, host[2:]
	}
	if strings.Contains(host, "*") {
		return r, fmt.Errorf("entry %q: '*' is only allowed as a whole first label (*.example.org)", entry)
	}
	info, err := parseHost(host)
	if err != nil {
		return r, fmt.Errorf("entry %q: %v", entry, err.(*TargetError).Reason)
	}
	if info.addr.IsValid() {
		if suffix {
			return r, fmt.Errorf("entry %q: '*.' cannot precede an address", entry)
		}
		if canon := info.addr.String(); canon != strings.TrimSuffix(host, ".") {
			return r, fmt.Errorf("entry %q: write the address as %s", entry, canon)
		}
		a := info.addr.Unmap()
		r.kind, r.prefix = rulePrefix, netip.PrefixFrom(a, a.BitLen())
		return r, nil
	}
	if suffix {
		r.kind, r.name = ruleSuffix, "."+info.name
	} else {
		r.kind, r.name = ruleHost, info.name
	}
	return r, nil
}

// splitEntryPort splits "host:port" and "[v6]:port"; a bare IPv6 address
// has no port.
func splitEntryPort(s string) (string, uint16, error) {
	if strings.HasPrefix(s, "[") {
		i := strings.IndexByte(s, ']')
		if i < 0 {
			return "", 0, fmt.Errorf("unbalanced '['")
		}
		rest := s[i+1:]
		if rest == "" {
			return s[:i+1], 0, nil
		}
		if rest[0] != ':' {
			return "", 0, fmt.Errorf("unexpected %q after ']'", rest)
		}
		p, err := parsePort(rest[1:])
		return s[:i+1], p, err
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, 0, nil
	case 1:
		i := strings.IndexByte(s, ':')
		p, err := parsePort(s[i+1:])
		return s[:i], p, err
	}
	return s, 0, nil // bare IPv6
}

// parsePort accepts 1..65535 in decimal digits (leading zeros allowed,
// as Go's dialer reads them); signs, spaces, 0 and overflow are invalid.
func parsePort(s string) (uint16, error) {
	if s == "" {
		return 0, fmt.Errorf("empty port")
	}
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("port %q is not a decimal number", s)
		}
		v = v*10 + int(c-'0')
		if v > 65535 {
			return 0, fmt.Errorf("port %q is out of range 1-65535", s)
		}
	}
	if v == 0 {
		return 0, fmt.Errorf("port 0 is not a destination")
	}
	return uint16(v), nil
}

// matchName reports whether the rule matches a normalised host name.
func (r *rule) matchName(name string) bool {
	switch r.kind {
	case ruleAny:
		return true
	case ruleHost:
		return name == r.name
	case ruleSuffix:
		return len(name) > len(r.name) && strings.HasSuffix(name, r.name)
	}
	return false
}

// matchAddr reports whether the rule matches an address (unmapped, no
// zone).
func (r *rule) matchAddr(a netip.Addr) bool {
	switch r.kind {
	case ruleAny:
		return true
	case rulePrefix:
		return r.prefix.Contains(a)
	}
	return false
}

func (r *rule) matchPort(port uint16) bool { return r.port == 0 || r.port == port }

func (r *rule) isAddr() bool { return r.kind == rulePrefix }

func portString(p uint16) string { return strconv.Itoa(int(p)) }

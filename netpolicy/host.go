package netpolicy

import (
	"net/netip"
	"strings"
	"unicode/utf8"
)

// hostInfo is a host as dsh will dial it.
type hostInfo struct {
	// name is the normalised DNS name (lower case ASCII, no trailing
	// dot); empty when the host is an address.
	name string
	// addr is the address when the host is one (in any spelling).
	addr netip.Addr
	// localhost is set for "localhost" and names under ".localhost"
	// (RFC 6761 §6.3): they are loopback and never resolved.
	localhost bool
	// hostLoopback is set for HostName: the host's loopback, never
	// resolved, reached only by an allow entry naming it.
	hostLoopback bool
}

// String returns the canonical spelling of the host.
func (h hostInfo) String() string {
	if h.name != "" {
		return h.name
	}
	return h.addr.String()
}

const (
	maxHostLen  = 253
	maxLabelLen = 63
)

var loopbackV4 = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// parseHost normalises a host (without port or brackets around an IPv6
// literal; see parseHostBracket) the way Go's net/http dials it, and
// judges every spelling of an address as that address:
//
//   - IDNA (UTS #46) mapping of runes that map to ASCII: fullwidth
//     digits and letters, ideographic and fullwidth dots, enclosed and
//     mathematical alphanumerics, ignored runes such as soft hyphens
//     (table in idna_table.go, generated from golang.org/x/net/idna,
//     which net/http uses). A host that still holds a non-ASCII rune
//     after that mapping is rejected: netpolicy imports only the
//     standard library, so it cannot reproduce Punycode conversion of
//     real internationalised names exactly; give such names in their
//     xn-- form.
//   - lower case, one trailing dot removed;
//   - a host whose last label is numeric (all digits, or 0x and hex) is
//     an IPv4 address in inet_aton form (decimal, octal with a leading
//     0, hex with 0x, 1 to 4 parts: 127.1, 2130706433, 0x7f.0.0.1) and is
//     judged as that address, never given to a resolver. If it is not a
//     valid inet_aton spelling it is invalid (as in the WHATWG URL
//     standard), so no C resolver ever sees an ambiguous number;
//   - percent signs (escapes, zone IDs), backslashes, '@', whitespace,
//     control characters and anything outside letters, digits, '-', '_'
//     and '.' are rejected.
func parseHost(in string) (hostInfo, error) {
	h := in
	if h == "" {
		return hostInfo{}, invalidf(in, "empty host")
	}
	if len(h) > 4*maxHostLen {
		return hostInfo{}, invalidf(in, "host longer than %d bytes", maxHostLen)
	}
	if strings.IndexByte(h, ':') >= 0 {
		return parseIPv6(in, h)
	}
	ascii := true
	for i := 0; i < len(h); i++ {
		if h[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		m, err := idnaMap(in, h)
		if err != nil {
			return hostInfo{}, err
		}
		h = m
		if strings.IndexByte(h, ':') >= 0 {
			return parseIPv6(in, h)
		}
	}
	if err := checkHostBytes(in, h); err != nil {
		return hostInfo{}, err
	}
	h = lowerASCII(h)
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return hostInfo{}, invalidf(in, "empty host")
	}
	if len(h) > maxHostLen {
		return hostInfo{}, invalidf(in, "host longer than %d bytes", maxHostLen)
	}
	last := h
	if i := strings.LastIndexByte(h, '.'); i >= 0 {
		last = h[i+1:]
	}
	if isNumericLabel(last) {
		a, ok := parseInetAton(h)
		if !ok {
			return hostInfo{}, invalidf(in, "ends in a number but is not an IPv4 address; write addresses as four decimal numbers (a.b.c.d)")
		}
		return hostInfo{addr: a}, nil
	}
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			continue
		}
		label := h[start:i]
		switch {
		case label == "":
			return hostInfo{}, invalidf(in, "empty label in host name")
		case len(label) > maxLabelLen:
			return hostInfo{}, invalidf(in, "label %q longer than %d bytes", label, maxLabelLen)
		}
		start = i + 1
	}
	info := hostInfo{name: h}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		info.localhost = true
	}
	info.hostLoopback = h == HostName
	return info, nil
}

// parseIPv6 judges a host that holds a colon: only an IPv6 literal
// without zone can.
func parseIPv6(in, h string) (hostInfo, error) {
	if strings.IndexByte(h, '%') >= 0 {
		return hostInfo{}, invalidf(in, "IPv6 zone IDs are not accepted; give the address without %%zone")
	}
	a, err := netip.ParseAddr(h)
	if err != nil || !a.Is6() {
		return hostInfo{}, invalidf(in, "not a valid IPv6 address")
	}
	return hostInfo{addr: a}, nil
}

// parseHostBracket accepts "[v6]" as well as the forms parseHost takes;
// this is the host of a URL or of host:port.
func parseHostBracket(in, h string) (hostInfo, error) {
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return hostInfo{}, invalidf(in, "unbalanced '[' in host")
		}
		inner := h[1 : len(h)-1]
		if strings.IndexByte(inner, ':') < 0 {
			return hostInfo{}, invalidf(in, "brackets are only for IPv6 addresses")
		}
		return parseIPv6(in, inner)
	}
	if strings.ContainsAny(h, "[]") {
		return hostInfo{}, invalidf(in, "misplaced '[' or ']' in host")
	}
	return parseHost(h)
}

// checkHostBytes rejects every byte a DNS name or IPv4 spelling cannot
// hold, each with its own reason.
func checkHostBytes(in, h string) error {
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_':
		case c == '%':
			return invalidf(in, "percent-encoded or zoned host; write the host literally")
		case c == '\\':
			return invalidf(in, "backslash in host (browsers read it as '/'); remove it")
		case c == '@':
			return invalidf(in, "'@' in host (userinfo trick); URLs with user names are not accepted")
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			return invalidf(in, "whitespace in host")
		case c < 0x20 || c == 0x7f:
			return invalidf(in, "control character %#x in host", c)
		case c >= utf8.RuneSelf:
			return invalidf(in, "non-ASCII host; give internationalised names in their xn-- (Punycode) form")
		default:
			return invalidf(in, "character %q not allowed in a host name", c)
		}
	}
	return nil
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// isNumericLabel reports whether a label is a number the way the WHATWG
// URL standard's "ends in a number" check sees it: all decimal digits, or
// 0x/0X followed by hex digits.
func isNumericLabel(l string) bool {
	if l == "" {
		return false
	}
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// parseInetAton parses the IPv4 spellings inet_aton(3) accepts (and that
// Go's cgo resolver and browsers therefore treat as addresses): one to
// four parts, each decimal, octal (leading 0) or hex (0x); the last part
// fills the remaining bytes.
func parseInetAton(s string) (netip.Addr, bool) {
	var parts [4]uint64
	n := 0
	for {
		if n == 4 {
			return netip.Addr{}, false
		}
		i := strings.IndexByte(s, '.')
		p := s
		if i >= 0 {
			p = s[:i]
		}
		v, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		parts[n] = v
		n++
		if i < 0 {
			break
		}
		s = s[i+1:]
	}
	var v uint64
	for i := 0; i < n-1; i++ {
		if parts[i] > 0xff {
			return netip.Addr{}, false
		}
		v |= parts[i] << (24 - 8*i)
	}
	lastBits := 32 - 8*(n-1)
	if parts[n-1] >= 1<<lastBits {
		return netip.Addr{}, false
	}
	v |= parts[n-1]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseAtonPart(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
		if p == "" {
			return 0, true // "0x" is zero for inet_aton and WHATWG alike
		}
	case len(p) >= 2 && p[0] == '0':
		base, p = 8, p[1:]
	}
	var v uint64
	for i := 0; i < len(p); i++ {
		c := p[i]
		var d uint64
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		case 'A' <= c && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}

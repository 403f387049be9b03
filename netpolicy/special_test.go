package netpolicy

import (
	"net/netip"
	"strings"
	"testing"
)

// registryWant is written by hand from the IANA registries and the issue,
// independently of specialV4/specialV6: each prefix, whether it is
// special (denied) and what lies just outside it.
var registryWant = []struct {
	prefix  string
	special bool // false: globally reachable (exception or embedding)
}{
	// IANA IPv4 Special-Purpose Address Registry.
	{"0.0.0.0/8", true},
	{"0.0.0.0/32", true},
	{"10.0.0.0/8", true},
	{"100.64.0.0/10", true},
	{"127.0.0.0/8", true},
	{"169.254.0.0/16", true},
	{"172.16.0.0/12", true},
	{"192.0.0.0/24", true},
	{"192.0.0.0/29", true},
	{"192.0.0.8/32", true},
	{"192.0.0.9/32", false},
	{"192.0.0.10/32", false},
	{"192.0.0.170/32", true},
	{"192.0.0.171/32", true},
	{"192.0.2.0/24", true},
	{"192.31.196.0/24", false},
	{"192.52.193.0/24", false},
	{"192.88.99.0/24", true},
	{"192.168.0.0/16", true},
	{"192.175.48.0/24", false},
	{"198.18.0.0/15", true},
	{"198.51.100.0/24", true},
	{"203.0.113.0/24", true},
	{"240.0.0.0/4", true},
	{"255.255.255.255/32", true},
	// Multicast (RFC 5771).
	{"224.0.0.0/4", true},
	// IANA IPv6 Special-Purpose Address Registry.
	{"::1/128", true},
	{"::/128", true},
	{"::ffff:0:0/96", true}, // judged as the IPv4 address: all of 0.0.0.0/0 is tested below
	{"64:ff9b::/96", false}, // judged by the embedded IPv4 address
	{"64:ff9b:1::/48", true},
	{"100::/64", true},
	{"100:0:0:1::/64", true},
	{"2001::/23", true},
	{"2001::/32", true},
	{"2001:1::1/128", false},
	{"2001:1::2/128", false},
	{"2001:1::3/128", false},
	{"2001:2::/48", true},
	{"2001:3::/32", false},
	{"2001:4:112::/48", false},
	{"2001:10::/28", true},
	{"2001:20::/28", false},
	{"2001:30::/28", false},
	{"2001:db8::/32", true},
	{"2002::/16", false}, // judged by the embedded IPv4 address
	{"2620:4f:8000::/48", false},
	{"3fff::/20", true},
	{"5f00::/16", true},
	{"fc00::/7", true},
	{"fe80::/10", true},
	// Outside the registry, named by the issue.
	{"::/96", true},
	{"::ffff:0:0:0/96", true},
	{"fec0::/10", true},
	{"ff00::/8", true},
}

// TestSpecialTableMatchesRegistry checks the table row by row against the
// hand-written registry list, and that nothing is in one and not the
// other.
func TestSpecialTableMatchesRegistry(t *testing.T) {
	rows := map[netip.Prefix]*specialRow{}
	for _, tab := range [][]specialRow{specials().v4, specials().v6} {
		for i := range tab {
			r := &tab[i]
			if r.Source == "" || r.Name == "" || (!r.Global && r.Why == "") {
				t.Errorf("row %s lacks name, source or reason: %+v", r.Prefix, *r)
			}
			if !strings.HasPrefix(r.Source, "RFC ") {
				t.Errorf("row %s source %q does not name an RFC", r.Prefix, r.Source)
			}
			rows[r.Prefix] = r
		}
	}
	seen := map[netip.Prefix]bool{}
	for _, w := range registryWant {
		p := netip.MustParsePrefix(w.prefix)
		seen[p] = true
		r, ok := rows[p]
		if !ok {
			t.Errorf("registry row %s missing from the table", p)
			continue
		}
		if got := !r.Global; got != w.special {
			t.Errorf("row %s: special = %v, want %v", p, got, w.special)
		}
	}
	for p := range rows {
		if !seen[p] {
			t.Errorf("table row %s is not in the registry list", p)
		}
	}
}

// TestClassifyEveryRow judges the first and last address of every
// special row: each must be denied by that row or a more specific one.
// Embedding rows are checked in TestEmbeddings.
func TestClassifyEveryRow(t *testing.T) {
	for _, tab := range [][]specialRow{specials().v4, specials().v6} {
		for i := range tab {
			r := &tab[i]
			if r.Global || r.Prefix == netip.MustParsePrefix("::ffff:0:0/96") {
				continue
			}
			for _, a := range []netip.Addr{r.Prefix.Addr(), lastAddr(r.Prefix)} {
				s, _, _ := classify(a)
				if s == nil {
					t.Errorf("classify(%s) = global, want special (row %s)", a, r.Prefix)
					continue
				}
				if s.Prefix.Bits() < r.Prefix.Bits() || !s.Prefix.Contains(a) {
					t.Errorf("classify(%s) = row %s, want row %s or more specific", a, s.Prefix, r.Prefix)
				}
			}
		}
	}
}

// TestGlobalExceptions checks the globally reachable rows are not
// special, even though a wider row around them is.
func TestGlobalExceptions(t *testing.T) {
	for _, s := range []string{"192.0.0.9", "192.0.0.10", "192.31.196.1", "192.52.193.1", "192.175.48.6",
		"2001:1::1", "2001:1::2", "2001:1::3", "2001:3::1", "2001:4:112::1", "2001:20::1", "2001:30::1", "2620:4f:8000::1"} {
		a := netip.MustParseAddr(s)
		if r, _, _ := classify(a); r != nil {
			t.Errorf("classify(%s) = special row %s, want global", a, r.Prefix)
		}
	}
}

// TestEdgesOutside checks addresses just outside special ranges are
// public: the table has no off-by-one.
func TestEdgesOutside(t *testing.T) {
	for _, s := range []string{
		"9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.0",
		"169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0", "191.255.255.255",
		"192.0.1.0", "192.0.3.0", "192.88.98.255", "192.88.100.0", "192.167.255.255", "192.169.0.0",
		"198.17.255.255", "198.20.0.0", "198.51.99.255", "198.51.101.0", "203.0.112.255", "203.0.114.0",
		"223.255.255.255", "1.0.0.0",
		"2000::", "2001:200::", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::", "2003::",
		"3ffe:ffff::", "3fff:1000::", "2606:4700::1111",
	} {
		a := netip.MustParseAddr(s)
		if r, _, _ := classify(a); r != nil {
			t.Errorf("classify(%s) = special row %s (%s), want global", a, r.Prefix, r.Name)
		}
	}
}

// TestEmbeddings checks IPv6 forms that carry an IPv4 address.
func TestEmbeddings(t *testing.T) {
	tests := []struct {
		addr    string
		special bool
		inner   string // embedded address that decided, if any
	}{
		{"64:ff9b::8.8.8.8", false, ""},
		{"64:ff9b::10.0.0.1", true, "10.0.0.1"},
		{"64:ff9b::127.0.0.1", true, "127.0.0.1"},
		{"64:ff9b::c0a8:101", true, "192.168.1.1"},
		{"2002:808:808::1", false, ""},
		{"2002:a00:1::1", true, "10.0.0.1"},
		{"2002:7f00:1::", true, "127.0.0.1"},
		{"2002:c0a8:101:1::1", true, "192.168.1.1"},
		{"2002:a9fe:a9fe::", true, "169.254.169.254"},
		{"::ffff:8.8.8.8", false, ""},
		{"::ffff:10.0.0.1", true, ""},
		{"::8.8.8.8", true, ""},                            // IPv4-compatible: deprecated, always special
		{"::ffff:0:8.8.8.8", true, ""},                     // SIIT
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", true, ""}, // Teredo
		{"64:ff9b:1::8.8.8.8", true, ""},
		{"fe80::1%eth0", true, ""},
		{"fec0::1", true, ""},
		{"fd00::1", true, ""},
		{"ff02::1", true, ""},
		{"3fff::1", true, ""},
		{"4000::1", true, ""}, // outside 2000::/3
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		s, _, inner := classify(a)
		if (s != nil) != tt.special {
			t.Errorf("classify(%s) special = %v, want %v", a, s != nil, tt.special)
		}
		if tt.inner != "" && inner != netip.MustParseAddr(tt.inner) {
			t.Errorf("classify(%s) embedded = %v, want %s", a, inner, tt.inner)
		}
	}
}

// TestIPv4MappedSpace judges every /8 of IPv4 both plain and mapped: the
// mapped form always gets the plain form's verdict.
func TestIPv4MappedSpace(t *testing.T) {
	p := MustNew(WebDefault())
	for i := 0; i < 256; i++ {
		for _, low := range [][3]byte{{0, 0, 0}, {255, 255, 255}, {169, 254, 1}} {
			a := netip.AddrFrom4([4]byte{byte(i), low[0], low[1], low[2]})
			m := netip.AddrFrom16(a.As16())
			if got, want := p.Decide("", m, 443), p.Decide("", a, 443); got.Verdict != want.Verdict || got.Rule != want.Rule {
				t.Errorf("Decide(%s) = %v %s, want %v %s as for %s", m, got.Verdict, got.Rule, want.Verdict, want.Rule, a)
			}
		}
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

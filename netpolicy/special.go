package netpolicy

import (
	"net/netip"
	"sort"
	"sync"
)

// specialRow is one row of dsh's special-purpose address table. Rows come
// from the IANA IPv4 and IPv6 Special-Purpose Address Registries
// (https://www.iana.org/assignments/iana-ipv4-special-registry,
// https://www.iana.org/assignments/iana-ipv6-special-registry) plus the
// ranges those registries leave to other documents: multicast, class E,
// limited broadcast, site-local, SIIT.
//
// Lookup takes the most specific row, so a globally reachable /32 inside a
// non-global /24 (192.0.0.9 PCP anycast inside 192.0.0.0/24) is judged by
// its own row.
type specialRow struct {
	Prefix netip.Prefix
	Name   string // the registry's name for the block
	Source string // the RFC (and section) that assigns it
	// Global is the registry's "Globally Reachable" column. Rows with
	// Global true are exceptions carved out of a wider non-global row.
	Global bool
	// Embed says the row carries an IPv4 address that is judged instead
	// of the IPv6 address itself.
	Embed embedKind
	// Why explains, for a denial, what the range is for.
	Why string

	// rule and reason are Decision.Rule and Decision.Reason for a
	// denial by this row, built once so deciding does not allocate.
	rule, reason string
}

// embedKind is how an IPv6 address carries an IPv4 address.
type embedKind int

const (
	embedNone  embedKind = iota
	embedLow32           // NAT64 64:ff9b::/96: IPv4 in the last 32 bits
	embed6to4            // 6to4 2002::/16: IPv4 in bits 16..47
)

func (k embedKind) String() string {
	switch k {
	case embedNone:
		return "none"
	case embedLow32:
		return "low-32-bits"
	case embed6to4:
		return "6to4"
	}
	return "invalid-embed"
}

func row(prefix, name, source string, global bool, why string) specialRow {
	return specialRow{Prefix: netip.MustParsePrefix(prefix), Name: name, Source: source, Global: global, Why: why}
}

// specialTables are the special-purpose address tables, most specific
// row first, with their indexes.
type specialTables struct {
	v4, v6           []specialRow
	indexV4, indexV6 *rowIndex
	// reservedV6 judges IPv6 addresses outside every row and outside
	// 2000::/3, the only block IANA allocates as global unicast (IPv6
	// Address Space registry, RFC 4291 §2.4). Such addresses are reserved
	// by the IETF and cannot be routed on the Internet.
	reservedV6 *specialRow
}

// specials builds the tables on the first decision that needs them, not in
// package initialisation: that runs in every start of dsh, on the
// critical path of every command, most of which decide nothing.
var specials = sync.OnceValue(func() *specialTables {
	t := &specialTables{v4: sortRows(specialV4()), v6: sortRows(specialV6())}
	t.indexV4, t.indexV6 = indexRows(t.v4), indexRows(t.v6)
	t.reservedV6 = &sortRows([]specialRow{row("::/0", "IETF-reserved IPv6", "RFC 4291 §2.4 (IANA IPv6 address space)", false,
		"outside 2000::/3 global unicast, never routed")})[0]
	t.reservedV6.rule = "special:outside-2000::/3"
	return t
})

// specialV4 is the IPv4 table.
func specialV4() []specialRow {
	return []specialRow{
		row("0.0.0.0/8", "this network", "RFC 791 §3.2", false, "source-only addresses; connecting to them reaches the local host"),
		row("0.0.0.0/32", "this host on this network", "RFC 1122 §3.2.1.3", false, "the unspecified address; connecting to it reaches the local host"),
		row("10.0.0.0/8", "private-use", "RFC 1918", false, "private network"),
		row("100.64.0.0/10", "shared address space", "RFC 6598", false, "carrier-grade NAT / provider-internal network"),
		row("127.0.0.0/8", "loopback", "RFC 1122 §3.2.1.3", false, "this machine"),
		row("169.254.0.0/16", "link-local", "RFC 3927", false, "link-local network (cloud metadata lives here)"),
		row("172.16.0.0/12", "private-use", "RFC 1918", false, "private network"),
		row("192.0.0.0/24", "IETF protocol assignments", "RFC 6890 §2.1", false, "reserved for protocol use"),
		row("192.0.0.0/29", "IPv4 service continuity prefix", "RFC 7335", false, "DS-Lite/464XLAT internal addresses"),
		row("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", false, "placeholder address, not a destination"),
		row("192.0.0.9/32", "Port Control Protocol anycast", "RFC 7723", true, ""),
		row("192.0.0.10/32", "traversal using relays around NAT anycast", "RFC 8155", true, ""),
		row("192.0.0.170/32", "NAT64/DNS64 discovery", "RFC 8880 §7.1, RFC 7050", false, "well-known name resolution helper, not a destination"),
		row("192.0.0.171/32", "NAT64/DNS64 discovery", "RFC 8880 §7.1, RFC 7050", false, "well-known name resolution helper, not a destination"),
		row("192.0.2.0/24", "documentation (TEST-NET-1)", "RFC 5737", false, "documentation range, never routed"),
		row("192.31.196.0/24", "AS112-v4", "RFC 7535", true, ""),
		row("192.52.193.0/24", "automatic multicast tunneling", "RFC 7450", true, ""),
		row("192.88.99.0/24", "deprecated 6to4 relay anycast", "RFC 7526", false, "deprecated relay range, not a destination"),
		row("192.168.0.0/16", "private-use", "RFC 1918", false, "private network"),
		row("192.175.48.0/24", "direct delegation AS112 service", "RFC 7534", true, ""),
		row("198.18.0.0/15", "benchmarking", "RFC 2544", false, "network test range"),
		row("198.51.100.0/24", "documentation (TEST-NET-2)", "RFC 5737", false, "documentation range, never routed"),
		row("203.0.113.0/24", "documentation (TEST-NET-3)", "RFC 5737", false, "documentation range, never routed"),
		row("224.0.0.0/4", "multicast", "RFC 5771", false, "multicast group, not a unicast destination"),
		row("240.0.0.0/4", "reserved (class E)", "RFC 1112 §4", false, "reserved for future use, never routed"),
		row("255.255.255.255/32", "limited broadcast", "RFC 919 §7, RFC 8190", false, "broadcast to the local network"),
	}
}

// specialV6 is the IPv6 table. IPv4-mapped addresses never reach it: they
// are unmapped and judged as IPv4 first.
func specialV6() []specialRow {
	return []specialRow{
		row("::/128", "unspecified address", "RFC 4291 §2.5.2", false, "the unspecified address; connecting to it reaches the local host"),
		row("::1/128", "loopback", "RFC 4291 §2.5.3", false, "this machine"),
		row("::/96", "IPv4-compatible (deprecated)", "RFC 4291 §2.5.5.1", false, "deprecated IPv4 embedding, no legitimate destination"),
		row("::ffff:0:0/96", "IPv4-mapped", "RFC 4291 §2.5.5.2", false, "IPv4 address in IPv6 form (judged as the IPv4 address)"),
		row("::ffff:0:0:0/96", "IPv4-translated (SIIT)", "RFC 2765 §2.1", false, "stateless translation embedding, no legitimate destination"),
		{Prefix: netip.MustParsePrefix("64:ff9b::/96"), Name: "IPv4-IPv6 translation (NAT64)", Source: "RFC 6052", Global: true, Embed: embedLow32},
		row("64:ff9b:1::/48", "local-use IPv4/IPv6 translation", "RFC 8215", false, "site-local NAT64 prefix"),
		row("100::/64", "discard-only", "RFC 6666", false, "black-hole prefix"),
		row("100:0:0:1::/64", "dummy IPv6 prefix", "RFC 9780", false, "placeholder prefix, not a destination"),
		row("2001::/23", "IETF protocol assignments", "RFC 2928", false, "reserved for protocol use"),
		row("2001::/32", "Teredo", "RFC 4380, RFC 8190", false, "Teredo tunnel endpoint (carries an obfuscated IPv4 address)"),
		row("2001:1::1/128", "Port Control Protocol anycast", "RFC 7723", true, ""),
		row("2001:1::2/128", "traversal using relays around NAT anycast", "RFC 8155", true, ""),
		row("2001:1::3/128", "DNS-SD service registration protocol anycast", "RFC 9665", true, ""),
		row("2001:2::/48", "benchmarking", "RFC 5180", false, "network test range"),
		row("2001:3::/32", "automatic multicast tunneling", "RFC 7450", true, ""),
		row("2001:4:112::/48", "AS112-v6", "RFC 7535", true, ""),
		row("2001:10::/28", "deprecated ORCHID", "RFC 4843", false, "deprecated overlay identifiers, not routable"),
		row("2001:20::/28", "ORCHIDv2", "RFC 7343", true, ""),
		row("2001:30::/28", "drone remote ID entity tags", "RFC 9374", true, ""),
		row("2001:db8::/32", "documentation", "RFC 3849", false, "documentation range, never routed"),
		{Prefix: netip.MustParsePrefix("2002::/16"), Name: "6to4", Source: "RFC 3056", Global: true, Embed: embed6to4},
		row("2620:4f:8000::/48", "direct delegation AS112 service", "RFC 7534", true, ""),
		row("3fff::/20", "documentation", "RFC 9637", false, "documentation range, never routed"),
		row("5f00::/16", "segment routing (SRv6) SIDs", "RFC 9602", false, "SRv6 segment identifiers, not a destination"),
		row("fc00::/7", "unique-local", "RFC 4193", false, "private network"),
		row("fe80::/10", "link-local unicast", "RFC 4291 §2.5.6", false, "link-local network"),
		row("fec0::/10", "site-local (deprecated)", "RFC 3879", false, "deprecated site-local network"),
		row("ff00::/8", "multicast", "RFC 4291 §2.7", false, "multicast group, not a unicast destination"),
	}
}

var globalUnicastV6 = netip.MustParsePrefix("2000::/3")

func sortRows(rows []specialRow) []specialRow {
	for i := range rows {
		r := &rows[i]
		r.rule = "special:" + r.Prefix.String()
		r.reason = r.Name + " address (" + r.Source + "): " + r.Why + "; allow it only with an IP, IP:port or CIDR allow entry"
	}
	// Most specific first, so the first match is the longest prefix.
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Prefix.Bits() > rows[j].Prefix.Bits() })
	return rows
}

// rowIndex lists, for each possible first byte of an address, the rows
// (most specific first) that can contain it, so a lookup tests a few
// prefixes instead of the whole table.
type rowIndex [256][]*specialRow

func indexRows(rows []specialRow) *rowIndex {
	var ix rowIndex
	for i := range rows {
		r := &rows[i]
		first := r.Prefix.Addr().AsSlice()[0]
		span := 1
		if b := r.Prefix.Bits(); b < 8 {
			span = 1 << (8 - b)
		}
		for j := 0; j < span; j++ {
			ix[int(first)+j] = append(ix[int(first)+j], r)
		}
	}
	return &ix
}

// lookup returns the most specific row containing a (unmapped, no zone).
func lookup(a netip.Addr) *specialRow {
	t := specials()
	ix := t.indexV6
	var first byte
	if a.Is4() {
		ix = t.indexV4
		first = a.As4()[0]
	} else {
		first = a.As16()[0]
	}
	for _, r := range ix[first] {
		if r.Prefix.Contains(a) {
			return r
		}
	}
	return nil
}

// classify returns the row that makes a special-purpose (not globally
// reachable) address, or nil for a globally reachable one. For NAT64 and
// 6to4 addresses the embedded IPv4 address decides: via is the IPv6 row
// and inner the embedded address.
func classify(a netip.Addr) (special, via *specialRow, inner netip.Addr) {
	a = a.WithZone("").Unmap()
	if a.Is4() {
		if r := lookup(a); r != nil && !r.Global {
			return r, nil, netip.Addr{}
		}
		return nil, nil, netip.Addr{}
	}
	r := lookup(a)
	if r == nil {
		if !globalUnicastV6.Contains(a) {
			return specials().reservedV6, nil, netip.Addr{}
		}
		return nil, nil, netip.Addr{}
	}
	if r.Embed != embedNone {
		v4 := embedded(a, r.Embed)
		if s := lookup(v4); s != nil && !s.Global {
			return s, r, v4
		}
		return nil, nil, netip.Addr{}
	}
	if !r.Global {
		return r, nil, netip.Addr{}
	}
	return nil, nil, netip.Addr{}
}

// embedded extracts the IPv4 address an IPv6 address carries.
func embedded(a netip.Addr, k embedKind) netip.Addr {
	b := a.As16()
	switch k {
	case embedLow32:
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case embed6to4:
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	return netip.Addr{}
}

var (
	compatV6 = netip.MustParsePrefix("::/96")
	siitV6   = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64V6  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4V6 = netip.MustParsePrefix("2002::/16")
	teredoV6 = netip.MustParsePrefix("2001::/32")
)

// aliases returns the address (unmapped, without zone) and every IPv4
// address it embeds, so always-deny and deny entries catch a metadata or
// denied address in any of its IPv6 disguises. n is how many are set.
func aliases(a netip.Addr) (out [3]netip.Addr, n int) {
	a = a.WithZone("").Unmap()
	out[0], n = a, 1
	if a.Is4() {
		return out, n
	}
	switch {
	case nat64V6.Contains(a), compatV6.Contains(a), siitV6.Contains(a):
		out[n] = embedded(a, embedLow32)
		n++
	case sixTo4V6.Contains(a):
		out[n] = embedded(a, embed6to4)
		n++
	case teredoV6.Contains(a):
		// RFC 4380 §4: bits 32..63 are the Teredo server, the last 32
		// bits the client's address with every bit inverted.
		b := a.As16()
		out[n] = netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]})
		out[n+1] = netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		n += 2
	}
	return out, n
}

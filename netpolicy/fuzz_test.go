package netpolicy

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func FuzzParseTarget(f *testing.F) {
	for _, b := range bypasses {
		f.Add(b.in)
	}
	for _, c := range allowControls {
		f.Add(c.in)
	}
	p := MustNew(WebDefault())
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseTarget(s)
		if strings.Contains(s, "://") {
			differential(t, s)
		}
		if err != nil {
			return
		}
		for i := 0; i < len(tg.Host); i++ {
			if tg.Host[i] >= 0x80 || tg.Host[i] <= ' ' {
				t.Fatalf("ParseTarget(%q).Host = %q holds byte %#x", s, tg.Host, tg.Host[i])
			}
		}
		// The normalised host is a fixed point and keeps its verdict.
		again, err := ParseTarget(tg.Host)
		if err != nil || again.Host != tg.Host || again.Addr != tg.Addr {
			t.Fatalf("ParseTarget(%q) = %+v, but ParseTarget(%q) = %+v, %v", s, tg, tg.Host, again, err)
		}
		d1 := p.Decide(s2host(s, tg), netip.Addr{}, tg.Port)
		d2 := p.Decide(tg.Host, netip.Addr{}, tg.Port)
		if d1.Verdict != d2.Verdict || d1.Rule != d2.Rule {
			t.Fatalf("Decide(spelling of %q) = %v %s, canonical %q = %v %s", s, d1.Verdict, d1.Rule, tg.Host, d2.Verdict, d2.Rule)
		}
		if tg.Addr.IsValid() {
			d3 := p.Decide("", tg.Addr, tg.Port)
			if d3.Verdict != d2.Verdict || d3.Rule != d2.Rule {
				t.Fatalf("Decide(%q) = %v %s, but Decide(addr %s) = %v %s", tg.Host, d2.Verdict, d2.Rule, tg.Addr, d3.Verdict, d3.Rule)
			}
		}
	})
}

// s2host returns the host as spelt in s when it is a plain host (no URL,
// no port), else the normalised host.
func s2host(s string, tg Target) string {
	if strings.ContainsAny(s, ":/[") {
		return tg.Host
	}
	return s
}

// spell writes the IPv4 address a in one of many spellings, all of which
// must be judged as a itself (NAT64 and 6to4 carry a's verdict under the
// web default too).
func spell(a netip.Addr, style uint8) string {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	switch style % 16 {
	case 0:
		return a.String()
	case 1:
		return fmt.Sprint(v)
	case 2:
		return fmt.Sprintf("0x%x", v)
	case 3:
		return fmt.Sprintf("0%o.0%o.0%o.0%o", b[0], b[1], b[2], b[3])
	case 4:
		return fmt.Sprintf("%d.%d", b[0], v&0xffffff)
	case 5:
		return fmt.Sprintf("%d.%d.%d", b[0], b[1], v&0xffff)
	case 6:
		return fmt.Sprintf("0X%X.0x%x.%d.0%o", b[0], b[1], b[2], b[3])
	case 7:
		return a.String() + "."
	case 8:
		return "[::ffff:" + a.String() + "]"
	case 9:
		return "[64:ff9b::" + a.String() + "]"
	case 10:
		return fmt.Sprintf("[2002:%02x%02x:%02x%02x::1]", b[0], b[1], b[2], b[3])
	case 11:
		return toFullwidth(a.String())
	case 12:
		return strings.ReplaceAll(a.String(), ".", "。")
	case 13:
		return fmt.Sprintf("%03d.%03d.%03d.%03d", b[0], b[1], b[2], b[3]) // leading zeros: octal!
	case 14:
		return fmt.Sprintf("[::ffff:%x:%x]", v>>16, v&0xffff)
	default:
		return fmt.Sprintf("0x%08x", v)
	}
}

func toFullwidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			r += '０' - '0'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func FuzzDecide(f *testing.F) {
	f.Add(uint32(0x7f000001), uint8(0), uint16(80), "example.org")
	f.Add(uint32(0xa9fea9fe), uint8(9), uint16(443), "x")
	f.Add(uint32(0x08080808), uint8(3), uint16(443), "")
	f.Add(uint32(0x0a000001), uint8(10), uint16(8080), "a.localhost")
	f.Add(uint32(0xc0a80101), uint8(13), uint16(443), "metadata")
	policies := []*Policy{
		MustNew(WebDefault()),
		MustNew(Config{Default: "public", Deny: []string{"8.8.0.0/16"}, Allow: []string{"10.0.0.0/8", "127.0.0.1:8080"}}),
	}
	f.Fuzz(func(t *testing.T, v uint32, style uint8, port uint16, host string) {
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		sp := spell(a, style)
		for i, p := range policies {
			// Arbitrary input never panics.
			_ = p.Decide(host, a, port)
			_ = p.Decide(host, netip.Addr{}, port)
			if i == 1 && style%16 >= 9 && style%16 <= 10 {
				continue // entries match NAT64/6to4 forms asymmetrically by design
			}
			canon := p.Decide("", a, port)
			got := p.Decide(sp, netip.Addr{}, port)
			want := canon.Verdict
			if style%16 == 13 {
				// Zero-padded parts are octal, as inet_aton reads them.
				tg, err := ParseTarget(sp)
				if err != nil {
					if got.Verdict != Deny {
						t.Fatalf("Decide(%q) = %v for an invalid spelling", sp, got.Verdict)
					}
					continue
				}
				want = p.Decide("", tg.Addr, port).Verdict
			}
			if got.Verdict != want {
				t.Fatalf("policy %d: Decide(%q, port %d) = %v (%s); canonical %s = %v (%s)", i, sp, port, got.Verdict, got.Reason, a, want, canon.Reason)
			}
		}
	})
}

// FuzzDecideIPv6 judges arbitrary IPv6 addresses in their spellings
// (compressed, expanded, bracketed, as a URL): all get the verdict and
// rule of the address itself.
func FuzzDecideIPv6(f *testing.F) {
	f.Add(uint64(0x0064ff9b00000000), uint64(0x00000000a9fea9fe), uint16(80))
	f.Add(uint64(0x2002a9fea9fe0000), uint64(1), uint16(443))
	f.Add(uint64(0x2606470000000000), uint64(0x1111), uint16(443))
	f.Add(uint64(0xfe80000000000000), uint64(1), uint16(22))
	f.Add(uint64(0x200100004136e378), uint64(0x800063bf56015601), uint16(80))
	p := MustNew(Config{Default: "public", Ports: []int{80, 443}, Allow: []string{"fd00::/8"}, Deny: []string{"2001:db8::/32"}})
	f.Fuzz(func(t *testing.T, hi, lo uint64, port uint16) {
		var b [16]byte
		for i := 0; i < 8; i++ {
			b[i] = byte(hi >> (56 - 8*i))
			b[8+i] = byte(lo >> (56 - 8*i))
		}
		a := netip.AddrFrom16(b)
		want := p.Decide("", a, port)
		for _, sp := range []string{a.String(), "[" + a.String() + "]", a.StringExpanded(), strings.ToUpper(a.StringExpanded())} {
			got := p.Decide(sp, netip.Addr{}, port)
			if got.Verdict != want.Verdict || got.Rule != want.Rule {
				t.Fatalf("Decide(%q) = %v %s; Decide(addr %s) = %v %s", sp, got.Verdict, got.Rule, a, want.Verdict, want.Rule)
			}
		}
		if port == 0 {
			return
		}
		raw := "http://[" + a.StringExpanded() + "]:" + fmt.Sprint(port) + "/"
		_, tg, err := ParseURL(raw)
		if err != nil {
			t.Fatalf("ParseURL(%q) = %v", raw, err)
		}
		if got := p.Decide(tg.Host, tg.Addr, tg.Port); got.Verdict != want.Verdict || got.Rule != want.Rule {
			t.Fatalf("Decide(ParseURL(%q)) = %v %s; want %v %s", raw, got.Verdict, got.Rule, want.Verdict, want.Rule)
		}
	})
}

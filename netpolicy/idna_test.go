package netpolicy

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// xnetMapping is what idna.Lookup (net/http's IDNA step) turns r into,
// when that is ASCII.
func xnetMapping(r rune) (string, bool) {
	out, err := idna.Lookup.ToASCII("x" + string(r) + "x")
	if err != nil || strings.Contains(out, "xn--") || len(out) < 2 || out[0] != 'x' || out[len(out)-1] != 'x' {
		return "", false
	}
	for i := 0; i < len(out); i++ {
		if out[i] >= utf8.RuneSelf {
			return "", false
		}
	}
	return out[1 : len(out)-1], true
}

// TestIDNATableMatchesXNet checks the generated table against the
// golang.org/x/net/idna in go.mod, over every rune: a rune net/http maps
// to ASCII must be in the table with the same mapping, and no other rune
// may be. It fails when x/net changes; regenerate with go generate.
func TestIDNATableMatchesXNet(t *testing.T) {
	if testing.Short() {
		t.Skip("walks all of Unicode")
	}
	n := 0
	for r := rune(0x80); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		want, ok := xnetMapping(r)
		got, inTable := idnaASCII(r)
		if ok != inTable || got != want {
			t.Errorf("rune %U: table %q (%v), x/net/idna %q (%v)", r, got, inTable, want, ok)
			if n++; n > 20 {
				t.Fatal("too many differences; regenerate idna_table.go")
			}
		}
	}
}

// TestIDNAHostsAgreeWithNetHTTP checks hosts built from mapped runes are
// judged as the address net/http would dial.
func TestIDNAHostsAgreeWithNetHTTP(t *testing.T) {
	for _, h := range []string{"１２７。０。０。１", "127。0。0。1", "①②⑦.0.0.1", "𝟏𝟎.0.0.1", "⑯⑨.254.169.254",
		"127.0.0.\u00ad1", "ＬＯＣＡＬＨＯＳＴ", "0ｘ7f.1", "²⁵⁵.255.255.255", "example。com"} {
		want, err := idna.Lookup.ToASCII(h)
		if err != nil {
			t.Fatalf("idna.Lookup.ToASCII(%q): %v", h, err)
		}
		info, err := parseHost(h)
		if err != nil {
			t.Errorf("parseHost(%q) = %v; net/http dials %q", h, err, want)
			continue
		}
		if wa, err := netip.ParseAddr(want); err == nil {
			if info.addr != wa {
				t.Errorf("parseHost(%q) = %v; net/http dials %s", h, info, wa)
			}
			continue
		}
		if a, ok := parseInetAton(want); ok {
			if info.addr != a {
				t.Errorf("parseHost(%q) = %v; net/http dials %q = %s for a C resolver", h, info, want, a)
			}
			continue
		}
		if info.name != strings.ToLower(want) {
			t.Errorf("parseHost(%q) = %v; net/http dials %q", h, info, want)
		}
	}
}

// differential is the core property of ParseURL: whatever net/http would
// dial for a URL (url.Parse, then IDNA lookup mapping), dsh either
// rejects the URL or judges exactly that host.
func differential(t *testing.T, raw string) {
	u, t2, err := ParseURL(raw)
	if err != nil {
		return
	}
	ref, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("ParseURL(%q) accepted what url.Parse rejects: %v", raw, err)
	}
	// net/http's canonicalAddr: IDNA lookup mapping for non-ASCII hosts
	// only, the original host when mapping fails.
	host := ref.Hostname()
	if !isASCII(host) {
		if a, err := idna.Lookup.ToASCII(host); err == nil {
			host = a
		}
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		if a != t2.Addr {
			t.Errorf("ParseURL(%q) judged %v; net/http dials %s", raw, t2.Addr, a)
		}
	} else if a, ok := parseInetAton(host); ok {
		if a != t2.Addr {
			t.Errorf("ParseURL(%q) judged %v; net/http dials %q, which a C resolver reads as %s", raw, t2.Addr, host, a)
		}
	} else if host != t2.Host {
		t.Errorf("ParseURL(%q) judged host %q; net/http dials %q", raw, t2.Host, host)
	}
	if u.Hostname() != t2.Host {
		t.Errorf("ParseURL(%q) returned URL host %q, judged %q", raw, u.Hostname(), t2.Host)
	}
}

func TestURLDifferential(t *testing.T) {
	for _, b := range bypasses {
		if strings.Contains(b.in, "://") {
			differential(t, b.in)
		}
	}
	for _, c := range allowControls {
		if strings.Contains(c.in, "://") {
			differential(t, c.in)
		}
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

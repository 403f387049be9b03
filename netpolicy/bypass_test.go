package netpolicy

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

// bypasses are spellings meant to reach a forbidden destination. want is
// "invalid" (must be rejected as an invalid target), "deny" (must be
// denied), or an address: must be denied and judged as that address.
var bypasses = []struct{ in, want string }{
	// Loopback in inet_aton spellings.
	{"http://127.0.0.1/", "127.0.0.1"},
	{"http://127.1/", "127.0.0.1"},
	{"http://127.0.1/", "127.0.0.1"},
	{"http://2130706433/", "127.0.0.1"},
	{"http://0x7f000001/", "127.0.0.1"},
	{"http://0X7F.0.0.1/", "127.0.0.1"},
	{"http://0177.0.0.1/", "127.0.0.1"},
	{"http://0177.1/", "127.0.0.1"},
	{"http://017700000001/", "127.0.0.1"},
	{"http://0x7f.1/", "127.0.0.1"},
	{"http://127.000.000.001/", "127.0.0.1"},
	{"http://127.0.0.1./", "127.0.0.1"},
	{"http://127.0x0.0.1/", "127.0.0.1"},
	{"http://0x7f.0x0.0x0.0x1/", "127.0.0.1"},
	{"http://127.255.255.254/", "127.255.255.254"},
	{"http://0/", "0.0.0.0"},
	{"http://0.0.0.0/", "0.0.0.0"},
	{"http://0x0/", "0.0.0.0"},
	{"http://00000/", "0.0.0.0"},
	{"http://0x/", "0.0.0.0"},
	{"HTTP://127.0.0.1/", "127.0.0.1"},
	{"http://127.0.0.1#@example.com/", "127.0.0.1"},
	{"http://127.0.0.1?@example.com/", "127.0.0.1"},
	{"127.1:8080", "127.0.0.1"},
	{"2130706433", "127.0.0.1"},
	// Loopback in IPv6 forms.
	{"http://[::1]/", "::1"},
	{"http://[0:0:0:0:0:0:0:1]/", "::1"},
	{"http://[::1]:80/", "::1"},
	{"http://[::]/", "::"},
	{"http://[::ffff:127.0.0.1]/", "127.0.0.1"},
	{"http://[::ffff:7f00:1]/", "127.0.0.1"},
	{"http://[0:0:0:0:0:ffff:127.0.0.1]/", "127.0.0.1"},
	{"http://[::127.0.0.1]/", "::7f00:1"},
	{"http://[::ffff:0:127.0.0.1]/", "::ffff:0:7f00:1"},
	{"http://[64:ff9b::127.0.0.1]/", "64:ff9b::7f00:1"},
	{"http://[64:ff9b::7f00:1]/", "64:ff9b::7f00:1"},
	{"http://[2002:7f00:1::]/", "2002:7f00:1::"},
	{"::1", "::1"},
	{"[::1]:22", "::1"},
	// Localhost names (RFC 6761): loopback without DNS.
	{"http://localhost/", "127.0.0.1"},
	{"http://LOCALHOST./", "127.0.0.1"},
	{"http://foo.localhost/", "127.0.0.1"},
	{"http://a.b.localhost:8080/", "127.0.0.1"},
	// IDNA mapping as net/http applies it.
	{"http://１２７。０。０。１/", "127.0.0.1"},
	{"http://127。0。0。1/", "127.0.0.1"},
	{"http://127．0．0．1/", "127.0.0.1"},
	{"http://127｡0｡0｡1/", "127.0.0.1"},
	{"http://①②⑦.0.0.1/", "127.0.0.1"},
	{"http://127.0.0.\u00ad1/", "127.0.0.1"},
	{"http://127.0.0.1\u200b/", "127.0.0.1"},
	{"http://𝟏𝟐𝟕.0.0.1/", "127.0.0.1"},
	{"http://ｌｏｃａｌｈｏｓｔ/", "127.0.0.1"},
	{"http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", "127.0.0.1"},
	{"http://ＬＯＣＡＬＨＯＳＴ/", "127.0.0.1"},
	{"http://１０。０。０。１/", "10.0.0.1"},
	{"http://⑯⑨.254.169.254/", "169.254.169.254"},
	{"http://169。254。169。254/", "169.254.169.254"},
	{"http://metadata。google。internal/", "deny"},
	{"http://ｍｅｔａｄａｔａ.google.internal/", "deny"},
	{"http://meta\u00addata.google.internal/", "deny"},
	{"http://0ｘ7f.1/", "127.0.0.1"},
	// Cloud metadata.
	{"http://169.254.169.254/", "169.254.169.254"},
	{"http://169.254.169.254:80/latest/meta-data/", "169.254.169.254"},
	{"http://2852039166/", "169.254.169.254"},
	{"http://0xa9fea9fe/", "169.254.169.254"},
	{"http://0251.0376.0251.0376/", "169.254.169.254"},
	{"http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"},
	{"http://169.254.43518/", "169.254.169.254"},
	{"http://169.16689662/", "169.254.169.254"},
	{"http://[::ffff:169.254.169.254]/", "169.254.169.254"},
	{"http://[::ffff:a9fe:a9fe]/", "169.254.169.254"},
	{"http://[64:ff9b::169.254.169.254]/", "64:ff9b::a9fe:a9fe"},
	{"http://[2002:a9fe:a9fe::1]/", "2002:a9fe:a9fe::1"},
	{"http://[::169.254.169.254]/", "::a9fe:a9fe"},
	{"http://[2001:0:4136:e378:8000:63bf:5601:5601]/", "deny"},
	{"http://[fd00:ec2::254]/", "fd00:ec2::254"},
	{"http://[fd20:ce::254]/", "fd20:ce::254"},
	{"http://metadata.google.internal/", "deny"},
	{"http://METADATA.GOOGLE.INTERNAL./", "deny"},
	{"http://metadata/computeMetadata/v1/", "deny"},
	{"http://instance-data/", "deny"},
	{"http://metadata.tencentyun.com/", "deny"},
	{"http://100.100.100.200/", "100.100.100.200"},
	{"http://168.63.129.16/", "168.63.129.16"},
	{"http://192.0.0.192/", "192.0.0.192"},
	{"http://169.254.170.2/v2/credentials", "169.254.170.2"},
	// Private and other special ranges in various spellings.
	{"http://10.0.0.1/", "10.0.0.1"},
	{"http://012.0.0.1/", "10.0.0.1"},
	{"http://0xa.0.0.1/", "10.0.0.1"},
	{"http://167772161/", "10.0.0.1"},
	{"http://192.168.1.1/", "192.168.1.1"},
	{"http://192.168.257/", "192.168.1.1"},
	{"http://3232235777/", "192.168.1.1"},
	{"http://172.16.0.1/", "172.16.0.1"},
	{"http://100.64.0.1/", "100.64.0.1"},
	{"http://[fd00::1]/", "fd00::1"},
	{"http://[fe80::1]/", "fe80::1"},
	{"http://[fec0::1]/", "fec0::1"},
	{"http://224.0.0.1/", "224.0.0.1"},
	{"http://[ff02::1]/", "ff02::1"},
	{"http://255.255.255.255/", "255.255.255.255"},
	{"http://4294967295/", "255.255.255.255"},
	{"http://240.0.0.1/", "240.0.0.1"},
	{"http://198.18.0.1/", "198.18.0.1"},
	{"http://192.0.2.1/", "192.0.2.1"},
	{"http://203.0.113.7/", "203.0.113.7"},
	{"http://[2001:db8::1]/", "2001:db8::1"},
	{"http://[3fff::1]/", "3fff::1"},
	{"http://[64:ff9b:1::a00:1]/", "64:ff9b:1::a00:1"},
	{"http://[100::1]/", "100::1"},
	{"http://[2001::1]/", "2001::1"},
	{"http://[5f00::1]/", "5f00::1"},
	{"http://[::ffff:0:0:1]/", "::ffff:0:0:1"},
	// Ports outside default: public's [80 443].
	{"https://8.8.8.8:22/", "8.8.8.8"},
	{"8.8.8.8:25", "8.8.8.8"},
	// Encodings, zones, userinfo, parser differentials: invalid.
	{"http://%31%32%37.0.0.1/", "invalid"},
	{"http://127.0.0.1%2f/", "invalid"},
	{"http://127%2E0%2E0%2E1/", "invalid"},
	{"http://127%E3%80%820%E3%80%820%E3%80%821/", "invalid"},
	{"http://[::1%25eth0]/", "invalid"},
	{"http://[fe80::1%25lo]/", "invalid"},
	{"fe80::1%lo", "invalid"},
	{"http://user@127.0.0.1/", "invalid"},
	{"http://example.com@127.0.0.1/", "invalid"},
	{"http://127.0.0.1:80@example.com/", "invalid"},
	{"http://user:pass@example.com/", "invalid"},
	{"http://127.0.0.1\\@example.com/", "invalid"},
	{"http://example.com\\@127.0.0.1/", "invalid"},
	{"http:\\\\127.0.0.1\\", "invalid"},
	{"http://127.0.0.1 /", "invalid"},
	{"http://127.0.0.1\t/", "invalid"},
	{" http://127.0.0.1/", "invalid"},
	{"http://127.0.0.1\n.example.com/", "invalid"},
	{"http://127.0.0.1\x00.example.com/", "invalid"},
	{"http://127.0.0.1\u3000/", "invalid"},
	{"http://ex\u200dample.com/", "invalid"},
	{"http://exámple.com/", "invalid"},
	{"http://127.0.0.1:0/", "invalid"},
	{"http://127.0.0.1:65536/", "invalid"},
	{"http://127.0.0.1:-1/", "invalid"},
	{"http://127.0.0.1:+80/", "invalid"},
	{"http://127.0.0.1:/", "invalid"},
	{"127.0.0.1:0", "invalid"},
	{"127.0.0.1:99999", "invalid"},
	{"127.0.0.1:+80", "invalid"},
	{"127.0.0.1: 80", "invalid"},
	{"http://256.0.0.1/", "invalid"},
	{"http://1.2.3.4.5/", "invalid"},
	{"http://0x100000000/", "invalid"},
	{"http://4294967296/", "invalid"},
	{"http://08.0.0.1/", "invalid"},
	{"http://127.0.0.1.5/", "invalid"},
	{"http://127..0.1/", "invalid"},
	{"http://[127.0.0.1]/", "invalid"},
	{"http://127.0.0.1:80:80/", "invalid"},
	{"http://127.0.0.1;.example.com/", "invalid"},
	{"http://127.0.0.1,example.com/", "invalid"},
	{"file:///etc/passwd", "invalid"},
	{"gopher://127.0.0.1/", "invalid"},
	{"ftp://127.0.0.1/", "invalid"},
	{"http:127.0.0.1", "invalid"},
	{"http:/127.0.0.1", "invalid"},
	{"http:///127.0.0.1", "invalid"},
	{"//127.0.0.1/", "invalid"},
	{"", "invalid"},
}

// TestBypassSpellings checks every spelling above is denied or rejected,
// judged as the address it really names, and never handed to a
// resolver.
func TestBypassSpellings(t *testing.T) {
	if len(bypasses) < 100 {
		t.Fatalf("only %d bypass spellings; the acceptance criteria ask for 100", len(bypasses))
	}
	p := MustNew(WebDefault())
	for _, tt := range bypasses {
		tg, err := ParseTarget(tt.in)
		if tt.want == "invalid" {
			if !errors.Is(err, ErrInvalidTarget) {
				t.Errorf("ParseTarget(%q) = %+v, %v; want ErrInvalidTarget", tt.in, tg, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseTarget(%q) = %v; want a target to deny", tt.in, err)
			continue
		}
		port := tg.Port
		if port == 0 {
			port = 443
		}
		d := p.Decide(tg.Host, netip.Addr{}, port)
		if d.Verdict != Deny {
			t.Errorf("Decide(%q) = %v (%s); want deny", tt.in, d.Verdict, d.Reason)
		}
		if tt.want != "deny" {
			want := netip.MustParseAddr(tt.want).Unmap()
			if d.Addr != want {
				t.Errorf("Decide(%q) judged address %v; want %v", tt.in, d.Addr, want)
			}
		}
		// The dialer must reach the same verdict without DNS.
		dl := &Dialer{Policy: p, Resolver: failResolver{t}}
		if dec, _, err := dl.Check(context.Background(), tg.Host, port); err != nil || dec.Verdict != Deny {
			t.Errorf("Dialer.Check(%q) = %v, %v; want deny", tt.in, dec.Verdict, err)
		}
	}
}

// allowControls must pass under the web default: public addresses, in
// any spelling, and edges just outside special ranges.
var allowControls = []struct{ in, addr string }{
	{"https://8.8.8.8/", "8.8.8.8"},
	{"https://1.1.1.1:443/", "1.1.1.1"},
	{"http://134744072/", "8.8.8.8"},
	{"http://0x08080808/", "8.8.8.8"},
	{"http://８.８.８.８/", "8.8.8.8"},
	{"http://[2606:4700:4700::1111]/", "2606:4700:4700::1111"},
	{"https://[2001:4860:4860::8888]/", "2001:4860:4860::8888"},
	{"http://[::ffff:8.8.8.8]/", "8.8.8.8"},
	{"http://[64:ff9b::8.8.8.8]/", "64:ff9b::808:808"},
	{"http://[2002:808:808::1]/", "2002:808:808::1"},
	{"http://11.0.0.0/", "11.0.0.0"},
	{"http://9.255.255.255/", "9.255.255.255"},
	{"http://172.32.0.1/", "172.32.0.1"},
	{"http://172.15.255.255/", "172.15.255.255"},
	{"http://100.128.0.0/", "100.128.0.0"},
	{"http://100.63.255.255/", "100.63.255.255"},
	{"http://192.169.0.1/", "192.169.0.1"},
	{"http://126.255.255.255/", "126.255.255.255"},
	{"http://128.0.0.1/", "128.0.0.1"},
	{"http://169.255.0.1/", "169.255.0.1"},
	{"http://198.20.0.1/", "198.20.0.1"},
	{"http://223.255.255.255/", "223.255.255.255"},
	{"http://192.0.0.9/", "192.0.0.9"},
	{"http://[2001:200::1]/", "2001:200::1"},
	{"http://[2001:db9::1]/", "2001:db9::1"},
	{"http://example.com/", ""},
	{"http://EXAMPLE.COM./", ""},
	{"https://xn--mnchen-3ya.de/", ""},
	{"http://ｅｘａｍｐｌｅ.com/", ""},
	{"http://example.com#@127.0.0.1/", ""},
	{"https://under_score.example.com/", ""},
	{"example.com:443", ""},
}

func TestAllowControls(t *testing.T) {
	p := MustNew(WebDefault())
	for _, tt := range allowControls {
		tg, err := ParseTarget(tt.in)
		if err != nil {
			t.Errorf("ParseTarget(%q) = %v; want a valid target", tt.in, err)
			continue
		}
		d := p.Decide(tg.Host, netip.Addr{}, tg.Port)
		if d.Verdict != Allow {
			t.Errorf("Decide(%q) = %v (%s); want allow", tt.in, d.Verdict, d.Reason)
		}
		if tt.addr != "" && d.Addr != netip.MustParseAddr(tt.addr).Unmap() {
			t.Errorf("Decide(%q) judged %v; want %s", tt.in, d.Addr, tt.addr)
		}
	}
}

// failResolver fails the test if anything is looked up.
type failResolver struct{ t *testing.T }

func (f failResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.t.Errorf("resolver asked for %q; addresses and localhost names must never be resolved", host)
	return nil, errors.New("failResolver")
}

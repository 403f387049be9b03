package netpolicy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestDecisionOrder(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		host string
		addr string
		port uint16
		want Verdict
		rule string
	}{
		{"always-deny beats an allow CIDR", Config{Allow: []string{"169.254.0.0/16"}}, "", "169.254.169.254", 80, Deny, "always-deny:169.254.169.254"},
		{"always-deny beats allow *", Config{Default: "public", Allow: []string{"*"}}, "metadata.google.internal", "", 80, Deny, "always-deny:metadata.google.internal"},
		{"always-deny sees NAT64", Config{Allow: []string{"64:ff9b::/96"}}, "", "64:ff9b::a9fe:a9fe", 80, Deny, "always-deny:169.254.169.254"},
		{"always-deny sees 6to4", Config{Default: "public"}, "", "2002:a9fe:a9fe::", 80, Deny, "always-deny:169.254.169.254"},
		{"always-deny sees Teredo client", Config{Default: "public"}, "", "2001:0:4136:e378:8000:63bf:5601:5601", 80, Deny, "always-deny:169.254.169.254"},
		{"deny beats allow", Config{Allow: []string{"*.example.org"}, Deny: []string{"bad.example.org"}}, "bad.example.org", "93.184.215.14", 443, Deny, "deny:bad.example.org"},
		{"specific deny beats broader allow", Config{Allow: []string{"8.0.0.0/8"}, Deny: []string{"8.8.8.0/24"}}, "", "8.8.8.8", 443, Deny, "deny:8.8.8.0/24"},
		{"deny CIDR sees NAT64 form", Config{Default: "public", Deny: []string{"8.8.8.0/24"}}, "", "64:ff9b::808:808", 443, Deny, "deny:8.8.8.0/24"},
		{"deny CIDR sees mapped form", Config{Default: "public", Deny: []string{"8.8.8.0/24"}}, "", "::ffff:8.8.8.8", 443, Deny, "deny:8.8.8.0/24"},
		{"deny with port only that port", Config{Default: "public", Deny: []string{"example.org:80"}}, "example.org", "93.184.215.14", 443, Allow, "default:public"},
		{"deny with port", Config{Default: "public", Deny: []string{"example.org:80"}}, "example.org", "93.184.215.14", 80, Deny, "deny:example.org:80"},
		{"special beats name allow", Config{Allow: []string{"intranet.corp"}}, "intranet.corp", "10.0.0.1", 443, Deny, "special:10.0.0.0/8"},
		{"special beats allow *", Config{Allow: []string{"*"}}, "x.example", "192.168.0.1", 443, Deny, "special:192.168.0.0/16"},
		{"CIDR allow unlocks special", Config{Allow: []string{"10.0.0.0/8"}}, "", "10.1.2.3", 22, Allow, "allow:10.0.0.0/8"},
		{"CIDR allow unlocks a name allowed by name", Config{Allow: []string{"intranet.corp", "10.0.0.0/8"}}, "intranet.corp", "10.1.2.3", 22, Allow, "allow:10.0.0.0/8"},
		{"CIDR allow does not allow a name", Config{Allow: []string{"10.0.0.0/8"}}, "intranet.corp", "10.1.2.3", 22, Deny, "name-not-resolved"},
		{"IP:port allow does not allow a name", Config{Allow: []string{"127.0.0.1:8080"}}, "x.example", "", 8080, Deny, "name-not-resolved"},
		{"CIDR allow, name on a public port", Config{Default: "public", Ports: []int{443}, Allow: []string{"10.0.0.0/8"}}, "x.example", "", 8443, Deny, "name-not-resolved"},
		{"CIDR allow, name allowed by default public", Config{Default: "public", Ports: []int{443}, Allow: []string{"10.0.0.0/8"}}, "x.example", "10.1.2.3", 443, Allow, "allow:10.0.0.0/8"},
		{"localhost name matches an IP:port allow", Config{Allow: []string{"127.0.0.1:8080"}}, "localhost", "", 8080, Allow, "allow:127.0.0.1:8080"},
		{"IP:port allow unlocks its port", Config{Allow: []string{"127.0.0.1:8080"}}, "", "127.0.0.1", 8080, Allow, "allow:127.0.0.1:8080"},
		{"IP:port allow not other ports", Config{Allow: []string{"127.0.0.1:8080"}}, "", "127.0.0.1", 8081, Deny, "special:127.0.0.0/8"},
		{"[v6]:port allow", Config{Allow: []string{"[::1]:8080"}}, "", "::1", 8080, Allow, "allow:[::1]:8080"},
		{"IP allow covers mapped form", Config{Allow: []string{"127.0.0.1"}}, "", "::ffff:127.0.0.1", 80, Allow, "allow:127.0.0.1"},
		{"IP allow does not cover NAT64 form", Config{Allow: []string{"10.0.0.1"}}, "", "64:ff9b::a00:1", 80, Deny, "special:64:ff9b::/96>10.0.0.0/8"},
		{"localhost name is loopback", Config{Default: "public"}, "app.localhost", "", 80, Deny, "special:127.0.0.0/8"},
		{"localhost name with IP allow", Config{Allow: []string{"127.0.0.1:3000"}}, "localhost", "", 3000, Allow, "allow:127.0.0.1:3000"},
		{"localhost name with a non-loopback address", Config{Default: "public"}, "localhost", "8.8.8.8", 80, Deny, "invalid"},
		{"glob allow with port", Config{Allow: []string{"*.example.org:443"}}, "a.b.example.org", "93.184.215.14", 443, Allow, "allow:*.example.org:443"},
		{"glob allow wrong port", Config{Allow: []string{"*.example.org:443"}}, "a.example.org", "93.184.215.14", 80, Deny, "default:deny"},
		{"glob does not match apex", Config{Allow: []string{"*.example.org"}}, "example.org", "93.184.215.14", 443, Deny, "default:deny"},
		{"glob does not match lookalike", Config{Allow: []string{"*.example.org"}}, "badexample.org", "93.184.215.14", 443, Deny, "default:deny"},
		{"host allow is exact", Config{Allow: []string{"example.org"}}, "www.example.org", "93.184.215.14", 443, Deny, "default:deny"},
		{"host allow normalised", Config{Allow: []string{"Example.ORG."}}, "EXAMPLE.org", "93.184.215.14", 443, Allow, "allow:Example.ORG."},
		{"default deny", Config{}, "example.org", "93.184.215.14", 443, Deny, "default:deny"},
		{"default public", Config{Default: "public"}, "example.org", "93.184.215.14", 22, Allow, "default:public"},
		{"public ports", WebDefault(), "example.org", "93.184.215.14", 22, Deny, "default:public"},
		{"public ports allow 443", WebDefault(), "example.org", "93.184.215.14", 443, Allow, "default:public"},
		{"allow entry beyond ports", Config{Default: "public", Ports: []int{443}, Allow: []string{"example.org:8443"}}, "example.org", "93.184.215.14", 8443, Allow, "allow:example.org:8443"},
		{"host is an address spelling", WebDefault(), "0x7f.1", "", 80, Deny, "special:127.0.0.0/8"},
		{"host and addr disagree", WebDefault(), "8.8.8.8", "127.0.0.1", 80, Deny, "invalid"},
		{"invalid host", WebDefault(), "a b", "", 80, Deny, "invalid"},
		{"nothing given", WebDefault(), "", "", 80, Deny, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.cfg)
			if err != nil {
				t.Fatalf("New(%+v) = %v", tt.cfg, err)
			}
			var a netip.Addr
			if tt.addr != "" {
				a = netip.MustParseAddr(tt.addr)
			}
			d := p.Decide(tt.host, a, tt.port)
			if d.Verdict != tt.want || d.Rule != tt.rule {
				t.Errorf("Decide(%q, %v, %d) = %v %s (%s); want %v %s", tt.host, a, tt.port, d.Verdict, d.Rule, d.Reason, tt.want, tt.rule)
			}
			if d.Reason == "" {
				t.Errorf("Decide(%q, %v, %d) has no reason", tt.host, a, tt.port)
			}
		})
	}
}

func TestNewReportsEveryProblem(t *testing.T) {
	c := Config{
		Default: "open",
		Ports:   []int{0, 70000, 443},
		Allow: []string{
			"10.0.0.1/8", "127.1", "0x7f000001", "*.*.example.org", "a*b.example.org", "[fe80::1%eth0]:80",
			"example.org:0", "example.org:99999", "", " example.org", "169.254.169.254", "metadata.google.internal",
			"*.10.0.0.1", "exa mple.org", "http://example.org", "10.0.0.0/33",
		},
		Deny: []string{"bad..example.org", "x:+1"},
	}
	_, err := New(c)
	if !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("New = %v, want ErrInvalidPolicy", err)
	}
	var pe *PolicyError
	if !errors.As(err, &pe) {
		t.Fatalf("New error %T is not *PolicyError", err)
	}
	want := []string{`default "open"`, "port 0", "port 70000", `"10.0.0.1/8"`, "did you mean 10.0.0.0/8", `"127.1"`, "write the address as 127.0.0.1",
		`"0x7f000001"`, `"*.*.example.org"`, `"a*b.example.org"`, `"[fe80::1%eth0]:80"`, `"example.org:0"`, `"example.org:99999"`, `entry ""`,
		`" example.org"`, `"169.254.169.254"`, "metadata", `"*.10.0.0.1"`, `"exa mple.org"`, `"http://example.org"`, `"10.0.0.0/33"`, `"bad..example.org"`, `"x:+1"`}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("New error does not mention %s:\n%s", w, msg)
		}
	}
	if got, wantN := len(pe.Problems), 21; got != wantN {
		t.Errorf("New reported %d problems, want %d:\n%s", got, wantN, msg)
	}
}

func TestNewAcceptsEveryForm(t *testing.T) {
	c := Config{Default: "deny", Allow: []string{"example.org", "*.example.org", "example.org:8080", "*.example.org:443",
		"192.0.2.1", "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]:443", "10.0.0.0/8", "fd00::/8", "::ffff:10.0.0.0/104", "*", "*:443"}}
	p, err := New(c)
	if err != nil {
		t.Fatalf("New(%v) = %v", c.Allow, err)
	}
	// The mapped CIDR is stored as its IPv4 form.
	if d := p.Decide("", netip.MustParseAddr("10.9.9.9"), 1); d.Verdict != Allow {
		t.Errorf("Decide(10.9.9.9) = %v %s; want allow", d.Verdict, d.Rule)
	}
}

func TestVerdictAndStageStrings(t *testing.T) {
	if Deny.String() != "deny" || Allow.String() != "allow" || Verdict(7).String() != "invalid-verdict" {
		t.Errorf("Verdict strings: %s %s %s", Deny, Allow, Verdict(7))
	}
	var zero Decision
	if zero.Allowed() {
		t.Error("zero Decision is allowed; it must fail closed")
	}
	for s, w := range map[Stage]string{StageInvalid: "invalid", StageAlwaysDeny: "always-deny", StageDeny: "deny",
		StageSpecial: "special", StageAllow: "allow", StageDefault: "default", Stage(99): "invalid-stage"} {
		if s.String() != w {
			t.Errorf("Stage(%d).String() = %q, want %q", int(s), s.String(), w)
		}
	}
}

func TestDeniedErrorIs(t *testing.T) {
	err := error(&DeniedError{Decision: Decision{Reason: "r", Rule: "x", Host: "h", Port: 1}})
	if !errors.Is(err, ErrDenied) || errors.Is(err, ErrInvalidTarget) {
		t.Errorf("DeniedError Is: denied=%v invalid=%v", errors.Is(err, ErrDenied), errors.Is(err, ErrInvalidTarget))
	}
	if !strings.Contains(err.Error(), "h port 1 denied: r [rule x]") {
		t.Errorf("DeniedError.Error() = %q", err)
	}
}

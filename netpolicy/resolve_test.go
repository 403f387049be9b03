package netpolicy

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestMayResolve: a name is resolvable only when a name rule (host, glob,
// "*", default public) could allow it on the port; IP and CIDR entries
// never make it so.
func TestMayResolve(t *testing.T) {
	addrOnly := Config{Allow: []string{"10.0.0.0/8", "127.0.0.1:8080", "[2001:db8::1]:443"}}
	tests := []struct {
		name string
		c    Config
		host string
		port uint16
		want bool
		rule string // of the Decision when want is false
	}{
		{"address entries only", addrOnly, "secret.attacker.example", 8080, false, ruleNameUnresolved},
		{"address entries only, CIDR any port", addrOnly, "intranet.corp", 22, false, ruleNameUnresolved},
		{"address entries only, no entry on the port", Config{Allow: []string{"127.0.0.1:8080"}}, "x.example", 9090, false, "default:deny"},
		{"no entries", Config{}, "x.example", 443, false, "default:deny"},
		{"host entry", Config{Allow: []string{"api.example.com:443", "10.0.0.0/8"}}, "api.example.com", 443, true, ""},
		{"host entry, other port", Config{Allow: []string{"api.example.com:443", "10.0.0.0/8"}}, "api.example.com", 80, false, ruleNameUnresolved},
		{"host entry, other name", Config{Allow: []string{"api.example.com", "10.0.0.0/8"}}, "leak.example.com", 443, false, ruleNameUnresolved},
		{"host entry, any port", Config{Allow: []string{"api.example.com"}}, "API.example.com.", 8443, true, ""},
		{"glob entry", Config{Allow: []string{"*.corp.example:443"}}, "db.corp.example", 443, true, ""},
		{"glob entry does not match its apex", Config{Allow: []string{"*.corp.example:443", "10.0.0.0/8"}}, "corp.example", 443, false, ruleNameUnresolved},
		{"star entry", Config{Allow: []string{"*:443"}}, "anything.example", 443, true, ""},
		{"default public", WebDefault(), "example.org", 443, true, ""},
		{"default public, port not listed", WebDefault(), "example.org", 8080, false, "default:public"},
		{"default public, port not listed, CIDR entry", Config{Default: "public", Ports: []int{443}, Allow: []string{"10.0.0.0/8"}}, "example.org", 8080, false, ruleNameUnresolved},
		{"deny wins over host entry", Config{Allow: []string{"*.example.com"}, Deny: []string{"leak.example.com"}}, "leak.example.com", 443, false, "deny:leak.example.com"},
		{"deny wins over default public", Config{Default: "public", Deny: []string{"*.tracker.example"}}, "a.tracker.example", 443, false, "deny:*.tracker.example"},
		{"always-deny first", Config{Allow: []string{"*"}}, "metadata.google.internal", 80, false, "always-deny:metadata.google.internal"},
		{"address literal needs no lookup", addrOnly, "10.1.2.3", 22, false, "allow:10.0.0.0/8"},
		{"localhost needs no lookup", addrOnly, "localhost", 8080, false, "allow:127.0.0.1:8080"},
		{"invalid host", addrOnly, "a b.example", 8080, false, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, got := MustNew(tt.c).MayResolve(tt.host, tt.port)
			if got != tt.want || (!tt.want && d.Rule != tt.rule) {
				t.Errorf("MayResolve(%q, %d) = %v, %s (%s); want %v, %s", tt.host, tt.port, got, d.Rule, d.Reason, tt.want, tt.rule)
			}
			if got && d.Verdict != Allow {
				t.Errorf("MayResolve = true with a %v decision", d.Verdict)
			}
		})
	}
}

// TestNameNotResolvedReasonSaysTheFix: the denial names the address entry
// that does not apply to names and the entry that would allow the name.
func TestNameNotResolvedReasonSaysTheFix(t *testing.T) {
	d, _ := MustNew(Config{Allow: []string{"127.0.0.1:8080"}}).MayResolve("svc.example", 8080)
	for _, want := range []string{`"127.0.0.1:8080"`, "never resolved", "--allow svc.example:8080"} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("reason %q does not say %q", d.Reason, want)
		}
	}
	if d.Stage != StageDefault || d.Verdict != Deny {
		t.Errorf("decision %v at stage %v; want deny at the default", d.Verdict, d.Stage)
	}
}

// TestDialerResolvesOnlyNamesANameRuleAllows: at the Dialer, with
// address entries present, a name no name rule allows is refused with no
// query; a name a host entry allows is looked up once and dialled.
func TestDialerResolvesOnlyNamesANameRuleAllows(t *testing.T) {
	port := loopbackHTTP(t)
	ps := strconv.Itoa(int(port))
	rec := &RecordingResolver{Next: StubResolver{"ok.test": mustAddrs("127.0.0.1")}}
	d := &Dialer{Policy: MustNew(Config{Allow: []string{"127.0.0.1:" + ps, "10.0.0.0/8", "ok.test:" + ps}}), Resolver: rec, redirect: loopbackOnly(t)}
	for _, target := range []string{"secret-1.attacker.test:" + ps, "secret-2.attacker.test:22", "ok.test:1", "sub.ok.test:" + ps} {
		_, err := d.DialContext(context.Background(), "tcp", target)
		var de *DeniedError
		if !errors.As(err, &de) {
			t.Errorf("DialContext(%s) = %v; want a denial", target, err)
		}
	}
	if q := rec.Queries(); len(q) != 0 {
		t.Fatalf("names looked up for denied targets: %q; want none", q)
	}
	c, err := d.DialContext(context.Background(), "tcp", "ok.test:"+ps)
	if err != nil {
		t.Fatalf("DialContext(ok.test) = %v", err)
	}
	c.Close()
	if q := rec.Queries(); !slices.Equal(q, []string{"ok.test"}) {
		t.Errorf("queries %q; want [ok.test]", q)
	}
}

// FuzzMayResolve: for any host and port, the Dialer looks a name up
// exactly when MayResolve says so, and a name MayResolve refuses is denied
// whatever address it might have had.
func FuzzMayResolve(f *testing.F) {
	for _, h := range []string{"secret.attacker.example", "ok.test", "a.corp.example", "corp.example", "10.1.2.3", "localhost",
		"metadata.google.internal", "x.tracker.example", "OK.TEST.", "", "a b", "[::1]", "xn--bcher-kva.example"} {
		f.Add(h, uint16(8080))
		f.Add(h, uint16(443))
	}
	policies := []*Policy{
		MustNew(Config{Allow: []string{"10.0.0.0/8", "127.0.0.1:8080", "[2001:db8::1]:443"}}),
		MustNew(Config{Allow: []string{"ok.test:8080", "*.corp.example", "10.0.0.0/8"}, Deny: []string{"x.tracker.example"}}),
		MustNew(Config{Default: "public", Ports: []int{443}, Allow: []string{"10.0.0.0/8"}, Deny: []string{"*.tracker.example"}}),
		MustNew(WebDefault()),
	}
	probes := mustAddrs("10.1.2.3", "127.0.0.1", "2001:db8::1", "8.8.8.8", "2606:4700::1111")
	f.Fuzz(func(t *testing.T, host string, port uint16) {
		for i, p := range policies {
			dec, ok := p.MayResolve(host, port)
			rec := &RecordingResolver{}
			d := &Dialer{Policy: p, Resolver: rec}
			d.Check(context.Background(), host, port)
			q := rec.Queries()
			if ok != (len(q) > 0) {
				t.Fatalf("policy %d: MayResolve(%q, %d) = %v but the Dialer looked up %q", i, host, port, ok, q)
			}
			info, err := parseHostBracket(host, host)
			if ok || err != nil || info.addr.IsValid() || info.localhost {
				continue
			}
			if dec.Verdict != Deny {
				t.Fatalf("policy %d: MayResolve(%q, %d) = false with verdict %v", i, host, port, dec.Verdict)
			}
			for _, a := range probes {
				if got := p.Decide(host, a, port); got.Verdict != Deny {
					t.Fatalf("policy %d: name %q is not resolvable on %d, yet Decide with address %s = %v (%s)", i, host, port, a, got.Verdict, got.Rule)
				}
			}
		}
	})
}

package netpolicy

import (
	"context"
	"errors"
	"strconv"
	"testing"
)

// host.dsh.internal is the host's loopback, allowed only by an entry
// naming it; "*", globs, address entries and default public never do.
func TestHostNameDecisions(t *testing.T) {
	for _, c := range []struct {
		allow  []string
		public bool
		port   uint16
		want   Verdict
	}{
		{[]string{"host.dsh.internal:8080"}, false, 8080, Allow},
		{[]string{"host.dsh.internal"}, false, 9, Allow},
		{[]string{"host.dsh.internal:8080"}, false, 8081, Deny},
		{[]string{"*"}, false, 8080, Deny},
		{[]string{"*.internal", "*.dsh.internal:8080"}, false, 8080, Deny},
		{[]string{"127.0.0.1:8080", "127.0.0.0/8"}, false, 8080, Deny},
		{nil, true, 8080, Deny},
	} {
		cfg := Config{Allow: c.allow}
		if c.public {
			cfg.Default = "public"
		}
		p := MustNew(cfg)
		for _, host := range []string{"host.dsh.internal", "HOST.dsh.internal."} {
			d := p.Decide(host, loopbackV4, c.port)
			if d.Verdict != c.want || d.Addr != loopbackV4 {
				t.Errorf("allow %q public %v: Decide(%s, 127.0.0.1, %d) = %v (%s: %s); want %v", c.allow, c.public, host, c.port, d.Verdict, d.Rule, d.Reason, c.want)
			}
		}
	}
	p := MustNew(Config{Allow: []string{"host.dsh.internal"}})
	if d := p.Decide(HostName, loopbackV4.Next(), 80); d.Verdict != Deny || d.Stage != StageInvalid {
		t.Errorf("host.dsh.internal to 127.0.0.2 = %v %v; want an invalid denial", d.Verdict, d.Stage)
	}
	if d := MustNew(Config{Allow: []string{"host.dsh.internal"}, Deny: []string{"127.0.0.1"}}).Decide(HostName, loopbackV4, 80); d.Verdict != Deny || d.Stage != StageDeny {
		t.Errorf("a deny entry for 127.0.0.1 must still refuse host.dsh.internal: %v %v", d.Verdict, d.Stage)
	}
}

// A world's Dialer maps host.dsh.internal to the host's loopback without
// asking DNS, and refuses every loopback address otherwise, whatever
// entry allows it. Without World, an address entry keeps its meaning.
func TestWorldDialerLoopback(t *testing.T) {
	port := strconv.Itoa(int(loopbackHTTP(t)))
	p := MustNew(Config{Allow: []string{"127.0.0.1:" + port, "host.dsh.internal:" + port, "svc.test:" + port}})
	rec := &RecordingResolver{Next: StubResolver{"svc.test": mustAddrs("127.0.0.1")}}
	world := &Dialer{Policy: p, Resolver: rec, World: true}
	ctx := context.Background()
	c, err := world.DialContext(ctx, "tcp", "host.dsh.internal:"+port)
	if err != nil {
		t.Fatalf("world dial of host.dsh.internal:%s: %v", port, err)
	}
	c.Close()
	for _, addr := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "svc.test:" + port} {
		_, err := world.DialContext(ctx, "tcp", addr)
		var de *DeniedError
		if !errors.As(err, &de) || de.Decision.Rule != ruleWorldLoopback && addr != "[::1]:"+port {
			t.Errorf("world dial of %s = %v; want the world-loopback denial", addr, err)
		}
	}
	if q := rec.Queries(); len(q) != 1 || q[0] != "svc.test" {
		t.Errorf("queries %q; want only svc.test (host.dsh.internal is never looked up)", q)
	}
	host := &Dialer{Policy: p, Resolver: rec}
	if c, err := host.DialContext(ctx, "tcp", "127.0.0.1:"+port); err != nil {
		t.Errorf("host-side dial of an allowed 127.0.0.1 entry: %v", err)
	} else {
		c.Close()
	}
}

package docker

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// Without iptables a world with egress must not open: its network would
// reach every address of the host.
func TestAllowProxyFailsClosedWithoutIptables(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := allowProxy(context.Background(), "000000000000", "br-dsh000000000", netip.MustParseAddr("192.0.2.1"), 3128)
	if !errors.Is(err, ErrFirewall) || !strings.Contains(err.Error(), "root and iptables") {
		t.Fatalf("allowProxy without iptables = %v, want ErrFirewall saying what is needed", err)
	}
}

func TestAllowRuleIsScopedToWorldBridgeGatewayAndPort(t *testing.T) {
	got := strings.Join(allowRule("abc", "br-dshabc", netip.MustParseAddr("192.0.2.1"), 3128), " ")
	want := "DSH-INPUT -i br-dshabc -d 192.0.2.1/32 -p tcp --dport 3128 -m comment --comment dsh:abc -j ACCEPT"
	if got != want {
		t.Errorf("allowRule = %q, want %q", got, want)
	}
}

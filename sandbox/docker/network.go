package docker

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// worldNetwork is a world's own internal bridge network.
type worldNetwork struct {
	ID      string
	Name    string
	Bridge  string     // host interface name of the bridge
	Gateway netip.Addr // the host's address on the bridge; the proxy listens here
}

// bridgeName is the host interface of a world's bridge: "br-dsh" and nine
// hex digits of the world id (interface names are at most 15 bytes). The
// firewall matches every world's bridge with the prefix "br-dsh"; "br-"
// is docker's own prefix for bridges of user-defined networks, so tools
// that recognise engine bridges recognise these.
func bridgeName(worldID string) string {
	return bridgePrefix + worldID[:9]
}

const bridgePrefix = "br-dsh"

// createNetwork makes the world's network: a bridge marked internal, so
// docker adds no route out and no masquerading, with inter-container
// traffic off. The host's own addresses stay reachable through the
// gateway; the firewall (firewall.go) closes those.
func createNetwork(ctx context.Context, cli *client.Client, worldID string, labels map[string]string) (*worldNetwork, error) {
	n := &worldNetwork{Name: "dsh-" + worldID, Bridge: bridgeName(worldID)}
	ipv6 := false
	resp, err := cli.NetworkCreate(ctx, n.Name, network.CreateOptions{
		Driver:     "bridge",
		Internal:   true,
		EnableIPv6: &ipv6,
		Options: map[string]string{
			"com.docker.network.bridge.name":                 n.Bridge,
			"com.docker.network.bridge.enable_icc":           "false",
			"com.docker.network.bridge.enable_ip_masquerade": "false",
		},
		Labels: labels,
	})
	if err != nil {
		return nil, fmt.Errorf("docker: creating network %s: %w", n.Name, err)
	}
	n.ID = resp.ID
	ins, err := cli.NetworkInspect(ctx, n.ID, network.InspectOptions{})
	if err != nil {
		return n, fmt.Errorf("docker: inspecting network %s: %w", n.Name, err)
	}
	for _, c := range ins.IPAM.Config {
		if a, err := netip.ParseAddr(c.Gateway); err == nil && a.Is4() {
			n.Gateway = a
			break
		}
	}
	if !n.Gateway.IsValid() {
		return n, fmt.Errorf("docker: network %s has no IPv4 gateway", n.Name)
	}
	return n, nil
}

// listenGateway opens the proxy's listener on the gateway address, on a
// port the kernel picks.
func listenGateway(ctx context.Context, gw netip.Addr) (net.Listener, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp4", netip.AddrPortFrom(gw, 0).String())
	if err != nil {
		return nil, fmt.Errorf("docker: listening for the egress proxy on %s: %w", gw, err)
	}
	return l, nil
}

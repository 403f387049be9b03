package docker

import (
	"net"
	"testing"

	"github.com/dsh-dev/dsh/execworld/conformance"
	"github.com/dsh-dev/dsh/sandbox"
)

// TestConformance runs the suite every confining driver must pass.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the conformance suite opens several worlds")
	}
	cli := newClient(t)
	requireImage(t, cli, baseImage)
	d, err := New(&Options{InitPath: initBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	conformance.Run(t, d, conformance.Options{
		Spec: func(ws string) *sandbox.Spec {
			s := sandbox.DefaultSpec(ws)
			s.Image = baseImage
			return s
		},
		// docker0's address: a listener there must be out of reach too.
		ListenHosts: dockerBridgeAddrs(t),
	})
}

// dockerBridgeAddrs returns the IPv4 addresses of the default docker
// bridge on this host.
func dockerBridgeAddrs(t *testing.T) []string {
	ifc, err := net.InterfaceByName("docker0")
	if err != nil {
		t.Logf("no docker0 bridge: %v", err)
		return nil
	}
	addrs, _ := ifc.Addrs()
	var out []string
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			out = append(out, ipn.IP.String())
		}
	}
	return out
}

package native

import (
	"net/netip"

	"github.com/dsh-dev/dsh/sandbox"
)

// proxyPort is where the init's relay listens on the world's loopback:
// the port of sandbox.ProxyAddr, which execworld points the proxy
// variables at.
var proxyPort = int(netip.MustParseAddrPort(sandbox.ProxyAddr).Port())

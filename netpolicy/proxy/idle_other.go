//go:build !linux

package netpolicy

import (
	"net"
	"time"
)

// socketIdle is unavailable here; the tunnel falls back to its counters.
func socketIdle(net.Conn) (time.Duration, bool) { return 0, false }

package proxy_test

import (
	"context"
	"log"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/netpolicy/proxy"
	"github.com/dsh-dev/dsh/sandbox"
)

// A Proxy is what a sandbox driver serves the world's egress with.
var _ sandbox.EgressServer = (*proxy.Proxy)(nil)

// One proxy per world: the world's policy in its Dialer, a listener only
// that world can reach (here a unix socket, as the native driver uses),
// audit lines to stdout and metrics on the caller's registry.
func ExampleNew() {
	pol, err := netpolicy.New(netpolicy.Config{Allow: []string{"proxy.golang.org:443", "*.githubusercontent.com:443"}})
	if err != nil {
		log.Fatal(err)
	}
	metrics, err := proxy.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		log.Fatal(err)
	}
	p := proxy.New(&netpolicy.Dialer{Policy: pol}, &proxy.Options{
		World:   "build-42",
		Audit:   os.Stdout,
		Metrics: metrics,
	})
	l, err := net.Listen("unix", "/run/dsh/build-42/egress.sock")
	if err != nil {
		log.Fatal(err)
	}
	go p.Serve(l)

	// ... the world runs with HTTP_PROXY/HTTPS_PROXY pointing at it ...

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.Shutdown(ctx) // drains open tunnels, then closes what is left
}

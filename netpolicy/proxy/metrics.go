package proxy

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the egress proxy's Prometheus metrics. One value may be
// shared by the proxies of several worlds; every series carries the world.
type Metrics struct {
	decisions *prometheus.CounterVec // world, verdict, reason
	open      *prometheus.GaugeVec   // world
	bytes     *prometheus.CounterVec // world, direction (up, down)
}

// NewMetrics creates the proxy's metrics and registers them on reg:
//
//	dsh_proxy_decisions_total{world,verdict,reason}
//	dsh_proxy_open_connections{world}
//	dsh_proxy_bytes_total{world,direction}   direction is up (client to
//	                                         upstream) or down
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dsh_proxy_decisions_total",
			Help: "Egress decisions of the proxy, by world, verdict and reason.",
		}, []string{"world", "verdict", "reason"}),
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dsh_proxy_open_connections",
			Help: "Client connections currently open, by world.",
		}, []string{"world"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dsh_proxy_bytes_total",
			Help: "Bytes carried by the proxy, by world and direction (up: client to upstream).",
		}, []string{"world", "direction"}),
	}
	for _, c := range []prometheus.Collector{m.decisions, m.open, m.bytes} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering proxy metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) decision(world, verdict, reason string) {
	if m != nil {
		m.decisions.WithLabelValues(world, verdict, reason).Inc()
	}
}

// byteCounters returns the up and down byte counters of a world, looked up
// once per connection rather than per chunk.
func (m *Metrics) byteCounters(world string) (up, down prometheus.Counter) {
	if m == nil {
		return nil, nil
	}
	return m.bytes.WithLabelValues(world, "up"), m.bytes.WithLabelValues(world, "down")
}

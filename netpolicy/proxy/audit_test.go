package proxy

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/prometheus/client_golang/prometheus"
)

func TestProxyAuditRecordFields(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, netpolicy.Config{Allow: []string{echo.String()}}, nil, &Options{World: "w1"})
	resp, c, _ := send(t, env.addr, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	c.Close()
	resp, _, _ = send(t, env.addr, "CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 403 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	recs := env.waitRecords(t, 2)
	for _, r := range recs {
		for _, k := range []string{"time", "world", "client", "method", "host", "port", "addr", "verdict", "reason", "rule", "bytes_up", "bytes_down", "duration_ms"} {
			if _, ok := r[k]; !ok {
				t.Errorf("audit record %v lacks %q", r, k)
			}
		}
		if r["world"] != "w1" || !strings.HasPrefix(r["client"].(string), "127.0.0.1:") {
			t.Errorf("audit record %v: want world w1 and the client's address", r)
		}
		if _, err := time.Parse(time.RFC3339Nano, r["time"].(string)); err != nil {
			t.Errorf("audit time %v: %v", r["time"], err)
		}
	}
	// A tunnel's record is written when it ends, so the order may vary.
	if recs[0]["verdict"] == "deny" {
		recs[0], recs[1] = recs[1], recs[0]
	}
	if recs[0]["verdict"] != "allow" || recs[1]["verdict"] != "deny" || recs[1]["host"] != "10.0.0.1" || recs[1]["port"] != float64(443) {
		t.Errorf("audit records %v, want an allow and a deny of 10.0.0.1:443", recs)
	}
}

func TestProxyMetrics(t *testing.T) {
	echo := echoServer(t)
	env := startProxy(t, netpolicy.Config{Allow: []string{echo.String()}}, nil, &Options{World: "m"})
	resp, c, br := send(t, env.addr, "CONNECT "+echo.String()+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	io.WriteString(c, "ping")
	buf := make([]byte, 4)
	io.ReadFull(br, buf)
	if got := metricValue(t, env.reg, "dsh_proxy_open_connections", map[string]string{"world": "m"}); got != 1 {
		t.Errorf("open connections with a tunnel up = %v, want 1", got)
	}
	c.Close()
	send(t, env.addr, "CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n")
	env.waitRecords(t, 2)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"dsh_proxy_decisions_total", map[string]string{"world": "m", "verdict": "allow", "reason": "allow"}, 1},
		{"dsh_proxy_decisions_total", map[string]string{"world": "m", "verdict": "deny", "reason": "special"}, 1},
		{"dsh_proxy_bytes_total", map[string]string{"world": "m", "direction": "up"}, 4},
		{"dsh_proxy_bytes_total", map[string]string{"world": "m", "direction": "down"}, 4},
	} {
		if got := metricValue(t, env.reg, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for metricValue(t, env.reg, "dsh_proxy_open_connections", map[string]string{"world": "m"}) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("open connections did not return to 0 after every client closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func metricValue(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
	}
	return 0
}

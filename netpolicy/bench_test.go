package netpolicy

import (
	"net/netip"
	"net/url"
	"testing"
	"time"
)

var benchSink Decision

var benchAddrs = []string{"8.8.8.8", "10.1.2.3", "2606:4700::1111", "::ffff:169.254.169.254", "64:ff9b::a00:1"}

// BenchmarkDecideIP decides a bare address under the web default (the
// dialer's per-address check).
func BenchmarkDecideIP(b *testing.B) {
	p := MustNew(WebDefault())
	for _, s := range benchAddrs {
		a := netip.MustParseAddr(s)
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchSink = p.Decide("", a, 443)
			}
		})
	}
}

// BenchmarkDecideURL parses and decides a URL without DNS (web fetch's
// pre-check).
func BenchmarkDecideURL(b *testing.B) {
	p := MustNew(Config{Default: "public", Ports: []int{80, 443}, Allow: []string{"*.internal.example:8443", "10.0.0.0/8"}, Deny: []string{"tracker.example.com"}})
	for _, raw := range []string{"https://www.example.org/search?q=dsh", "http://0x7f.1/", "http://１２７。０。０。１/", "https://[2606:4700::1111]/x"} {
		b.Run(raw, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, t, err := ParseURL(raw)
				if err != nil {
					b.Fatal(err)
				}
				benchSink = p.Decide(t.Host, t.Addr, t.Port)
			}
		})
	}
}

// baselinePrefixes is what a naive SSRF check does: a flat list of
// private prefixes.
var baselinePrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, tab := range [][]specialRow{specials().v4, specials().v6} {
		for _, r := range tab {
			ps = append(ps, r.Prefix)
		}
	}
	return ps
}()

var baselineSink bool

// BenchmarkBaselineIP is the floor BenchmarkDecideIP is compared with:
// netip.ParseAddr, Unmap, and a Prefix.Contains loop over the same
// prefixes, no reasons, no rules.
func BenchmarkBaselineIP(b *testing.B) {
	for _, s := range benchAddrs {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a, _ := netip.ParseAddr(s)
				a = a.Unmap()
				hit := false
				for _, p := range baselinePrefixes {
					if p.Contains(a) {
						hit = true
						break
					}
				}
				baselineSink = hit
			}
		})
	}
}

// BenchmarkBaselineURL is the floor for BenchmarkDecideURL: url.Parse,
// then the naive prefix check of an IP host.
func BenchmarkBaselineURL(b *testing.B) {
	for _, raw := range []string{"https://www.example.org/search?q=dsh", "https://[2606:4700::1111]/x"} {
		b.Run(raw, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				u, err := url.Parse(raw)
				if err != nil {
					b.Fatal(err)
				}
				hit := false
				if a, err := netip.ParseAddr(u.Hostname()); err == nil {
					for _, p := range baselinePrefixes {
						if p.Contains(a.Unmap()) {
							hit = true
							break
						}
					}
				}
				baselineSink = hit
			}
		})
	}
}

// interleave runs f and base in alternating blocks and reports both costs
// and their ratio: on a shared, noisy machine a ratio measured this way
// stays meaningful when absolute times do not.
func interleave(b *testing.B, f, base func()) {
	const block = 512
	var tf, tb time.Duration
	n := 0
	for n < b.N {
		s := time.Now()
		for range block {
			f()
		}
		tf += time.Since(s)
		s = time.Now()
		for range block {
			base()
		}
		tb += time.Since(s)
		n += block
	}
	b.ReportMetric(float64(tf.Nanoseconds())/float64(n), "dsh-ns/op")
	b.ReportMetric(float64(tb.Nanoseconds())/float64(n), "base-ns/op")
	b.ReportMetric(float64(tf)/float64(tb), "ratio")
}

func baselineCheck(s string) bool {
	a, _ := netip.ParseAddr(s)
	a = a.Unmap()
	for _, p := range baselinePrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// BenchmarkRatioIP compares Decide (address already parsed, as the dialer
// has it) with the naive parse-and-contains check, interleaved.
func BenchmarkRatioIP(b *testing.B) {
	p := MustNew(WebDefault())
	for _, s := range benchAddrs {
		a := netip.MustParseAddr(s)
		b.Run(s, func(b *testing.B) {
			interleave(b, func() { benchSink = p.Decide("", a, 443) }, func() { baselineSink = baselineCheck(s) })
		})
	}
}

// BenchmarkRatioURL compares ParseURL+Decide with url.Parse plus the
// naive check, interleaved.
func BenchmarkRatioURL(b *testing.B) {
	p := MustNew(WebDefault())
	for _, raw := range []string{"https://www.example.org/search?q=dsh", "http://0x7f.1/", "https://[2606:4700::1111]/x"} {
		b.Run(raw, func(b *testing.B) {
			interleave(b, func() {
				_, t, _ := ParseURL(raw)
				benchSink = p.Decide(t.Host, t.Addr, t.Port)
			}, func() {
				u, _ := url.Parse(raw)
				baselineSink = baselineCheck(u.Hostname())
			})
		})
	}
}

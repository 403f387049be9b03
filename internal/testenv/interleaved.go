package testenv

import (
	"slices"
	"testing"
	"time"
)

// Interleaved times a against its baseline base, call by call in the
// same loop so machine load hits both alike, for b.N rounds, and reports
// each one's p50 in µs (metric names NAME-p50-µs) and their ratio
// (p50-ratio).
func Interleaved(b *testing.B, baseName string, base func() error, name string, a func() error) {
	var bd, ad []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := base(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := a(); err != nil {
			b.Fatal(err)
		}
		bd = append(bd, t1.Sub(t0))
		ad = append(ad, time.Since(t1))
	}
	b.StopTimer()
	pb, pa := median(bd), median(ad)
	b.ReportMetric(float64(pb.Microseconds()), baseName+"-p50-µs")
	b.ReportMetric(float64(pa.Microseconds()), name+"-p50-µs")
	b.ReportMetric(float64(pa)/float64(pb), "p50-ratio")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

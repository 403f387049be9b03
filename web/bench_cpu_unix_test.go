//go:build unix

package web

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU adds cpu-ns/op: the process's user+system CPU time (client
// and loopback server together) per iteration. On a shared, loaded
// machine it varies far less than wall time, which includes waiting for
// a core. Call as defer reportCPU(b)().
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package native

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// hostTrace prints, with DSH_NATIVE_TRACE=1, the wall, user and kernel
// time of each host-side step of a world's start and close (the init
// prints its own steps). Disabled, it costs one branch per step.
type hostTrace struct {
	on   bool
	last time.Time
	ru   syscall.Rusage
}

func newHostTrace() *hostTrace {
	t := &hostTrace{on: os.Getenv("DSH_NATIVE_TRACE") == "1"}
	if t.on {
		t.last = time.Now()
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &t.ru)
	}
	return t
}

func (t *hostTrace) mark(step string) {
	if t == nil || !t.on {
		return
	}
	now := time.Now()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Fprintf(os.Stderr, "dsh host: %-18s %8.3f ms  user %6.3f  sys %6.3f\n", step,
		ms(now.Sub(t.last)), ms(tvDiff(ru.Utime, t.ru.Utime)), ms(tvDiff(ru.Stime, t.ru.Stime)))
	t.last, t.ru = now, ru
}

// say prints what happened at this point, untimed.
func (t *hostTrace) say(what string) {
	if t != nil && t.on {
		fmt.Fprintf(os.Stderr, "dsh host: %s\n", what)
	}
}

func tvDiff(a, b syscall.Timeval) time.Duration {
	return time.Duration(a.Nano() - b.Nano())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

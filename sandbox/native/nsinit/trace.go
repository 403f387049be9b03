package nsinit

import (
	"fmt"
	"os"
	"time"
)

// tracer prints the duration of each setup step of the init to stderr,
// for finding where start-up time goes. Disabled, it costs nothing.
type tracer struct {
	on   bool
	last time.Time
}

func newTracer(on bool) *tracer { return &tracer{on: on, last: time.Now()} }

func (t *tracer) mark(step string) {
	if !t.on {
		return
	}
	now := time.Now()
	fmt.Fprintf(os.Stderr, "dsh init: %-18s %8.3f ms\n", step, float64(now.Sub(t.last).Microseconds())/1000)
	t.last = now
}

// note prints a step measured elsewhere (before the tracer existed).
func (t *tracer) note(step string, d time.Duration) {
	if t.on {
		fmt.Fprintf(os.Stderr, "dsh init: %-18s %8.3f ms\n", step, float64(d.Microseconds())/1000)
	}
}

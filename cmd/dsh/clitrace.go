package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cliTrace times, with DSH_NATIVE_TRACE=1, the wall, user and kernel
// time of each step of dsh run's own, before and after the world, and
// prints them on stderr as dsh exits (the native driver prints its steps
// as it takes them, the init its own). Other commands print nothing.
// Disabled, it costs one branch per step.
var cliTrace = newStepTrace()

type stepTrace struct {
	on    bool // DSH_NATIVE_TRACE=1
	mu    sync.Mutex
	print bool // the command is dsh run
	last  time.Time
	ru    syscall.Rusage
	lines strings.Builder
}

// newStepTrace starts the clock: as a package variable of main, after
// every imported package's initialisation, before main's init functions.
func newStepTrace() *stepTrace {
	t := &stepTrace{on: os.Getenv("DSH_NATIVE_TRACE") == "1"}
	if t.on {
		t.last = time.Now()
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &t.ru)
	}
	return t
}

// mark ends a step.
func (t *stepTrace) mark(step string) {
	if !t.on {
		return
	}
	t.mu.Lock() // commands that open several worlds mark from several goroutines
	defer t.mu.Unlock()
	if !t.print && t.lines.Len() > 0 {
		return // past the command tree, and not dsh run: keep nothing
	}
	now := time.Now()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Fprintf(&t.lines, "dsh cli:  %-18s %8.3f ms  user %6.3f  sys %6.3f\n", step,
		float64(now.Sub(t.last).Microseconds())/1000,
		float64(ru.Utime.Nano()-t.ru.Utime.Nano())/1e6, float64(ru.Stime.Nano()-t.ru.Stime.Nano())/1e6)
	t.last, t.ru = now, ru
}

// flush prints the steps of dsh run.
func (t *stepTrace) flush() {
	if !t.on {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.print {
		fmt.Fprint(os.Stderr, t.lines.String())
	}
}

// printAtExit makes flush print the steps: the command is dsh run.
func (t *stepTrace) printAtExit() {
	if !t.on {
		return
	}
	t.mu.Lock()
	t.print = true
	t.mu.Unlock()
}

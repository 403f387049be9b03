package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
)

// A paused world makes no progress and runs nothing new; resumed, it
// goes on where it stopped; closed while paused, none of its processes
// is left. A driver without a freezer refuses Pause with
// execworld.ErrCannotPause and keeps running.
func checkPause(ctx context.Context, s *suite) error {
	w, err := s.open(ctx, nil)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			w.w.Close()
		}
	}()
	marker := "dsh-conformance-pause-" + randHex(4)
	counter := filepath.Join(w.ws, "counter")
	script := `i=0; while :; do i=$((i+1)); echo $i > counter; done; : ` + marker
	r, err := w.w.Exec.Start(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", script}, Timeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	defer r.Stop()
	if _, err := waitCounter(ctx, counter, 1); err != nil {
		return err
	}

	if err := w.w.Pause(); err != nil {
		if !errors.Is(err, execworld.ErrCannotPause) || s.backend.Name() != sandbox.DriverHost {
			return fmt.Errorf("pausing a world with limits on the %s driver: %w", s.backend.Name(), err)
		}
		// No freezer: the world must say so and keep running.
		s.logf("the driver cannot pause: %v", err)
		if w.w.Paused() {
			return errors.New("pausing failed with ErrCannotPause, yet Paused reports true")
		}
		return alive(ctx, w)
	}
	if !w.w.Paused() {
		return errors.New("pausing succeeded, yet Paused reports false")
	}
	// Frozen between its truncate and its write, the file may be empty:
	// what matters is that it does not change.
	before, _ := os.ReadFile(counter)
	time.Sleep(500 * time.Millisecond)
	after, _ := os.ReadFile(counter)
	if !bytes.Equal(before, after) {
		return fmt.Errorf("the counter went on while paused: %q, 500 ms later %q", before, after)
	}
	if _, err := w.w.Exec.Start(ctx, &execworld.Cmd{Argv: []string{"/bin/true"}}); !errors.Is(err, execworld.ErrPaused) {
		return fmt.Errorf("Exec.Start while paused: %v; want execworld.ErrPaused", err)
	}
	if err := w.w.Pause(); err != nil {
		return fmt.Errorf("pausing a paused world (must be a no-op): %w", err)
	}

	if err := w.w.Resume(); err != nil {
		return fmt.Errorf("resuming: %w", err)
	}
	if w.w.Paused() {
		return errors.New("resuming succeeded, yet Paused reports true")
	}
	n := parseCounter(after)
	if _, err := waitCounter(ctx, counter, n+1000); err != nil {
		return fmt.Errorf("after Resume: %w", err)
	}
	if err := alive(ctx, w); err != nil {
		return fmt.Errorf("after Resume: %w", err)
	}

	// Closed while paused: Close kills everything all the same.
	if err := w.w.Pause(); err != nil {
		return fmt.Errorf("pausing again: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- w.w.Close() }()
	select {
	case err := <-done:
		closed = true
		if err != nil {
			return fmt.Errorf("closing a paused world: %w", err)
		}
	case <-time.After(60 * time.Second):
		return errors.New("closing a paused world did not return in 60 s")
	}
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		return errors.New("the counter's Running did not end after Close of the paused world")
	}
	if pids := hostProcsWith(marker); len(pids) > 0 {
		return fmt.Errorf("processes of the paused world outlived its Close: pids %v", pids)
	}
	return nil
}

// waitCounter waits until the counter file holds at least min.
func waitCounter(ctx context.Context, path string, min int) (int, error) {
	deadline := time.Now().Add(30 * time.Second)
	last := -1
	for time.Now().Before(deadline) && ctx.Err() == nil {
		b, _ := os.ReadFile(path)
		if last = parseCounter(b); last >= min {
			return last, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return last, fmt.Errorf("the counter in %s did not reach %d in 30 s (last %d)", path, min, last)
}

func parseCounter(b []byte) int {
	n := 0
	for _, c := range strings.TrimSpace(string(b)) {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// hostProcsWith lists the host pids whose command line contains marker.
func hostProcsWith(marker string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

package execworld

import (
	"errors"
	"fmt"

	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// ErrPaused is returned by Exec.Start while the world is paused.
var ErrPaused = errors.New("execworld: the world is paused; resume it first")

// ErrCannotPause is returned by Pause when the world's driver cannot
// freeze it (sandbox.Freezer), as with limits off or the host driver.
var ErrCannotPause = errors.New("execworld: this world cannot be paused: its driver has no freezer (native needs its cgroup, so limits on; docker pauses the container)")

// Pause freezes every process of the world, keeping its memory; Start
// is refused with ErrPaused until Resume. Pausing a paused world is a
// no-op.
func (w *World) Pause() error {
	f, ok := w.inst.(sandbox.Freezer)
	if !ok {
		return ErrCannotPause
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.paused {
		return nil
	}
	if err := f.Freeze(); err != nil {
		if errors.Is(err, sandbox.ErrNoFreezer) {
			return fmt.Errorf("%w; world %s: %v", ErrCannotPause, w.ID, err)
		}
		return fmt.Errorf("execworld: pausing world %s: %w", w.ID, err)
	}
	w.paused = true
	return nil
}

// Resume thaws a paused world. Resuming a running world is a no-op.
func (w *World) Resume() error {
	f, ok := w.inst.(sandbox.Freezer)
	if !ok {
		return ErrCannotPause
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if !w.paused {
		return nil
	}
	if err := f.Thaw(); err != nil {
		return fmt.Errorf("execworld: resuming world %s: %w", w.ID, err)
	}
	w.paused = false
	return nil
}

// Paused tells whether the world is paused.
func (w *World) Paused() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paused
}

// SetEgress replaces the policy of the world's egress proxy for new
// connections (open ones keep the decision they got). Net, dsh's own
// egress on the world's behalf, follows when it was opened with the
// egress policy (no Options.Net); one opened with a policy of its own
// keeps it. A world opened without egress has no proxy to police, so it
// is refused: open it with a policy (even one denying everything) to
// change it later.
func (w *World) SetEgress(p *netpolicy.Policy) error {
	if w.proxy == nil {
		return errors.New("execworld: this world was opened without egress, so it has no proxy whose policy could change")
	}
	w.proxy.SetPolicy(p)
	if w.netFollowsEgress {
		w.Net.setPolicy(p)
	}
	return nil
}

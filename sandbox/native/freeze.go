package native

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/containerd/cgroups/v3/cgroup1"

	"github.com/dsh-dev/dsh/sandbox"
)

// errFrozen is returned by Start while the world is frozen: the init
// cannot answer, and execworld refuses first (ErrPaused).
var errFrozen = errors.New("native: the world is frozen; thaw it first")

// Freeze stops every process of the world, its init included, with the
// cgroup freezer (v1 freezer.state, v2 cgroup.freeze); their memory is
// kept. It returns once the kernel reports the group frozen. A world
// opened without limits has no cgroup, and so no freezer.
func (in *instance) Freeze() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return ErrClosed
	}
	if in.l.cg == nil {
		return fmt.Errorf("%w: native world %s was opened without limits, so it has no cgroup; open it with limits (drop --no-limits / sandbox.limits.off) to pause it", sandbox.ErrNoFreezer, in.l.id)
	}
	if in.frozen {
		return nil
	}
	if err := in.l.cg.freeze(); err != nil {
		// A half-frozen group would leave some processes stopped.
		_ = in.l.cg.thaw()
		return fmt.Errorf("native: freezing the cgroup of world %s: %w", in.l.id, err)
	}
	in.frozen = true
	return nil
}

// Thaw restarts a frozen world.
func (in *instance) Thaw() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return ErrClosed
	}
	if in.l.cg == nil {
		return fmt.Errorf("%w: native world %s was opened without limits, so it has no cgroup", sandbox.ErrNoFreezer, in.l.id)
	}
	if !in.frozen {
		return nil
	}
	if err := in.l.cg.thaw(); err != nil {
		return fmt.Errorf("native: thawing the cgroup of world %s: %w", in.l.id, err)
	}
	in.frozen = false
	return nil
}

func (g *cgroupV1) freeze() error { return g.c.Freeze() }
func (g *cgroupV1) thaw() error   { return g.c.Thaw() }

// killFrozen queues SIGKILL for every member while the group is frozen
// (v1 delivers it on thaw), then thaws it.
func (g *cgroupV1) killFrozen() {
	procs, _ := g.c.Processes(cgroup1.Freezer, true)
	for _, p := range procs {
		_ = syscall.Kill(p.Pid, syscall.SIGKILL)
	}
	_ = g.c.Thaw()
}

func (g *cgroupV2) freeze() error { return g.m.Freeze() }
func (g *cgroupV2) thaw() error   { return g.m.Thaw() }

// killFrozen uses cgroup.kill, which v2 delivers to frozen tasks too,
// then thaws the group.
func (g *cgroupV2) killFrozen() {
	_ = g.m.Kill()
	_ = g.m.Thaw()
}

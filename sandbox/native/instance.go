package native

import (
	"context"
	"sync"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/pid1"
)

// instance is one running world.
type instance struct {
	l      *launch
	client *pid1.Client
	fate   *initFate

	closeOnce sync.Once
	closeErr  error
	// freezeOnce makes FreezeUpper's result (overlay.go).
	freezeOnce sync.Once
	freezeErr  error
	upper      string
	stopOnce   sync.Once
	mu         sync.Mutex // guards closed and frozen
	closed     bool
	frozen     bool // Freeze holds (freeze.go)
}

func newInstance(l *launch) (*instance, error) {
	// The stdio socket now belongs to the client (its Close closes it).
	stdio := l.stdio
	l.stdio = nil
	c, err := pid1.NewDirectClient(pid1.JoinConn(l.ctlR, l.ctlW), stdio)
	if err != nil {
		l.cleanup()
		return nil, err
	}
	return &instance{l: l, client: c, fate: &initFate{pid: l.cmd.Process.Pid, cg: l.cg}}, nil
}

// Start starts a process in the world with exactly p.Env (execworld
// sets the proxy variables).
func (in *instance) Start(ctx context.Context, p sandbox.ProcessSpec) (sandbox.Process, error) {
	in.mu.Lock()
	closed, frozen := in.closed, in.frozen
	in.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if frozen {
		return nil, errFrozen
	}
	proc, err := in.client.Start(ctx, p)
	if err != nil {
		return nil, err
	}
	return pid1.ExplainLoss(proc, in.fate.describe), nil
}

// OOMKills is the oom_kill count of the world's memory cgroup, 0 without
// one (sandbox.OOMCounter).
func (in *instance) OOMKills() int64 { return oomKills(in.l.cg) }

// Close kills every process of the world and removes its cgroup and the
// placeholders of its protected paths. It is idempotent and safe to call
// concurrently; every call returns the first call's result.
func (in *instance) Close() error {
	in.closeOnce.Do(func() {
		in.mu.Lock()
		in.closed = true
		frozen := in.frozen
		in.mu.Unlock()
		if frozen {
			// A frozen init cannot die: every process gets its SIGKILL
			// while frozen and runs again only to take it.
			in.l.cg.killFrozen()
		}
		in.closeErr = in.shutdown()
	})
	return in.closeErr
}

func (in *instance) shutdown() error {
	// The init is PID 1 of the world's pid namespace: when it dies the
	// kernel SIGKILLs every process in the namespace and Wait returns
	// once they are all gone. Processes get SIGKILL either way, so there
	// is nothing to gain from letting the init do it.
	tr := newHostTrace()
	in.stop()
	tr.mark("close: stop init")
	// With every process gone, the cgroup and the placeholders are
	// removed side by side.
	cgErr := make(chan error, 1)
	if cg := in.l.cg; cg != nil {
		in.l.cg = nil
		go func() { cgErr <- cg.destroy() }()
	} else {
		cgErr <- nil
	}
	in.l.cleanup()
	err := <-cgErr
	tr.mark("close: cgroup, cleanup")
	return err
}

// stop kills the init, and with it every process of the world, once.
// The SIGKILL goes before the connection's end, so the init spends no
// CPU on the shutdown that end would start (pid1.Client.CloseAfter)
// while dsh closes the world.
func (in *instance) stop() {
	in.stopOnce.Do(func() {
		_ = in.client.CloseAfter(func() { _ = in.l.cmd.Process.Kill() })
		_ = in.l.cmd.Wait()
		in.l.cmd, in.l.waited = nil, true // cleanup must not wait again
	})
}

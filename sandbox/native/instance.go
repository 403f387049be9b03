package native

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/pid1"
)

// instance is one running world.
type instance struct {
	l        *launch
	client   *pid1.Client
	proxyEnv []string // nil without egress
	fate     *initFate

	closeOnce sync.Once
	closeErr  error
	mu        sync.Mutex // guards closed
	closed    bool
}

func newInstance(l *launch, spec *sandbox.Spec, port int) (*instance, error) {
	c, err := pid1.NewClient(pid1.JoinConn(l.ctlR, l.ctlW))
	if err != nil {
		l.cleanup()
		return nil, err
	}
	in := &instance{l: l, client: c, fate: &initFate{pid: l.cmd.Process.Pid, cg: l.cg}}
	if spec.Egress {
		in.proxyEnv = proxyEnv(port)
	}
	return in, nil
}

// Start starts a process in the world. With egress, HTTP_PROXY and
// HTTPS_PROXY (both cases) point at the forwarder, replacing any value
// in p.Env: inside, the forwarder is the only way out.
func (in *instance) Start(ctx context.Context, p sandbox.ProcessSpec) (sandbox.Process, error) {
	in.mu.Lock()
	closed := in.closed
	in.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if in.proxyEnv != nil {
		env := make([]string, 0, len(p.Env)+len(in.proxyEnv))
		for _, kv := range p.Env {
			k, _, _ := strings.Cut(kv, "=")
			if strings.EqualFold(k, "HTTP_PROXY") || strings.EqualFold(k, "HTTPS_PROXY") {
				continue
			}
			env = append(env, kv)
		}
		p.Env = append(env, in.proxyEnv...)
	}
	proc, err := in.client.Start(ctx, p)
	if err != nil {
		return nil, err
	}
	return pid1.ExplainLoss(proc, in.fate.describe), nil
}

// Close kills every process of the world and removes its cgroup, egress
// socket and state directory. It is idempotent and safe to call
// concurrently; every call returns the first call's result.
func (in *instance) Close() error {
	in.closeOnce.Do(func() {
		in.mu.Lock()
		in.closed = true
		in.mu.Unlock()
		in.closeErr = in.shutdown()
	})
	return in.closeErr
}

func (in *instance) shutdown() error {
	// The init is PID 1 of the world's pid namespace: when it dies the
	// kernel SIGKILLs every process in the namespace and Wait returns
	// once they are all gone. Processes get SIGKILL either way, so there
	// is nothing to gain from letting the init do it.
	_ = in.client.Close()
	_ = in.l.cmd.Process.Kill()
	_ = in.l.cmd.Wait()
	in.l.cmd = nil // waited for: cleanup must not wait again
	var errs []error
	if in.l.cg != nil {
		errs = append(errs, in.l.cg.destroy())
		in.l.cg = nil
	}
	in.l.cleanup()
	return errors.Join(errs...)
}

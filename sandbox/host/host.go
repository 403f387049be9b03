package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"github.com/dsh-dev/dsh/sandbox"
)

// Name is the driver's name.
const Name = sandbox.DriverHost

// ErrClosed is returned by Start after Close, and by the second Close.
var ErrClosed = errors.New("host: instance is closed")

// Driver runs sandboxes as plain host processes. The zero value is ready.
type Driver struct{}

// New returns the host driver.
func New() *Driver { return &Driver{} }

// Name returns "host".
func (*Driver) Name() string { return Name }

// Open checks the Spec as every driver does (sandbox.Validate) and, when
// spec.Egress is set, serves opts.Egress on a loopback listener of a free port,
// which ProxyAddr tells execworld to point the proxy variables at
// (processes that honour them go through the policy; nothing forces the
// others to).
func (*Driver) Open(ctx context.Context, spec *sandbox.Spec, opts *sandbox.OpenOptions) (sandbox.Instance, error) {
	if spec == nil {
		return nil, errors.New("host: nil spec")
	}
	// The host driver confines nothing, but it takes the same Specs as
	// every driver: a Spec it opens is one a confining driver opens.
	ws, err := sandbox.Validate(spec)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	if m := spec.Mode(); m != sandbox.WorkspaceRW {
		// Nothing here could make the workspace read-only or an overlay:
		// refused, never dropped.
		return nil, fmt.Errorf("host: workspace mode %s: the host driver runs on the real workspace and cannot honour it; use --driver native or docker, or --workspace-mode rw", m)
	}
	egress, err := opts.EgressFor(spec)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	in := &Instance{workspace: ws, procs: map[*process]struct{}{}}
	if egress != nil {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("host: egress listener: %w", err)
		}
		in.egress = l
		in.serveDone = make(chan struct{})
		go func() {
			defer close(in.serveDone)
			egress.Serve(l)
		}()
	}
	return in, nil
}

// Instance is a set of host processes started for one world.
type Instance struct {
	workspace string
	egress    net.Listener
	serveDone chan struct{}

	mu     sync.Mutex // guards the fields below
	closed bool
	procs  map[*process]struct{}

	closeOnce sync.Once
	closeErr  error
}

// ProxyAddr is where the egress proxy listens (sandbox.ProxyAddresser),
// or "" without egress.
func (in *Instance) ProxyAddr() string {
	if in.egress == nil {
		return ""
	}
	return in.egress.Addr().String()
}

// Start starts p as a host process in a new process group.
func (in *Instance) Start(ctx context.Context, p sandbox.ProcessSpec) (sandbox.Process, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return nil, ErrClosed
	}
	dir := p.Dir
	if dir == "" {
		dir = in.workspace
	}
	if p.TTY != nil && !p.TTY.Valid() {
		return nil, fmt.Errorf("host: terminal size %dx%d: rows and columns must be at least 1", p.TTY.Rows, p.TTY.Cols)
	}
	proc, err := start(p.Argv, dir, p.Env, p.Stdin, p.TTY)
	if err != nil {
		return nil, err
	}
	in.procs[proc] = struct{}{}
	go func() {
		<-proc.done
		in.mu.Lock()
		delete(in.procs, proc)
		in.mu.Unlock()
	}()
	return proc, nil
}

// Close kills the process group of every process started here and waits
// for them, then stops the egress listener. The second call returns
// ErrClosed.
func (in *Instance) Close() error {
	first := false
	in.closeOnce.Do(func() {
		first = true
		in.mu.Lock()
		in.closed = true
		var procs []*process
		for p := range in.procs {
			procs = append(procs, p)
		}
		in.mu.Unlock()
		for _, p := range procs {
			p.Signal(syscall.SIGKILL)
		}
		for _, p := range procs {
			<-p.done
			// Unread output is dropped with the world.
			p.stdout.close()
			p.stderr.close()
		}
		if in.egress != nil {
			in.closeErr = in.egress.Close()
			<-in.serveDone
		}
	})
	if !first {
		return ErrClosed
	}
	return in.closeErr
}

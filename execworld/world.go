package execworld

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/netpolicy/proxy"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/workspace/changes"
)

// Backend is the port a sandbox driver implements: it turns a Spec into a
// running Instance. execworld never imports a driver; the caller picks
// one (sandbox/docker, sandbox/native, or sandbox/host when unconfined).
type Backend interface {
	// Name is the driver's name as users select it: docker, native, host.
	Name() string
	// Open starts a sandbox for spec, named after opts.ID and with
	// opts.Egress serving its egress. The Instance must be closed.
	Open(ctx context.Context, spec *sandbox.Spec, opts *sandbox.OpenOptions) (sandbox.Instance, error)
}

// Options configure Open.
type Options struct {
	// Spec describes the sandbox. Required. Open works on a copy; its
	// Egress is set by Open (from Options.Egress).
	Spec *sandbox.Spec
	// Egress is the policy of the world's egress proxy, the only way out
	// for processes inside. If nil, processes get no network at all.
	Egress *netpolicy.Policy
	// Net is the policy of dsh's own egress on the world's behalf (web
	// fetch, Streamable HTTP MCP servers). If nil, Egress is used; if that
	// is nil too, everything is denied.
	Net *netpolicy.Policy
	// Resolver resolves names for the proxy and for Net. If nil, the
	// system resolver is used. Tests pass a netpolicy.StubResolver or
	// RecordingResolver, so that no query leaves the machine.
	Resolver netpolicy.Resolver
	// Audit receives the proxy's JSON audit lines (one per connection).
	// If nil, none are written.
	Audit io.Writer
	// ProxyMetrics, if set, counts the proxy's decisions and bytes.
	ProxyMetrics *proxy.Metrics
	// Logger receives operational errors. If nil, they are discarded.
	Logger *slog.Logger
}

// World is one execution world: a workspace filesystem, confined
// processes and policed egress under one Spec and one Policy.
type World struct {
	// ID is short, random and unique (sandbox.NewWorldID). The driver
	// names and labels every resource of the world with it, and the
	// proxy's audit lines carry it.
	ID string
	// FS is the workspace filesystem.
	FS *FS
	// Exec runs processes inside the world.
	Exec *Exec
	// Net is dsh's own egress on the world's behalf.
	Net *Net

	backend  string
	spec     *sandbox.Spec
	inst     sandbox.Instance
	proxy    *proxy.Proxy
	proxyEnv []string // every process's proxy variables; nil without egress
	// netFollowsEgress: Net was opened with the egress policy (no
	// Options.Net), so SetEgress changes both.
	netFollowsEgress bool
	log              *slog.Logger

	mu      sync.Mutex // guards the fields below
	closed  bool
	paused  bool
	running map[*Running]struct{}

	closeOnce sync.Once
	closeErr  error

	// changesOnce makes the change set of an overlay world (Changes).
	changesOnce sync.Once
	changes     *changes.Set
	changesErr  error
}

// Open starts a world on backend. The caller must Close it.
func Open(ctx context.Context, backend Backend, opts *Options) (*World, error) {
	if backend == nil {
		return nil, errors.New("execworld: no sandbox backend given")
	}
	if opts == nil || opts.Spec == nil {
		return nil, errors.New("execworld: Options.Spec is required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	id := sandbox.NewWorldID()
	spec := opts.Spec.Clone()

	fsys, err := OpenFS(spec.Workspace)
	if err != nil {
		return nil, err
	}
	// The canonical path is what the world mounts, so that a path printed
	// inside means the same file outside.
	spec.Workspace = fsys.Root()
	fsys.readOnly = fsReadOnly(spec.Mode())

	netPolicy, netFollows := opts.Net, opts.Net == nil
	if netPolicy == nil {
		netPolicy = opts.Egress
	}
	if netPolicy == nil {
		netPolicy, err = netpolicy.New(netpolicy.SandboxDefault())
		if err != nil {
			fsys.Close()
			return nil, fmt.Errorf("execworld: default policy: %w", err)
		}
	}

	w := &World{
		ID:      id,
		FS:      fsys,
		backend: backend.Name(),
		spec:    spec,
		log:     log.With("world", id),
		running: map[*Running]struct{}{},

		netFollowsEgress: netFollows,
	}
	w.Exec = &Exec{w: w}
	w.Net = newNet(&netpolicy.Dialer{Policy: netPolicy, Resolver: opts.Resolver})

	open := &sandbox.OpenOptions{ID: id}
	spec.Egress = opts.Egress != nil
	if spec.Egress {
		w.proxy = proxy.New(
			&netpolicy.Dialer{Policy: opts.Egress, Resolver: opts.Resolver, World: true},
			&proxy.Options{World: id, Audit: opts.Audit, Metrics: opts.ProxyMetrics, Logger: w.log},
		)
		open.Egress = w.proxy
	}

	inst, err := backend.Open(ctx, spec, open)
	if err != nil {
		w.closeProxy()
		fsys.Close()
		return nil, fmt.Errorf("execworld: opening a %s sandbox: %w", backend.Name(), err)
	}
	w.inst = inst
	if w.proxy != nil {
		addr := sandbox.ProxyAddr
		if pa, ok := inst.(sandbox.ProxyAddresser); ok {
			addr = pa.ProxyAddr()
		}
		w.proxyEnv = proxyEnv(addr)
	}
	return w, nil
}

// Backend is the name of the driver the world runs on.
func (w *World) Backend() string { return w.backend }

// Spec returns a copy of the Spec the world was opened with (workspace
// canonical, Egress set).
func (w *World) Spec() *sandbox.Spec { return w.spec.Clone() }

// Close kills every process of the world, closes the sandbox (removing its
// containers, networks and cgroups), stops the egress proxy and releases
// the workspace. It is safe to call concurrently; every call waits for the
// first to finish, and calls after the first return ErrClosed.
func (w *World) Close() error {
	first := false
	w.closeOnce.Do(func() {
		first = true
		w.closeErr = w.close()
	})
	if !first {
		return ErrClosed
	}
	return w.closeErr
}

func (w *World) close() error {
	w.mu.Lock()
	w.closed = true
	running := slices.Collect(maps.Keys(w.running))
	w.mu.Unlock()

	var errs []error
	// Kill first, so nothing is mid-write when the sandbox goes away.
	for _, r := range running {
		r.kill()
	}
	if err := w.inst.Close(); err != nil {
		errs = append(errs, fmt.Errorf("execworld: closing the %s sandbox of world %s: %w", w.backend, w.ID, err))
	}
	if err := w.closeProxy(); err != nil {
		errs = append(errs, err)
	}
	if err := w.FS.Close(); err != nil && !errors.Is(err, ErrClosed) {
		errs = append(errs, err)
	}
	w.Net.close()
	return errors.Join(errs...)
}

func (w *World) closeProxy() error {
	if w.proxy == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.proxy.Shutdown(ctx); err != nil {
		// Connections still open after the grace are cut.
		w.proxy.Close()
	}
	return nil
}

// track registers a running process; it fails once the world is closed.
func (w *World) track(r *Running) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.running[r] = struct{}{}
	return nil
}

func (w *World) untrack(r *Running) {
	w.mu.Lock()
	delete(w.running, r)
	w.mu.Unlock()
}

func (w *World) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// Package execworldtest provides a fake execworld.Backend for other
// packages' unit tests, the way net/http/httptest ships a fake server.
//
// The fake runs processes as ordinary local processes, each in its own
// process group, with exactly the environment the world gives them. It
// CONFINES NOTHING: no filesystem view, no limits, no network isolation.
// It records what it was asked to do and can be told to fail, so tests of
// surfaces (LSP, MCP, tools) run fast and without Docker or namespaces.
package execworldtest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/host"
)

// Backend is the fake. Set its fields before the first Open.
type Backend struct {
	// OpenErr, if set, makes Open fail with it.
	OpenErr error
	// StartErr, if set, is consulted before every Start; a non-nil result
	// makes that Start fail with it.
	StartErr func(p sandbox.ProcessSpec) error

	mu      sync.Mutex // guards the fields below
	specs   []*sandbox.Spec
	ids     []string
	started []sandbox.ProcessSpec
	open    int
}

// New returns a fake backend.
func New() *Backend { return &Backend{} }

// Name returns "fake".
func (b *Backend) Name() string { return "fake" }

// Open records spec and the world ID and returns an instance that runs
// local processes.
func (b *Backend) Open(ctx context.Context, spec *sandbox.Spec, opts *sandbox.OpenOptions) (sandbox.Instance, error) {
	if b.OpenErr != nil {
		return nil, b.OpenErr
	}
	inner, err := host.New().Open(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	var id string
	if opts != nil {
		id = opts.ID
	}
	b.mu.Lock()
	b.specs = append(b.specs, spec)
	b.ids = append(b.ids, id)
	b.open++
	b.mu.Unlock()
	return &instance{b: b, inner: inner}, nil
}

// Specs returns the Specs Open received, in order.
func (b *Backend) Specs() []*sandbox.Spec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*sandbox.Spec(nil), b.specs...)
}

// IDs returns the world IDs Open received (OpenOptions.ID), in order.
func (b *Backend) IDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.ids...)
}

// Started returns every ProcessSpec started, in order.
func (b *Backend) Started() []sandbox.ProcessSpec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]sandbox.ProcessSpec(nil), b.started...)
}

// OpenInstances is the number of instances opened and not yet closed.
func (b *Backend) OpenInstances() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open
}

type instance struct {
	b     *Backend
	inner sandbox.Instance
	once  sync.Once
}

func (in *instance) Start(ctx context.Context, p sandbox.ProcessSpec) (sandbox.Process, error) {
	if f := in.b.StartErr; f != nil {
		if err := f(p); err != nil {
			return nil, err
		}
	}
	proc, err := in.inner.Start(ctx, p)
	if err != nil {
		return nil, err
	}
	in.b.mu.Lock()
	in.b.started = append(in.b.started, p)
	in.b.mu.Unlock()
	return proc, nil
}

// ProxyAddr is the host driver's: the fake serves egress as it does.
func (in *instance) ProxyAddr() string {
	return in.inner.(sandbox.ProxyAddresser).ProxyAddr()
}

func (in *instance) Close() error {
	err := in.inner.Close()
	in.once.Do(func() {
		in.b.mu.Lock()
		in.b.open--
		in.b.mu.Unlock()
	})
	return err
}

// NewWorld opens a world on the fake with a fresh temporary workspace
// (unless opts.Spec names one) and closes it when the test ends, failing
// the test if the world cannot be closed. opts may be nil.
func NewWorld(t testing.TB, opts *execworld.Options) (*execworld.World, *Backend) {
	t.Helper()
	b := New()
	var o execworld.Options
	if opts != nil {
		o = *opts
	}
	if o.Spec == nil {
		o.Spec = sandbox.DefaultSpec(t.TempDir())
	}
	w, err := execworld.Open(context.Background(), b, &o)
	if err != nil {
		t.Fatalf("execworldtest: opening a world: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil && !errors.Is(err, execworld.ErrClosed) {
			t.Errorf("execworldtest: closing world %s: %v", w.ID, err)
		}
		if n := b.OpenInstances(); n != 0 {
			t.Errorf("execworldtest: %d instance(s) left open", n)
		}
	})
	return w, b
}

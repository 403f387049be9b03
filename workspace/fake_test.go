package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// fakeOpener opens worlds on execworldtest's fake backend (local
// processes, nothing confined), whose instances it makes freezable, and
// records what it was asked.
type fakeOpener struct {
	b *freezeBackend

	// fail, while positive, fails that many more opens.
	fail atomic.Int32

	mu       sync.Mutex // guards the fields below
	opens    []fakeOpen
	policies [][]string
}

type fakeOpen struct {
	dir   string
	t     Template
	allow []string
}

func newFakeOpener() *fakeOpener {
	return &fakeOpener{b: &freezeBackend{Backend: execworldtest.New()}}
}

func (f *fakeOpener) Open(ctx context.Context, dir string, t Template, allow []string) (*execworld.World, error) {
	if t.Driver != sandbox.DriverNative && t.Driver != sandbox.DriverDocker {
		return nil, fmt.Errorf("%w: driver %q: use native or docker", ErrInvalid, t.Driver)
	}
	if f.fail.Add(-1) >= 0 {
		return nil, errors.New("fake: open failed")
	}
	pol, err := f.Policy(allow)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.opens = append(f.opens, fakeOpen{dir, t, allow})
	f.mu.Unlock()
	return execworld.Open(ctx, f.b, &execworld.Options{Spec: sandbox.DefaultSpec(dir), Egress: pol})
}

func (f *fakeOpener) Policy(allow []string) (*netpolicy.Policy, error) {
	f.mu.Lock()
	f.policies = append(f.policies, allow)
	f.mu.Unlock()
	p, err := netpolicy.New(netpolicy.Config{Default: "deny", Allow: allow})
	if err != nil {
		return nil, fmt.Errorf("%w: allow: %v", ErrInvalid, err)
	}
	return p, nil
}

func (f *fakeOpener) openCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.opens)
}

// freezeBackend gives the fake's instances a Freezer that records its
// state.
type freezeBackend struct {
	*execworldtest.Backend
	noFreeze bool // a driver without a freezer
}

func (b *freezeBackend) Open(ctx context.Context, spec *sandbox.Spec, opts *sandbox.OpenOptions) (sandbox.Instance, error) {
	in, err := b.Backend.Open(ctx, spec, opts)
	if err != nil || b.noFreeze {
		return in, err
	}
	return &freezeInstance{Instance: in}, nil
}

type freezeInstance struct {
	sandbox.Instance
	frozen atomic.Bool
}

func (i *freezeInstance) Freeze() error { i.frozen.Store(true); return nil }
func (i *freezeInstance) Thaw() error   { i.frozen.Store(false); return nil }
func (i *freezeInstance) ProxyAddr() string {
	return i.Instance.(sandbox.ProxyAddresser).ProxyAddr()
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// workspaceDirs are the entries of a root beside its lock.
func workspaceDirs(root string) ([]os.DirEntry, error) {
	ents, err := os.ReadDir(root)
	return slices.DeleteFunc(ents, func(e os.DirEntry) bool { return e.Name() == lockFile }), err
}

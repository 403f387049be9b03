package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/execworld"
)

// A pool keeps Size worlds of one template open, each over an empty
// directory of its own under the root (p-<id>/files), with an egress
// proxy that denies everything. A create of the template takes one:
// SetEgress gives it the workspace's policy and writing workspace.json
// makes its directory the workspace's. A refill goroutine per pool
// opens new ones, at most PoolConcurrency at once over all pools, and
// backs off on errors.
type pool struct {
	m    *Mgr
	spec PoolSpec
	key  templateKey
	sem  chan struct{}
	want chan struct{} // pokes the refill

	mu     sync.Mutex // guards the fields below
	ready  []*pooled
	closed bool
}

type pooled struct {
	world   *execworld.World
	id, dir string
}

// Pool refill timing: a take is followed by a refill after
// poolRefillDelay, so that the new workspace's first commands do not
// compete for the CPU with the opening of its replacement (a native
// open is a burst of clone, mount and exec work); a failed open is
// retried after a backoff.
const (
	poolRefillDelay = 50 * time.Millisecond
	poolBackoffMin  = 100 * time.Millisecond
	poolBackoffMax  = 30 * time.Second
)

func newPool(m *Mgr, ps PoolSpec, sem chan struct{}) *pool {
	return &pool{m: m, spec: ps, key: keyOf(ps.Template), sem: sem, want: make(chan struct{}, 1)}
}

// poolFor returns the pool of t, or nil.
func (m *Mgr) poolFor(t Template) *pool {
	k := keyOf(t)
	for _, p := range m.pools {
		if p.key == k {
			return p
		}
	}
	return nil
}

// take returns a ready world, or nil if none is.
func (p *pool) take() *pooled {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.ready) == 0 {
		return nil
	}
	pw := p.ready[0]
	p.ready = p.ready[1:]
	select {
	case p.want <- struct{}{}:
	default:
	}
	return pw
}

// readyCount is how many worlds are ready.
func (p *pool) readyCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready)
}

// fill keeps the pool full until the manager stops.
func (p *pool) fill() {
	defer p.m.bg.Done()
	backoff := poolBackoffMin
	for {
		if p.readyCount() >= p.spec.Size {
			select {
			case <-p.want:
			case <-p.m.stop:
				return
			}
			select {
			case <-time.After(poolRefillDelay):
			case <-p.m.stop:
				return
			}
			continue
		}
		select {
		case p.sem <- struct{}{}:
		case <-p.m.stop:
			return
		}
		pw, err := p.open()
		<-p.sem
		if err != nil {
			p.m.log.Error("workspace: opening a pool world failed; retrying", "driver", p.spec.Template.Driver, "image", p.spec.Template.Image, "in", backoff, "err", err)
			select {
			case <-time.After(backoff):
			case <-p.m.stop:
				return
			}
			backoff = min(2*backoff, poolBackoffMax)
			continue
		}
		backoff = poolBackoffMin
		p.mu.Lock()
		closed := p.closed
		if !closed {
			p.ready = append(p.ready, pw)
		}
		p.mu.Unlock()
		if closed {
			p.m.discard(pw)
			return
		}
	}
}

func (p *pool) open() (*pooled, error) {
	id := "p-" + newID(8)
	dir := filepath.Join(p.m.root, id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	if err := makeFiles(dir, p.m.opts.Owner); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(p.m.ctx, 2*time.Minute)
	defer cancel()
	w, err := p.m.opts.Opener.Open(ctx, filepath.Join(dir, filesDir), p.spec.Template, nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &pooled{world: w, id: id, dir: dir}, nil
}

// close closes the ready worlds and removes their directories.
func (p *pool) close() error {
	p.mu.Lock()
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.mu.Unlock()
	var errs []error
	for _, pw := range ready {
		errs = append(errs, p.m.closePooled(pw))
	}
	return errors.Join(errs...)
}

// discard closes a pooled world nobody will take.
func (m *Mgr) discard(pw *pooled) {
	if err := m.closePooled(pw); err != nil {
		m.log.Error("workspace: discarding a pool world", "err", err)
	}
}

func (m *Mgr) closePooled(pw *pooled) error {
	var errs []error
	if err := pw.world.Close(); err != nil && !errors.Is(err, execworld.ErrClosed) {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(pw.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

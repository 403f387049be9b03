package workspace

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// Defaults of Options.
const (
	DefaultTTL             = time.Hour
	DefaultMaxTTL          = 7 * 24 * time.Hour
	DefaultIdleTimeout     = 15 * time.Minute
	DefaultMaxWorkspaces   = 100
	DefaultReleaseTimeout  = 30 * time.Second
	DefaultPoolConcurrency = 2
	// MaxPoolSize is the most worlds one PoolSpec keeps open.
	MaxPoolSize = 64
)

// ErrClosed is returned by a Manager's methods after Close.
var ErrClosed = errors.New("workspace: the manager is closed")

// Options configure New.
type Options struct {
	// Root is the state root: one directory per workspace (its state and
	// its files), and those of the pool's worlds. Required; made if
	// missing (0700).
	Root string
	// Opener opens the worlds. Required.
	Opener Opener
	// DefaultDriver is the driver of a create that names none. If
	// empty, "native".
	DefaultDriver string
	// DefaultImage is the image of a docker create or pool template that
	// names none (the server's sandbox.image), so that naming it or not is
	// one template, and a workspace's record keeps the image it runs.
	DefaultImage string
	// DefaultTTL is the TTL of a create that gives none (DefaultTTL if
	// zero); MaxTTL is the most a create or an extend may ask for
	// (DefaultMaxTTL if zero).
	DefaultTTL, MaxTTL time.Duration
	// DefaultIdleTimeout is the idle timeout of a create that gives none
	// (DefaultIdleTimeout if zero).
	DefaultIdleTimeout time.Duration
	// MaxWorkspaces is the most workspaces at once; a create beyond it
	// is ErrLimit. If zero, DefaultMaxWorkspaces.
	MaxWorkspaces int
	// ReleaseTimeout bounds how long Delete and Close wait for the
	// callers of World to release it before closing it under them. If
	// zero, DefaultReleaseTimeout.
	ReleaseTimeout time.Duration
	// Pool are the warm pools, one per template.
	Pool []PoolSpec
	// PoolConcurrency bounds how many pool worlds open at once, over all
	// pools. If zero, DefaultPoolConcurrency.
	PoolConcurrency int
	// Logger receives what happens in the background (reaping, pool
	// refills, restarts). If nil, it is discarded.
	Logger *slog.Logger
	// Owner, if set, owns the files/ directory of every workspace (and
	// pooled world) made from now on; else this process does. See
	// FileOwner.
	Owner *FileOwner
}

// PoolSpec is one warm pool: Size worlds of Template kept open.
type PoolSpec struct {
	Template Template `json:"template"`
	Size     int      `json:"size"`
}

// Mgr is the Manager of New: workspaces under a state root, a reaper of
// their TTLs and idle timeouts, and warm pools.
//
// What survives a restart (a new Mgr over the same Root): every
// workspace whose workspace.json is valid and whose TTL has not passed,
// with its name, files, template, egress entries, labels, token,
// creation and expiry times and idle timeout. Its processes and the
// memory of a paused world do not: a native workspace comes back
// stopped (its world is opened on its next use); a docker one is
// reopened by New over the same files in a new container (the old one
// removed itself when it lost the old server, or the docker driver's
// Reap removes it), paused again if it was paused. Workspaces whose TTL
// passed while no server ran are deleted by New; directories without a
// valid workspace.json (a create cut short, a pooled world) are removed.
// last_used is written at pause, resume, extend, an idle close and
// Close, not at every use; a reopened docker workspace counts its idle
// time from the reopen. One Manager at a time owns a Root (a lock the
// kernel drops with the process); a second is refused.
type Mgr struct {
	opts  Options
	root  string
	lock  *os.File // Root's lock, held until Close
	log   *slog.Logger
	pools []*pool

	mu       sync.Mutex // guards the fields below
	ws       map[string]*entry
	closed   bool
	onRemove func(name string) // see OnRemove

	ctx       context.Context // cancelled by Close: the pools' opens
	cancel    context.CancelFunc
	wake      chan struct{} // pokes the reaper
	stop      chan struct{} // closed by Close
	bg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

var _ Manager = (*Mgr)(nil)

// entry is one workspace.
type entry struct {
	id  string // the directory's name under Root
	dir string

	op sync.Mutex // serializes opening, closing, pausing and deleting

	mu       sync.Mutex // guards the fields below
	rec      record
	world    *execworld.World
	refs     int
	released chan struct{} // closed when refs drops to 0; nil while 0
	creating bool          // reserved by a create not yet done
	deleting bool
	closing  bool // world is being closed (idle, Close): no new users
}

func (e *entry) files() string { return filepath.Join(e.dir, filesDir) }

// New starts a Manager over opts.Root: it loads every workspace there
// (see Mgr for what survives a restart), starts the reaper and fills
// the pools in the background.
func New(opts *Options) (*Mgr, error) {
	o, err := validOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := MakeRoot(o.Root); err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(o.Root)
	if err != nil {
		return nil, fmt.Errorf("workspace: state root %s: %w", o.Root, err)
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, err
	}
	lock, err := lockRoot(root)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Mgr{
		lock: lock,
		opts: o,
		root: root,
		log:  log,
		ws:   map[string]*entry{},
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if err := m.load(); err != nil {
		m.cancel()
		lock.Close()
		return nil, err
	}
	m.bg.Add(1)
	go m.reaper()
	sem := make(chan struct{}, o.PoolConcurrency)
	for _, ps := range o.Pool {
		if ps.Size == 0 {
			continue
		}
		p := newPool(m, ps, sem)
		m.pools = append(m.pools, p)
		m.bg.Add(1)
		go p.fill()
	}
	return m, nil
}

// load reads the workspaces under the root (see Mgr).
func (m *Mgr) load() error {
	ents, err := os.ReadDir(m.root)
	if err != nil {
		return fmt.Errorf("workspace: reading the state root %s: %w", m.root, err)
	}
	now := time.Now()
	var reopen []*entry
	for _, de := range ents {
		dir := filepath.Join(m.root, de.Name())
		if !de.IsDir() {
			continue
		}
		if !ownDirRE().MatchString(de.Name()) {
			m.log.Warn("workspace: leaving alone a directory of the state root that is not a workspace's", "dir", dir)
			continue
		}
		rec, err := readRecord(dir)
		if errors.Is(err, fs.ErrNotExist) {
			// A directory of ours without a record: a create cut short,
			// or a pooled world's.
			m.log.Info("workspace: removing a directory without a record (a create cut short, or a pooled world)", "dir", dir)
			if err := os.RemoveAll(dir); err != nil {
				m.log.Error("workspace: removing a stale directory", "dir", dir, "err", err)
			}
			continue
		}
		if err != nil {
			// Records are written atomically, so this one was damaged
			// from outside, or is a newer dsh's: never delete what may
			// be someone's files.
			m.log.Error("workspace: leaving alone a workspace whose record cannot be read; fix or remove it", "dir", dir, "err", err)
			continue
		}
		removeTemps(dir)
		if !now.Before(rec.ExpiresAt) {
			m.log.Info("workspace: deleting a workspace that expired while the server was down", "workspace", rec.Name, "expired", rec.ExpiresAt)
			if err := os.RemoveAll(dir); err != nil {
				m.log.Error("workspace: deleting an expired workspace", "workspace", rec.Name, "dir", dir, "err", err)
			}
			continue
		}
		if old, ok := m.ws[rec.Name]; ok {
			m.log.Error("workspace: two directories hold the same workspace; keeping the first, leaving the other alone", "workspace", rec.Name, "kept", old.dir, "left", dir)
			continue
		}
		e := &entry{id: de.Name(), dir: dir, rec: *rec}
		m.ws[rec.Name] = e
		if rec.Template.Driver == sandbox.DriverDocker {
			reopen = append(reopen, e)
		}
	}
	// Docker workspaces come back running, a few at a time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, e := range reopen {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			m.reopen(e)
		}()
	}
	wg.Wait()
	return nil
}

// reopen opens a loaded docker workspace's world; on failure it stays
// stopped, to be opened on its next use.
func (m *Mgr) reopen(e *entry) {
	e.op.Lock()
	defer e.op.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := m.opts.Opener.Open(ctx, e.files(), e.rec.Template, e.rec.Allow)
	if err != nil {
		m.log.Error("workspace: reopening after a restart; it stays stopped until its next use", "workspace", e.rec.Name, "err", err)
		return
	}
	if e.rec.Paused {
		if err := w.Pause(); err != nil {
			m.log.Error("workspace: pausing again after a restart; it runs", "workspace", e.rec.Name, "err", err)
		}
	}
	e.mu.Lock()
	e.world = w
	e.rec.Paused = w.Paused()
	e.rec.LastUsed = time.Now()
	e.mu.Unlock()
	m.log.Info("workspace: reopened after a restart", "workspace", e.rec.Name, "world", w.ID)
}

// poke makes the reaper recompute its next deadline.
func (m *Mgr) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// lookup returns the named workspace, not one being created or deleted.
func (m *Mgr) lookup(name string) (*entry, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	e, ok := m.ws[name]
	if ok {
		e.mu.Lock()
		ok = !e.creating && !e.deleting
		e.mu.Unlock()
	}
	if !ok {
		return nil, notFound(name)
	}
	return e, nil
}

func notFound(name string) error {
	return fmt.Errorf("%w %q: list the workspaces (GET /v1/workspaces) or create it", ErrNotFound, name)
}

// Create makes a workspace: a pooled world when the request's template
// is a pool's, else a new one.
func (m *Mgr) Create(ctx context.Context, req *CreateRequest) (*Created, error) {
	r, err := m.normalize(req)
	if err != nil {
		return nil, err
	}
	policy, err := m.opts.Opener.Policy(r.Allow)
	if err != nil {
		return nil, err
	}
	gen := r.Name == ""
	e := &entry{creating: true}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	for tries := 0; gen && tries < 10; tries++ {
		if r.Name = "ws-" + newID(5); m.ws[r.Name] == nil {
			break
		}
	}
	if _, ok := m.ws[r.Name]; ok {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %q; pick another name, or delete the old workspace first", ErrExists, r.Name)
	}
	if len(m.ws) >= m.opts.MaxWorkspaces {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: the server holds %d workspaces, its maximum; delete one first", ErrLimit, m.opts.MaxWorkspaces)
	}
	m.ws[r.Name] = e
	m.mu.Unlock()

	c, err := m.create(ctx, e, r, policy)
	m.mu.Lock()
	closed := m.closed
	if err != nil {
		delete(m.ws, r.Name)
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if closed {
		// Close ran meanwhile and may have missed this world.
		m.closeWorld(e, true)
	}
	m.poke()
	return c, nil
}

func (m *Mgr) create(ctx context.Context, e *entry, r *CreateRequest, policy *netpolicy.Policy) (*Created, error) {
	token, hash := newToken()
	now := time.Now()
	rec := record{
		Version:     recordVersion,
		Name:        r.Name,
		Template:    r.Template,
		Allow:       r.Allow,
		Labels:      r.Labels,
		TokenHash:   hash,
		CreatedAt:   now,
		ExpiresAt:   now.Add(time.Duration(r.TTL)),
		IdleTimeout: r.IdleTimeout,
		LastUsed:    now,
	}
	var w *execworld.World
	if p := m.poolFor(r.Template); p != nil {
		if pw := p.take(); pw != nil {
			if err := pw.world.SetEgress(policy); err != nil {
				m.discard(pw)
			} else {
				w, e.id, e.dir = pw.world, pw.id, pw.dir
				rec.Pooled = true
			}
		}
	}
	if w == nil {
		e.id = "w-" + newID(8)
		e.dir = filepath.Join(m.root, e.id)
		if err := os.Mkdir(e.dir, 0o700); err != nil {
			return nil, fmt.Errorf("workspace %s: making its directory: %w", r.Name, err)
		}
		if err := makeFiles(e.dir, m.opts.Owner); err != nil {
			os.RemoveAll(e.dir)
			return nil, fmt.Errorf("workspace %s: making its directory: %w", r.Name, err)
		}
		var err error
		w, err = m.opts.Opener.Open(ctx, e.files(), r.Template, r.Allow)
		if err != nil {
			os.RemoveAll(e.dir)
			return nil, fmt.Errorf("workspace %s: opening its world: %w", r.Name, err)
		}
	}
	if err := writeRecord(e.dir, &rec); err != nil {
		w.Close()
		os.RemoveAll(e.dir)
		return nil, err
	}
	e.mu.Lock()
	e.rec, e.world, e.creating = rec, w, false
	ws := e.view()
	e.mu.Unlock()
	return &Created{Workspace: ws, Token: token}, nil
}

// view is what the API shows of e; e.mu is held.
func (e *entry) view() Workspace {
	r := &e.rec
	ws := Workspace{
		Name:        r.Name,
		Driver:      r.Template.Driver,
		Image:       r.Template.Image,
		Limits:      r.Template.Limits,
		Allow:       slices.Clone(r.Allow),
		State:       StateStopped,
		CreatedAt:   r.CreatedAt,
		ExpiresAt:   r.ExpiresAt,
		IdleTimeout: r.IdleTimeout,
		LastUsed:    r.LastUsed,
		Pooled:      r.Pooled,
	}
	if len(r.Labels) > 0 {
		ws.Labels = make(map[string]string, len(r.Labels))
		for k, v := range r.Labels {
			ws.Labels[k] = v
		}
	}
	if e.world != nil {
		ws.World = e.world.ID
		ws.State = StateRunning
		if r.Paused {
			ws.State = StatePaused
		}
	}
	return ws
}

// List returns every workspace, by name.
func (m *Mgr) List(ctx context.Context) ([]Workspace, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	es := make([]*entry, 0, len(m.ws))
	for _, e := range m.ws {
		es = append(es, e)
	}
	m.mu.Unlock()
	out := make([]Workspace, 0, len(es))
	for _, e := range es {
		e.mu.Lock()
		if !e.creating && !e.deleting {
			out = append(out, e.view())
		}
		e.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Workspace) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Get returns one workspace.
func (m *Mgr) Get(ctx context.Context, name string) (*Workspace, error) {
	e, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ws := e.view()
	return &ws, nil
}

// World returns the workspace's world, opening it if it is stopped.
func (m *Mgr) World(ctx context.Context, name string) (*execworld.World, func(), error) {
	e, err := m.lookup(name)
	if err != nil {
		return nil, nil, err
	}
	if w, release, err, ok := m.acquire(e); ok {
		return w, release, err
	}
	// Stopped: open its world, once.
	e.op.Lock()
	defer e.op.Unlock()
	if w, release, err, ok := m.acquire(e); ok {
		return w, release, err
	}
	e.mu.Lock()
	rec := e.rec
	e.mu.Unlock()
	w, err := m.opts.Opener.Open(ctx, e.files(), rec.Template, rec.Allow)
	if err != nil {
		return nil, nil, fmt.Errorf("workspace %s: opening its world: %w", name, err)
	}
	e.mu.Lock()
	e.world = w
	e.rec.Paused = false
	e.mu.Unlock()
	m.log.Info("workspace: opened its world", "workspace", name, "world", w.ID)
	w, release, err, _ := m.acquire(e)
	return w, release, err
}

// acquire takes a reference on e's open world; ok is false if it has
// none (stopped).
func (m *Mgr) acquire(e *entry) (w *execworld.World, release func(), err error, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.deleting:
		return nil, nil, notFound(e.rec.Name), true
	case e.world == nil || e.closing:
		return nil, nil, nil, false
	case e.rec.Paused:
		return nil, nil, fmt.Errorf("%w: workspace %q is paused; resume it first", ErrConflict, e.rec.Name), true
	}
	if e.refs == 0 {
		e.released = make(chan struct{})
	}
	e.refs++
	e.rec.LastUsed = time.Now()
	var once sync.Once
	return e.world, func() { once.Do(func() { m.release(e) }) }, nil, true
}

func (m *Mgr) release(e *entry) {
	e.mu.Lock()
	e.refs--
	e.rec.LastUsed = time.Now()
	if e.refs == 0 {
		close(e.released)
		e.released = nil
	}
	e.mu.Unlock()
	m.poke()
}

// Extend moves the expiry to now+by, or leaves it if it is later.
func (m *Mgr) Extend(ctx context.Context, name string, by time.Duration) (*Workspace, error) {
	if by <= 0 || by > m.opts.MaxTTL {
		return nil, invalid("extend by %s: give a positive duration of at most the server's maximum TTL, %s", by, m.opts.MaxTTL)
	}
	e, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	e.op.Lock()
	defer e.op.Unlock()
	e.mu.Lock()
	rec := e.rec
	if exp := time.Now().Add(by); exp.After(rec.ExpiresAt) {
		rec.ExpiresAt = exp
	}
	e.mu.Unlock()
	if err := writeRecord(e.dir, &rec); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.rec.ExpiresAt = rec.ExpiresAt
	ws := e.view()
	e.mu.Unlock()
	m.poke()
	return &ws, nil
}

// Pause freezes the workspace's world.
func (m *Mgr) Pause(ctx context.Context, name string) (*Workspace, error) {
	return m.setPaused(name, true)
}

// Resume thaws the workspace's world.
func (m *Mgr) Resume(ctx context.Context, name string) (*Workspace, error) {
	return m.setPaused(name, false)
}

func (m *Mgr) setPaused(name string, pause bool) (*Workspace, error) {
	e, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	e.op.Lock()
	defer e.op.Unlock()
	e.mu.Lock()
	w := e.world
	if w != nil && pause {
		// New users are refused from here on, before the freeze.
		e.rec.Paused = true
	}
	e.mu.Unlock()
	if w == nil {
		if !pause {
			// A stopped workspace runs again on its next use.
			e.mu.Lock()
			defer e.mu.Unlock()
			ws := e.view()
			return &ws, nil
		}
		return nil, fmt.Errorf("%w: workspace %q is stopped (no world runs); nothing to pause", ErrConflict, name)
	}
	if pause {
		err = w.Pause()
	} else {
		err = w.Resume()
	}
	// The state is the world's, whatever happened.
	e.mu.Lock()
	e.rec.Paused = w.Paused()
	e.rec.LastUsed = time.Now()
	rec := e.rec
	ws := e.view()
	e.mu.Unlock()
	m.poke()
	if errors.Is(err, execworld.ErrCannotPause) {
		return nil, fmt.Errorf("%w: workspace %q: %w", ErrConflict, name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", name, err)
	}
	if err := writeRecord(e.dir, &rec); err != nil {
		return nil, err
	}
	return &ws, nil
}

// Delete closes the world (after its users release it, or
// ReleaseTimeout) and removes the workspace's files and state.
func (m *Mgr) Delete(ctx context.Context, name string) error {
	e, err := m.lookup(name)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.deleting {
		e.mu.Unlock()
		return notFound(name)
	}
	e.deleting = true
	e.mu.Unlock()
	return m.remove(ctx, e)
}

// OnRemove makes fn hear of every workspace removed from now on (by
// Delete or at its TTL), before the removal waits for the world's users:
// those that hold it until told (the API's MCP sessions) let it go.
func (m *Mgr) OnRemove(fn func(name string)) {
	m.mu.Lock()
	m.onRemove = fn
	m.mu.Unlock()
}

// remove deletes e, already marked deleting.
func (m *Mgr) remove(ctx context.Context, e *entry) error {
	m.mu.Lock()
	hook := m.onRemove
	m.mu.Unlock()
	if hook != nil {
		e.mu.Lock()
		name := e.rec.Name
		e.mu.Unlock()
		hook(name)
	}
	m.waitReleased(ctx, e)
	e.op.Lock()
	defer e.op.Unlock()
	e.mu.Lock()
	w, name := e.world, e.rec.Name
	e.world = nil
	e.mu.Unlock()
	var errs []error
	if w != nil {
		if err := w.Close(); err != nil && !errors.Is(err, execworld.ErrClosed) {
			errs = append(errs, fmt.Errorf("workspace %s: closing its world: %w", name, err))
		}
	}
	// The record goes first: a crash after it leaves a directory New
	// removes, never a workspace without its files.
	if err := os.Remove(filepath.Join(e.dir, recordFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("workspace %s: removing its state: %w", name, err))
	}
	if err := os.RemoveAll(e.dir); err != nil {
		errs = append(errs, fmt.Errorf("workspace %s: removing its files: %w", name, err))
	}
	m.mu.Lock()
	if m.ws[name] == e {
		delete(m.ws, name)
	}
	m.mu.Unlock()
	m.poke()
	return errors.Join(errs...)
}

// waitReleased waits until e's world has no users, ReleaseTimeout or ctx.
func (m *Mgr) waitReleased(ctx context.Context, e *entry) {
	e.mu.Lock()
	ch := e.released
	e.mu.Unlock()
	if ch == nil {
		return
	}
	t := time.NewTimer(m.opts.ReleaseTimeout)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
		m.log.Warn("workspace: closing a world still in use", "workspace", e.rec.Name, "waited", m.opts.ReleaseTimeout)
	case <-ctx.Done():
	}
}

// Authorize tells whether token is the named workspace's.
func (m *Mgr) Authorize(name, token string) bool {
	e, err := m.lookup(name)
	if err != nil || token == "" {
		return false
	}
	e.mu.Lock()
	want, err := hex.DecodeString(e.rec.TokenHash)
	e.mu.Unlock()
	if err != nil {
		return false
	}
	got, _ := hex.DecodeString(hashToken(token))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// Close stops the reaper and the pools, closes the pool's worlds
// (removing their directories) and every workspace's world; the
// workspaces' files and state stay for the next Manager.
func (m *Mgr) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		es := make([]*entry, 0, len(m.ws))
		for _, e := range m.ws {
			es = append(es, e)
		}
		m.mu.Unlock()
		close(m.stop)
		m.cancel()
		m.bg.Wait()
		var errs []error
		for _, p := range m.pools {
			errs = append(errs, p.close())
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, e := range es {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.closeWorld(e, true); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		m.lock.Close()
		m.closeErr = errors.Join(errs...)
	})
	return m.closeErr
}

// closeWorld closes e's world, keeping its files: the workspace is then
// stopped. If wait, it waits for the world's users first (Close);
// else it closes only an idle world nobody uses (the reaper).
func (m *Mgr) closeWorld(e *entry, wait bool) error {
	if wait {
		m.waitReleased(context.Background(), e)
	}
	e.op.Lock()
	defer e.op.Unlock()
	e.mu.Lock()
	w := e.world
	if w == nil || e.creating || e.deleting || (!wait && (e.refs > 0 || e.rec.Paused || time.Since(e.rec.LastUsed) < time.Duration(e.rec.IdleTimeout))) {
		e.mu.Unlock()
		return nil
	}
	// It is stopped once its world is gone; until then, new users wait
	// on e.op and then open a new one.
	e.closing = true
	rec := e.rec
	e.mu.Unlock()
	var errs []error
	if err := w.Close(); err != nil && !errors.Is(err, execworld.ErrClosed) {
		errs = append(errs, fmt.Errorf("workspace %s: closing its world: %w", rec.Name, err))
	}
	e.mu.Lock()
	e.world, e.closing = nil, false
	e.mu.Unlock()
	if err := writeRecord(e.dir, &rec); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

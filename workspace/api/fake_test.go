package api_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/workspace"
)

// fakeManager is a workspace.Manager over the fake backend (local
// processes: these tests are of the API, not of confinement).
type fakeManager struct {
	t       testing.TB
	root    string
	backend *execworldtest.Backend

	mu       sync.Mutex
	ws       map[string]*fakeWS
	borrowed atomic.Int32 // worlds lent and not given back
	n        int
}

type fakeWS struct {
	ws    workspace.Workspace
	token string
	world *execworld.World
}

func newFakeManager(t testing.TB) *fakeManager {
	m := &fakeManager{t: t, root: t.TempDir(), backend: execworldtest.New(), ws: map[string]*fakeWS{}}
	t.Cleanup(func() { m.Close() })
	return m
}

func (m *fakeManager) Create(ctx context.Context, req *workspace.CreateRequest) (*workspace.Created, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := req.Name
	if name == "" {
		m.n++
		name = fmt.Sprintf("ws-%010x", m.n)
	}
	if req.Driver != "" && req.Driver != "fake" {
		return nil, fmt.Errorf("%w: driver %q: this server has the fake driver only", workspace.ErrInvalid, req.Driver)
	}
	if _, ok := m.ws[name]; ok {
		return nil, fmt.Errorf("%w: %q: pick another name or delete it first", workspace.ErrExists, name)
	}
	if len(m.ws) >= 8 {
		return nil, fmt.Errorf("%w: 8 workspaces", workspace.ErrLimit)
	}
	dir := filepath.Join(m.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	w, err := execworld.Open(ctx, m.backend, &execworld.Options{Spec: sandbox.DefaultSpec(dir)})
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	f := &fakeWS{token: "tok-" + name, world: w, ws: workspace.Workspace{
		Name: name, Driver: "fake", Limits: req.Limits, Allow: req.Allow, Labels: req.Labels,
		State: workspace.StateRunning, World: w.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
		IdleTimeout: workspace.Duration(time.Minute), LastUsed: now,
	}}
	m.ws[name] = f
	return &workspace.Created{Workspace: f.ws, Token: f.token}, nil
}

func (m *fakeManager) get(name string) (*fakeWS, error) {
	f, ok := m.ws[name]
	if !ok {
		return nil, fmt.Errorf("%w %q: list them with GET /v1/workspaces", workspace.ErrNotFound, name)
	}
	return f, nil
}

func (m *fakeManager) List(context.Context) ([]workspace.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []workspace.Workspace
	for _, f := range m.ws {
		out = append(out, f.ws)
	}
	return out, nil
}

func (m *fakeManager) Get(_ context.Context, name string) (*workspace.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := m.get(name)
	if err != nil {
		return nil, err
	}
	ws := f.ws
	return &ws, nil
}

func (m *fakeManager) World(_ context.Context, name string) (*execworld.World, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := m.get(name)
	if err != nil {
		return nil, nil, err
	}
	if f.ws.State == workspace.StatePaused {
		return nil, nil, fmt.Errorf("%w: workspace %q is paused; resume it first", workspace.ErrConflict, name)
	}
	m.borrowed.Add(1)
	var once sync.Once
	return f.world, func() { once.Do(func() { m.borrowed.Add(-1) }) }, nil
}

func (m *fakeManager) Extend(_ context.Context, name string, by time.Duration) (*workspace.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := m.get(name)
	if err != nil {
		return nil, err
	}
	if by > 24*time.Hour {
		return nil, fmt.Errorf("%w: by %v is over the 24h maximum", workspace.ErrInvalid, by)
	}
	if t := time.Now().Add(by); t.After(f.ws.ExpiresAt) {
		f.ws.ExpiresAt = t.UTC()
	}
	ws := f.ws
	return &ws, nil
}

func (m *fakeManager) setState(name, state string) (*workspace.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := m.get(name)
	if err != nil {
		return nil, err
	}
	f.ws.State = state
	ws := f.ws
	return &ws, nil
}

func (m *fakeManager) Pause(_ context.Context, name string) (*workspace.Workspace, error) {
	return m.setState(name, workspace.StatePaused)
}

func (m *fakeManager) Resume(_ context.Context, name string) (*workspace.Workspace, error) {
	return m.setState(name, workspace.StateRunning)
}

func (m *fakeManager) Delete(_ context.Context, name string) error {
	m.mu.Lock()
	f, err := m.get(name)
	if err == nil {
		delete(m.ws, name)
	}
	m.mu.Unlock()
	if err != nil {
		return err
	}
	if n := m.borrowed.Load(); n != 0 {
		m.t.Errorf("workspace %s deleted while %d borrowers hold its world", name, n)
	}
	f.world.Close()
	return os.RemoveAll(filepath.Join(m.root, name))
}

func (m *fakeManager) Authorize(name, token string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.ws[name]
	return ok && token == f.token
}

func (m *fakeManager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.ws {
		f.world.Close()
	}
	return nil
}

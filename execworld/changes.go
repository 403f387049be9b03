package execworld

import (
	"errors"
	"fmt"

	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/workspace/changes"
)

// ErrNotOverlay is returned by Changes for a world whose workspace is
// not an overlay (sandbox.WorkspaceOverlay).
var ErrNotOverlay = errors.New("execworld: the world's workspace is not an overlay; open it with workspace mode overlay")

// Changes ends an overlay world and returns what it changed in its
// workspace. It kills every process first (nothing writes any more),
// then computes the change set from the driver's upper layer, once:
// every call returns the first call's result. The set can be applied
// to the real workspace or kept (changes.Set.Apply, Keep) until Close,
// which removes the upper layer. Start fails after Changes.
func (w *World) Changes() (*changes.Set, error) {
	w.changesOnce.Do(func() { w.changes, w.changesErr = w.computeChanges() })
	return w.changes, w.changesErr
}

func (w *World) computeChanges() (*changes.Set, error) {
	ov, ok := w.inst.(sandbox.Overlay)
	if !ok || w.spec.Mode() != sandbox.WorkspaceOverlay {
		return nil, ErrNotOverlay
	}
	w.mu.Lock()
	w.closed = true
	running := make([]*Running, 0, len(w.running))
	for r := range w.running {
		running = append(running, r)
	}
	w.mu.Unlock()
	for _, r := range running {
		r.kill()
	}
	upper, err := ov.FreezeUpper()
	if err != nil {
		return nil, fmt.Errorf("execworld: stopping world %s for its change set: %w", w.ID, err)
	}
	set, err := changes.Compute(upper, w.spec.Workspace)
	if err != nil {
		return nil, fmt.Errorf("execworld: the change set of world %s: %w", w.ID, err)
	}
	return set, nil
}

// fsReadOnly says why World.FS refuses writes in mode ("" in rw). FS
// works on the real workspace: in ro mode the world may not write it,
// and in overlay mode writes belong in the upper layer, not around it.
func fsReadOnly(mode sandbox.WorkspaceMode) string {
	switch mode {
	case sandbox.WorkspaceRO:
		return "the world's workspace is read-only (workspace mode ro)"
	case sandbox.WorkspaceOverlay:
		return "the world's workspace is an overlay (workspace mode overlay): writes are made by its commands and reach the workspace only when its change set is applied"
	}
	return ""
}

package workspace

import (
	"context"
	"time"
)

// reaper deletes expired workspaces and closes idle worlds. It sleeps
// on one timer set to the next deadline of all workspaces; whatever
// moves a deadline (a create, a use ending, an extend, a resume) pokes
// it to recompute.
func (m *Mgr) reaper() {
	defer m.bg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		next := m.sweep()
		d := 24 * time.Hour // no deadline: sleep until poked
		if !next.IsZero() {
			d = max(time.Until(next), time.Millisecond)
		}
		t.Reset(d)
		select {
		case <-t.C:
		case <-m.wake:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		case <-m.stop:
			return
		}
	}
}

// sweep starts what is due and returns the next deadline (zero: none).
func (m *Mgr) sweep() time.Time {
	now := time.Now()
	m.mu.Lock()
	es := make([]*entry, 0, len(m.ws))
	for _, e := range m.ws {
		es = append(es, e)
	}
	m.mu.Unlock()
	var next time.Time
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, e := range es {
		e.mu.Lock()
		if e.creating || e.deleting {
			e.mu.Unlock()
			continue
		}
		if !now.Before(e.rec.ExpiresAt) {
			e.deleting = true
			name := e.rec.Name
			e.mu.Unlock()
			m.bg.Add(1)
			go func() {
				defer m.bg.Done()
				m.log.Info("workspace: deleting an expired workspace", "workspace", name)
				if err := m.remove(context.Background(), e); err != nil {
					m.log.Error("workspace: deleting an expired workspace", "workspace", name, "err", err)
				}
			}()
			continue
		}
		soonest(e.rec.ExpiresAt)
		if e.world != nil && e.refs == 0 && !e.rec.Paused {
			idleAt := e.rec.LastUsed.Add(time.Duration(e.rec.IdleTimeout))
			if !now.Before(idleAt) {
				name := e.rec.Name
				m.bg.Add(1)
				go func() {
					defer m.bg.Done()
					m.log.Info("workspace: closing an idle world; the workspace is stopped", "workspace", name)
					if err := m.closeWorld(e, false); err != nil {
						m.log.Error("workspace: closing an idle world", "workspace", name, "err", err)
					}
				}()
			} else {
				soonest(idleAt)
			}
		}
		e.mu.Unlock()
	}
	return next
}

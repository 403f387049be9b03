package lsp

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
)

// State is where a server stands, as dsh doctor and dsh serve's status
// report it.
type State int

const (
	// StateConfigured: configured, its command not (yet) found in the world.
	StateConfigured State = iota
	// StateResolvable: its command resolves in the world; not started.
	StateResolvable
	// StateStarting: being started and initialized.
	StateStarting
	// StateIndexing: running, its readiness gate still closed.
	StateIndexing
	// StateReady: running and ready.
	StateReady
	// StateFailed: its last start or query failed (Why says how).
	StateFailed
)

var stateNames = []string{"configured", "resolvable", "starting", "indexing", "ready", "failed"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// MarshalText makes a State a JSON string.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ServerStatus is the state of one server.
type ServerStatus struct {
	ID         string   `json:"id"`
	Command    string   `json:"command"`
	Extensions []string `json:"extensions"`
	// Workspace is the canonical workspace of a started server; "" for
	// a server not started in any.
	Workspace string `json:"workspace,omitempty"`
	State     State  `json:"state"`
	// Resolved is where the command resolves in the world, when checked.
	Resolved string `json:"resolved,omitempty"`
	// Why explains configured (not found) and failed.
	Why string `json:"why,omitempty"`
}

// Status reports every configured server: each server started for a
// workspace by its slot, and each server never started by whether its
// command resolves in the world (checked with the world's sh; a world
// without one reports configured).
func (c *Client) Status(ctx context.Context) []ServerStatus {
	c.mu.Lock()
	var slots []*slot
	started := map[string]bool{}
	for _, s := range c.slots {
		slots = append(slots, s)
		started[s.cfg.ID] = true
	}
	c.mu.Unlock()
	var out []ServerStatus
	for _, s := range slots {
		st := ServerStatus{ID: s.cfg.ID, Command: s.cfg.Command, Extensions: sortedKeys(s.cfg.Extensions), Workspace: s.ws.host}
		s.mu.Lock()
		st.State, st.Why = s.state, ""
		if s.state == StateFailed {
			st.Why = s.why
		}
		if s.inst != nil && !s.inst.failed() {
			st.State = StateReady
			if s.inst.indexing() {
				st.State = StateIndexing
			}
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	for _, cfg := range c.servers {
		if started[cfg.ID] {
			continue
		}
		st := ServerStatus{ID: cfg.ID, Command: cfg.Command, Extensions: sortedKeys(cfg.Extensions)}
		st.Resolved, st.Why = Resolve(ctx, c.w, cfg.Command)
		if st.Resolved != "" {
			st.State = StateResolvable
		}
		out = append(out, st)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Resolve reports where command resolves in the world (its absolute
// path), or why it does not. It runs the world's sh (command -v), so it
// answers with the world's own PATH and view.
func Resolve(ctx context.Context, w *execworld.World, command string) (path, why string) {
	res, err := w.Exec.Run(ctx, &execworld.Cmd{
		Argv:           []string{"sh", "-c", `command -v -- "$1"`, "sh", command},
		MaxOutputBytes: 4096,
	})
	if err != nil {
		return "", fmt.Sprintf("cannot check whether %s is in the world: %v", command, err)
	}
	out := strings.TrimSpace(res.Stdout.String())
	if res.ExitCode() != 0 || !strings.HasPrefix(out, "/") {
		return "", command + " is not found in the world; install it where the world sees it or set lsp.servers[].command"
	}
	return out, ""
}

package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/mcp/gateway"
	"github.com/dsh-dev/dsh/workspace"
)

// mcpEntry is the MCP endpoint of one workspace: a gateway whose
// sessions borrow the workspace's world.
type mcpEntry struct {
	created time.Time // of the workspace: a new one of the same name gets a new gateway
	g       *gateway.Gateway
	h       http.Handler
}

// serveMCP serves /v1/workspaces/{name}/mcp: the dsh serve tools, every
// session on the workspace's world (Manager.World), which the gateway
// gives back, never closes.
func (a *API) serveMCP(w http.ResponseWriter, r *http.Request) {
	if a.opts.MCP == nil {
		writeError(w, errorf(http.StatusNotFound, codeNotFound, "this server has no MCP endpoint for workspaces"))
		return
	}
	name := r.PathValue("name")
	ws, err := a.m.Get(r.Context(), name)
	if err != nil {
		a.DropMCP(name)
		a.fail(w, r, err)
		return
	}
	e, err := a.mcpFor(ws)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	e.h.ServeHTTP(w, r)
}

func (a *API) mcpFor(ws *workspace.Workspace) (*mcpEntry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.mcp[ws.Name]; ok {
		if e.created.Equal(ws.CreatedAt) {
			return e, nil
		}
		// A workspace of the same name was deleted meanwhile.
		delete(a.mcp, ws.Name)
		go e.g.Close()
	}
	opts, err := a.opts.MCP(ws)
	if err != nil {
		return nil, err
	}
	name := ws.Name
	opts.Open = nil
	opts.Borrow = func(ctx context.Context) (*execworld.World, func(), error) {
		return a.m.World(ctx, name)
	}
	idle := a.opts.MCPIdle
	if t := time.Duration(ws.IdleTimeout); t > 0 && t < idle {
		idle = t
	}
	opts.IdleTimeout = idle
	g, err := gateway.New(opts)
	if err != nil {
		return nil, err
	}
	e := &mcpEntry{created: ws.CreatedAt, g: g, h: gateway.HTTPHandler(g, idle, a.opts.MCPMaxBody)}
	a.mcp[name] = e
	// Workspaces reaped at their TTL leave endpoints behind: drop them.
	go a.sweepMCP()
	return e, nil
}

// sweepMCP drops the endpoints of workspaces that are gone.
func (a *API) sweepMCP() {
	a.mu.Lock()
	entries := make(map[string]*mcpEntry, len(a.mcp))
	for n, e := range a.mcp {
		entries[n] = e
	}
	a.mu.Unlock()
	for n, e := range entries {
		if _, err := a.m.Get(context.Background(), n); !errors.Is(err, workspace.ErrNotFound) {
			continue
		}
		a.mu.Lock()
		// Only the endpoint seen gone: a workspace made since under the
		// name keeps its new one.
		same := a.mcp[n] == e
		if same {
			delete(a.mcp, n)
		}
		a.mu.Unlock()
		if same {
			e.g.Close()
		}
	}
}

// DropMCP ends the MCP sessions of a workspace, giving its world back
// (the Manager's OnRemove hook, so that a removal need not wait for them).
func (a *API) DropMCP(name string) {
	a.mu.Lock()
	e, ok := a.mcp[name]
	delete(a.mcp, name)
	a.mu.Unlock()
	if ok {
		e.g.Close()
	}
}

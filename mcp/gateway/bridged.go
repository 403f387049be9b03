package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/mcp/bridge"
)

// bridged serves the bridge's tools: the gateway's tool list follows
// the bridge's, so the go-sdk server sends notifications/tools/list_changed
// to connected clients whenever a server's tool set changes.
type bridged struct {
	g *Gateway
	b *bridge.Bridge

	mu        sync.Mutex            // guards the maps; held for a whole sync
	served    map[string]servedTool // tools, by public name
	prompts   map[string]servedTool // by public name
	resources map[string]servedTool // by URI

	kick     chan struct{} // a change to sync, capacity 1
	done     chan struct{}
	stopOnce sync.Once
	unsub    func()
	loopDone chan struct{}
}

// servedTool is a bridged tool as served: its server and the JSON of
// its definition, to tell a changed tool from an unchanged one.
type servedTool struct {
	server string
	def    string
}

// startBridged serves the bridge's tools now (the first tools/list has
// them) and follows their changes.
func (g *Gateway) startBridged() {
	br := &bridged{
		g: g, b: g.opts.Bridge, served: map[string]servedTool{},
		prompts: map[string]servedTool{}, resources: map[string]servedTool{},
		kick: make(chan struct{}, 1), done: make(chan struct{}), loopDone: make(chan struct{}),
	}
	g.bridged = br
	// Subscribed before the first sync: no change falls between them.
	// Every kind of event: a state change can take a catalog away too,
	// and an unchanged item is not served again.
	br.unsub = br.b.Subscribe(func(bridge.Event) {
		select {
		case br.kick <- struct{}{}:
		default: // a sync is due anyway; it reads the newest lists
		}
	})
	br.sync()
	go br.loop()
}

func (br *bridged) loop() {
	defer close(br.loopDone)
	for {
		select {
		case <-br.done:
			return
		case <-br.kick:
			br.sync()
		}
	}
}

func (br *bridged) stop() {
	br.stopOnce.Do(func() {
		br.unsub()
		close(br.done)
		<-br.loopDone
	})
}

// sync makes the served tools, prompts and resources the bridge's:
// removed ones go, new and changed ones are (re)added, unchanged ones
// stay (no list_changed for them).
func (br *bridged) sync() {
	br.mu.Lock()
	defer br.mu.Unlock()
	br.syncTools()
	br.syncPrompts()
	br.syncResources()
}

func (br *bridged) syncTools() {
	next := map[string]servedTool{}
	defs := map[string]*mcp.Tool{}
	for _, t := range br.b.Tools() {
		def, err := servedDef(&t)
		if err != nil {
			br.g.log.Warn("a bridged tool is not served", "tool", t.Public, "server", t.Server, "err", err)
			continue
		}
		b, _ := json.Marshal(def)
		next[t.Public] = servedTool{server: t.Server, def: string(b)}
		defs[t.Public] = def
	}
	gone := goneKeys(br.served, next)
	if len(gone) > 0 {
		br.g.server.RemoveTools(gone...)
	}
	for name, st := range next {
		if old, ok := br.served[name]; ok && old == st {
			continue
		}
		if err := br.add(defs[name]); err != nil {
			br.g.log.Warn("a bridged tool is not served", "tool", name, "server", st.server, "err", err)
			delete(next, name)
			if _, was := br.served[name]; was {
				br.g.server.RemoveTools(name)
			}
		}
	}
	br.served = next
}

// add registers def; the go-sdk refuses some definitions by panicking.
func (br *bridged) add(def *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	br.g.server.AddTool(def, br.handler(def.Name))
	return nil
}

// servedDef is t's definition under its public name, its input schema
// an object schema as MCP requires.
func servedDef(t *bridge.Tool) (*mcp.Tool, error) {
	def := *t.Def
	def.Name = t.Public
	var schema map[string]any
	if def.InputSchema != nil {
		b, err := json.Marshal(def.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("its input schema: %w", err)
		}
		if err := json.Unmarshal(b, &schema); err != nil {
			return nil, fmt.Errorf("its input schema is not a JSON object: %w", err)
		}
	}
	if schema == nil {
		schema = map[string]any{}
	}
	switch typ, ok := schema["type"]; {
	case !ok:
		schema["type"] = "object"
	case typ != "object":
		return nil, fmt.Errorf("its input schema has type %v; MCP tools take an object", typ)
	}
	def.InputSchema = schema
	return &def, nil
}

// handler forwards a call of public to the bridge: progress passed on,
// cancellation (the context) passed through, the result as the server
// sent it.
func (br *bridged) handler(public string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		g := br.g
		g.inflight.Add(1)
		defer g.inflight.Done()
		begin := time.Now()
		rec := &auditRecord{Tool: public, Call: "c-" + randomHex(6), Arguments: redact(req.Params.Arguments), BytesIn: len(req.Params.Arguments)}
		defer func() {
			if r := recover(); r != nil {
				g.log.Error("bridged tool handler panicked", "tool", public, "panic", r)
				res = errorResult(fmt.Errorf("%s: internal error in dsh serve (%v); the call did not complete: report it with the audit line of call %s", public, r, rec.Call))
				rec.Status, rec.Error = "tool_error", fmt.Sprint(r)
				g.record(rec)
			}
		}()
		s, err := g.sessionOf(req.Session)
		if err != nil {
			rec.Session, rec.Status, rec.Error = sessionID(req.Session), "tool_error", err.Error()
			g.record(rec)
			return errorResult(toolError(public, err)), nil
		}
		rec.Session = s.id
		var opts *bridge.CallOptions
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			opts = &bridge.CallOptions{Progress: func(p *mcp.ProgressNotificationParams) {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p.Progress, Total: p.Total, Message: p.Message})
			}}
		}
		out, err := br.b.Call(ctx, public, req.Params.Arguments, opts)
		rec.World = br.worldOf(public)
		rec.DurationMs = float64(time.Since(begin).Microseconds()) / 1000
		var te *bridge.ToolError
		switch {
		case errors.As(err, &te):
			rec.Status, rec.Error = "tool_error", te.Result.Text
			res = &mcp.CallToolResult{Content: te.Result.Content, StructuredContent: te.Result.StructuredContent, IsError: true}
		case err != nil:
			rec.Status, rec.Error = "tool_error", err.Error()
			if ctx.Err() != nil {
				rec.Status = "canceled"
			}
			res = errorResult(toolError(public, err))
		default:
			rec.Status = "ok"
			res = &mcp.CallToolResult{Content: out.Content, StructuredContent: out.StructuredContent}
		}
		if b, merr := json.Marshal(res); merr == nil {
			rec.BytesOut = len(b)
		}
		g.record(rec)
		return res, nil
	}
}

// worldOf is the ID of the world the server of public runs in, or "".
func (br *bridged) worldOf(public string) string {
	br.mu.Lock()
	server := br.served[public].server
	br.mu.Unlock()
	for _, st := range br.b.Status() {
		if st.Name == server {
			return st.World
		}
	}
	return ""
}

func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}, IsError: true}
}

// syncPrompts serves the bridge's prompts under their public names.
func (br *bridged) syncPrompts() {
	next := map[string]servedTool{}
	defs := map[string]*mcp.Prompt{}
	for _, p := range br.b.Prompts() {
		def := *p.Def
		def.Name = p.Public
		b, _ := json.Marshal(&def)
		next[p.Public] = servedTool{server: p.Server, def: string(b)}
		defs[p.Public] = &def
	}
	gone := goneKeys(br.prompts, next)
	if len(gone) > 0 {
		br.g.server.RemovePrompts(gone...)
	}
	for name, st := range next {
		if old, ok := br.prompts[name]; ok && old == st {
			continue
		}
		public := name
		br.g.server.AddPrompt(defs[name], func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return br.b.GetPrompt(ctx, public, req.Params.Arguments)
		})
	}
	br.prompts = next
}

// syncResources serves the bridge's resources under their own URIs; a
// URI two servers offer is served from the first (in configuration
// order), and none may shadow the gateway's own (dsh://status).
func (br *bridged) syncResources() {
	next := map[string]servedTool{}
	defs := map[string]*mcp.Resource{}
	for _, r := range br.b.Resources() {
		uri := r.Def.URI
		if uri == StatusURI {
			br.g.log.Warn("a bridged resource is not served: its URI is dsh serve's own", "uri", uri, "server", r.Server)
			continue
		}
		if other, dup := next[uri]; dup {
			if other.server != r.Server {
				br.g.log.Warn("a bridged resource is not served: another server offers the same URI", "uri", uri, "server", r.Server, "served_from", other.server)
			}
			continue
		}
		b, _ := json.Marshal(r.Def)
		next[uri] = servedTool{server: r.Server, def: string(b)}
		defs[uri] = r.Def
	}
	gone := goneKeys(br.resources, next)
	if len(gone) > 0 {
		br.g.server.RemoveResources(gone...)
	}
	for uri, st := range next {
		if old, ok := br.resources[uri]; ok && old == st {
			continue
		}
		server := st.server
		if err := br.addResource(defs[uri], func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return br.b.ReadResource(ctx, server, req.Params.URI)
		}); err != nil {
			br.g.log.Warn("a bridged resource is not served", "uri", uri, "server", server, "err", err)
			delete(next, uri)
			if _, was := br.resources[uri]; was {
				br.g.server.RemoveResources(uri)
			}
		}
	}
	br.resources = next
}

// addResource registers r; the go-sdk refuses an invalid URI by
// panicking.
func (br *bridged) addResource(r *mcp.Resource, h mcp.ResourceHandler) (err error) {
	defer func() {
		if rec := recover(); rec != nil {
			err = fmt.Errorf("%v", rec)
		}
	}()
	br.g.server.AddResource(r, h)
	return nil
}

// goneKeys are the keys of served that next no longer has: what a sync
// removes from the server.
func goneKeys[V, W any](served map[string]V, next map[string]W) []string {
	var gone []string
	for k := range served {
		if _, ok := next[k]; !ok {
			gone = append(gone, k)
		}
	}
	return gone
}

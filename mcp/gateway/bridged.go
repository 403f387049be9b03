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

	mu     sync.Mutex            // guards served; held for a whole sync
	served map[string]servedTool // by public name

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
		kick: make(chan struct{}, 1), done: make(chan struct{}), loopDone: make(chan struct{}),
	}
	g.bridged = br
	// Subscribed before the first sync: no change falls between them.
	br.unsub = br.b.Subscribe(func(ev bridge.Event) {
		if ev.Kind == bridge.ToolsChanged {
			select {
			case br.kick <- struct{}{}:
			default: // a sync is due anyway; it reads the newest tools
			}
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

// sync makes the served tools the bridge's: removed ones go, new and
// changed ones are (re)added.
func (br *bridged) sync() {
	br.mu.Lock()
	defer br.mu.Unlock()
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
	var gone []string
	for name := range br.served {
		if _, ok := next[name]; !ok {
			gone = append(gone, name)
		}
	}
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

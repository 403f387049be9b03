package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
)

// call is one tool call as a handler sees it.
type call struct {
	g    *Gateway
	s    *session
	id   string
	req  *mcp.CallToolRequest
	exit *int // set by exec for the audit line
	wid  string
}

// world returns the session's world, opening it on first use.
func (c *call) world(ctx context.Context) (*execworld.World, error) {
	w, err := c.s.getWorld(ctx)
	if err == nil {
		c.wid = w.ID
	}
	return w, err
}

// argError is a bad argument: the tool error names it and the fix.
type argError struct{ arg, msg string }

func (e *argError) Error() string { return fmt.Sprintf("argument %q: %s", e.arg, e.msg) }

func badArg(arg, format string, a ...any) error {
	return &argError{arg: arg, msg: fmt.Sprintf(format, a...)}
}

// handler is a native tool's typed handler.
type handler[In, Out any] func(ctx context.Context, c *call, in In) (text string, out Out, err error)

// addTool registers a native tool: schemas from In and Out, a concise
// text beside the structured content, errors as tool errors (isError)
// and one audit line per call.
func addTool[In, Out any](g *Gateway, t *mcp.Tool, h handler[In, Out]) {
	mcp.AddTool(g.server, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		g.inflight.Add(1)
		defer g.inflight.Done()
		begin := time.Now()
		rec := &auditRecord{Tool: t.Name, Call: "c-" + randomHex(6), Arguments: redact(req.Params.Arguments), BytesIn: len(req.Params.Arguments)}
		var zero Out
		s, err := g.sessionOf(req.Session)
		if err != nil {
			rec.Session, rec.Status, rec.Error = sessionID(req.Session), "tool_error", err.Error()
			g.record(rec)
			return nil, zero, err
		}
		rec.Session = s.id
		s.begin()
		defer s.end()
		c := &call{g: g, s: s, id: rec.Call, req: req}
		text, out, err := safely(ctx, c, in, h)
		rec.World, rec.ExitCode = c.wid, c.exit
		rec.DurationMs = float64(time.Since(begin).Microseconds()) / 1000
		if err != nil {
			rec.Status, rec.Error = "tool_error", err.Error()
			if ctx.Err() != nil {
				rec.Status = "canceled"
			}
			rec.BytesOut = len(err.Error())
			g.record(rec)
			return nil, zero, toolError(t.Name, err)
		}
		rec.Status = "ok"
		if b, merr := json.Marshal(out); merr == nil {
			rec.BytesOut = len(b) + len(text)
		}
		g.record(rec)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
	})
}

// toolError is the error a tool reports: prefixed with the tool name,
// and a cancelled call said as such.
func toolError(tool string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: cancelled: %w", tool, err)
	}
	return fmt.Errorf("%s: %w", tool, err)
}

func ptr[T any](v T) *T { return &v }

// record writes the audit line of a call and tells Observe.
func (g *Gateway) record(rec *auditRecord) {
	g.audit.write(rec)
	if g.opts.Observe != nil {
		g.opts.Observe(rec.Tool, rec.Status, time.Duration(rec.DurationMs*float64(time.Millisecond)))
	}
}

// safely runs h, turning a panic into a tool error: one bad call never
// takes the server, and every other session's world, down with it.
func safely[In, Out any](ctx context.Context, c *call, in In, h handler[In, Out]) (text string, out Out, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.g.log.Error("tool handler panicked", "tool", c.req.Params.Name, "panic", r)
			err = fmt.Errorf("internal error in dsh serve (%v); the call did not complete: report it with the audit line of call %s", r, c.id)
		}
	}()
	return h(ctx, c, in)
}

package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result is a tool's result: the canonical MCP content and structured
// content as the server sent them, and Text, the model-visible text
// projection.
type Result struct {
	Content           []mcp.Content `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
	IsError           bool          `json:"isError"`
	// Text joins the text blocks with "\n"; other blocks become short
	// notes (a resource link its name and URI).
	Text string `json:"-"`
}

// CallOptions are the optional parts of a call.
type CallOptions struct {
	// Progress, if set, receives the server's progress notifications
	// for this call.
	Progress func(*mcp.ProgressNotificationParams)
}

var progressTokens atomic.Int64

// Call calls the tool with public name public. args is the JSON of the
// arguments; anything but an object is sent as {}. It waits (within the
// server's call timeout and ctx) for a server that is connecting or
// reconnecting. Cancelling ctx cancels the call on the server
// (notifications/cancelled). A result with isError is returned together
// with a *ToolError.
func (b *Bridge) Call(ctx context.Context, public string, args json.RawMessage, opts *CallOptions) (*Result, error) {
	if b.isClosed() {
		return nil, ErrClosed
	}
	t := b.lookup(public)
	if t == nil {
		// A lazy server that may own the name starts now.
		for _, s := range b.servers {
			if s.cfg.Lazy && s.isIdle() && MayOwn(s.cfg.Name, public) {
				s.ensureStarted()
				wctx, cancel := context.WithTimeout(ctx, s.cfg.startupTimeout()+time.Second)
				err := s.waitFirst(wctx)
				cancel()
				if err != nil {
					return nil, err
				}
			}
		}
		t = b.lookup(public)
	}
	if t == nil {
		return nil, fmt.Errorf("%w: %s (dsh mcp list shows the tools)", ErrUnknownTool, public)
	}
	s := t.srv
	if s.cfg.Lazy && s.isIdle() {
		s.ensureStarted() // its tools were listed from the catalog cache
	}
	timeout := s.cfg.callTimeout()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("tool %s: no result within the call timeout of %v", public, timeout))
	defer cancel()
	sess, err := s.waitReady(ctx)
	if err != nil {
		return nil, err
	}
	params := &mcp.CallToolParams{Name: t.Def.Name, Arguments: objectArgs(args)}
	if opts != nil && opts.Progress != nil {
		tok := fmt.Sprintf("dsh-%d", progressTokens.Add(1))
		params.SetProgressToken(tok)
		s.mu.Lock()
		s.progress[tok] = opts.Progress
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.progress, tok)
			s.mu.Unlock()
		}()
	}
	res, err := sess.CallTool(ctx, params)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		case errors.Is(err, io.EOF), errors.Is(err, mcp.ErrConnectionClosed):
			s.markLost(sess, "connection lost during a call: "+err.Error())
			return nil, fmt.Errorf("%w: tool %s: the connection to MCP server %s was lost during the call (%v)%s; the server is being restarted, so try again",
				ErrUnavailable, public, s.cfg.Name, err, s.diagnose())
		}
		return nil, fmt.Errorf("tool %s (MCP server %s): %w", public, s.cfg.Name, err)
	}
	out := mapResult(public, res)
	if out.IsError {
		return out, &ToolError{Tool: public, Result: out}
	}
	if t.out != nil && out.StructuredContent != nil {
		if err := t.out.Validate(jsonValue(out.StructuredContent)); err != nil {
			return out, fmt.Errorf("tool %s (MCP server %s): its structuredContent does not match the outputSchema it declares: %w", public, s.cfg.Name, err)
		}
	}
	return out, nil
}

func (b *Bridge) lookup(public string) *Tool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tools[public]
}

func (s *server) isIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == Idle
}

func (s *server) onProgress(epoch uint64, p *mcp.ProgressNotificationParams) {
	if p == nil {
		return
	}
	s.mu.Lock()
	f := s.progress[p.ProgressToken]
	cur := s.epoch
	s.mu.Unlock()
	if f != nil && cur == epoch {
		f(p)
	}
}

// objectArgs is args if it is a JSON object, else {}.
func objectArgs(args json.RawMessage) map[string]any {
	var m map[string]any
	if len(args) == 0 || json.Unmarshal(args, &m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}

// mapResult keeps the canonical result and projects it to text.
func mapResult(public string, r *mcp.CallToolResult) *Result {
	out := &Result{Content: r.Content, StructuredContent: r.StructuredContent, IsError: r.IsError}
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	out.Text = projectText(public, r.Content)
	return out
}

// projectText is the model-visible text of content.
func projectText(public string, content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("Resource link: %s (%s)", c.Name, c.URI))
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *mcp.EmbeddedResource:
			uri := ""
			if c.Resource != nil {
				uri = c.Resource.URI
			}
			parts = append(parts, fmt.Sprintf("[embedded resource: %s, not shown]", uri))
		default:
			parts = append(parts, fmt.Sprintf("[unsupported content block %T]", c))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("(%s returned no model-visible content)", public)
	}
	return strings.Join(parts, "\n")
}

// jsonValue is v as plain JSON values (maps, slices, float64), which the
// validator expects.
func jsonValue(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(data, &out) != nil {
		return v
	}
	return out
}

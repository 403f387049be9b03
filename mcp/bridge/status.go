package bridge

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerStatus is what dsh mcp list reports of a server.
type ServerStatus struct {
	Name      string     `json:"name"`
	State     string     `json:"state"`
	Reason    string     `json:"reason,omitempty"`
	Tools     []ToolName `json:"tools"`
	Resources int        `json:"resources"`
	Prompts   int        `json:"prompts"`
	// World is the ID of the server's world, which the egress proxy's
	// audit lines carry ("" before it opens, or for an upstream
	// without one).
	World string `json:"world,omitempty"`
	// Cached reports that the tools listed are the cached catalog, not
	// yet confirmed by the server.
	Cached bool `json:"cached,omitempty"`
	// Drift is how the live tools differed from the cached catalog
	// offered before the server was up.
	Drift []string `json:"drift,omitempty"`
}

// worldIDer is an Upstream that runs its server in a world.
type worldIDer interface{ WorldID() string }

// ToolName is a tool's public and raw name.
type ToolName struct {
	Public string `json:"public"`
	Raw    string `json:"raw"`
}

// Status returns every server's status, in configuration order.
func (b *Bridge) Status() []ServerStatus {
	byServer := map[string][]ToolName{}
	for _, t := range b.Tools() {
		byServer[t.Server] = append(byServer[t.Server], ToolName{Public: t.Public, Raw: t.Def.Name})
	}
	out := make([]ServerStatus, 0, len(b.servers))
	for _, s := range b.servers {
		s.mu.Lock()
		st := ServerStatus{
			Name: s.cfg.Name, State: s.state.String(), Reason: s.reason,
			Tools: byServer[s.cfg.Name], Resources: len(s.catalog.resources), Prompts: len(s.catalog.prompts),
			Cached: s.cached != nil, Drift: slices.Clone(s.drift),
		}
		s.mu.Unlock()
		if w, ok := s.cfg.Upstream.(worldIDer); ok {
			st.World = w.WorldID()
		}
		if st.Tools == nil {
			st.Tools = []ToolName{}
		}
		out = append(out, st)
	}
	return out
}

// Resource is a resource of an upstream server.
type Resource struct {
	Server string
	Def    *mcp.Resource
}

// Prompt is a prompt of an upstream server, under a public name built
// like a tool's (PublicName).
type Prompt struct {
	Public string
	Server string
	Def    *mcp.Prompt
}

// Resources returns every server's resources, by server then URI.
func (b *Bridge) Resources() []Resource {
	var out []Resource
	for _, s := range b.servers {
		s.mu.Lock()
		for _, r := range s.catalog.resources {
			out = append(out, Resource{Server: s.cfg.Name, Def: r})
		}
		s.mu.Unlock()
	}
	slices.SortStableFunc(out, func(a, b Resource) int {
		if c := strings.Compare(a.Server, b.Server); c != 0 {
			return c
		}
		return strings.Compare(a.Def.URI, b.Def.URI)
	})
	return out
}

// Prompts returns every server's prompts, sorted by public name.
func (b *Bridge) Prompts() []Prompt {
	var out []Prompt
	for _, s := range b.servers {
		s.mu.Lock()
		for _, p := range s.catalog.prompts {
			out = append(out, Prompt{Public: PublicName(s.cfg.Name, p.Name), Server: s.cfg.Name, Def: p})
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Prompt) int { return strings.Compare(a.Public, b.Public) })
	return out
}

// ReadResource reads uri from server.
func (b *Bridge) ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	s, sess, ctx, cancel, err := b.ready(ctx, server)
	if err != nil {
		return nil, err
	}
	defer cancel()
	r, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("reading %s from MCP server %s: %w%s", uri, server, err, s.diagnose())
	}
	return r, nil
}

// GetPrompt gets the prompt with public name public.
func (b *Bridge) GetPrompt(ctx context.Context, public string, args map[string]string) (*mcp.GetPromptResult, error) {
	for _, p := range b.Prompts() {
		if p.Public != public {
			continue
		}
		s, sess, ctx, cancel, err := b.ready(ctx, p.Server)
		if err != nil {
			return nil, err
		}
		defer cancel()
		r, err := sess.GetPrompt(ctx, &mcp.GetPromptParams{Name: p.Def.Name, Arguments: args})
		if err != nil {
			return nil, fmt.Errorf("prompt %s (MCP server %s): %w%s", public, p.Server, err, s.diagnose())
		}
		return r, nil
	}
	return nil, fmt.Errorf("bridge: no such prompt: %s", public)
}

func (b *Bridge) ready(ctx context.Context, name string) (*server, *mcp.ClientSession, context.Context, context.CancelFunc, error) {
	s := b.server(name)
	if s == nil {
		return nil, nil, nil, nil, fmt.Errorf("bridge: no MCP server %q", name)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.callTimeout())
	sess, err := s.waitReady(ctx)
	if err != nil {
		cancel()
		return nil, nil, nil, nil, err
	}
	return s, sess, ctx, cancel, nil
}

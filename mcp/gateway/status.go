package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/lsp"
)

// Confinement is what the worlds of a gateway really have, as the
// configuration decided it (the caller fills it in from the plan it
// opens worlds with).
type Confinement struct {
	Driver    string   `json:"driver" jsonschema:"the sandbox driver: native, docker, or host (no confinement)"`
	Confined  bool     `json:"confined" jsonschema:"false only for the host driver (--unconfined)"`
	Workspace string   `json:"workspace"`
	Memory    string   `json:"memory,omitempty" jsonschema:"memory limit, empty when limits are off"`
	Pids      int64    `json:"pids,omitempty"`
	CPUs      float64  `json:"cpus,omitempty"`
	LimitsOff bool     `json:"limits_off"`
	Egress    string   `json:"egress_default" jsonschema:"the world's egress default: deny or public"`
	Allow     []string `json:"egress_allow,omitempty"`
	WebPolicy string   `json:"web_default" jsonschema:"web_fetch's policy default"`
	Masks     []string `json:"masks" jsonschema:"host paths hidden inside the world"`
	Unix      bool     `json:"unix_sockets"`
}

// Capability is one surface's state.
type Capability struct {
	Name       string `json:"name"`
	Exists     bool   `json:"exists" jsonschema:"built into this dsh"`
	Configured bool   `json:"configured" jsonschema:"set up by the configuration"`
	Visible    bool   `json:"visible" jsonschema:"offered as tools to this client"`
	Ready      bool   `json:"ready" jsonschema:"usable now, without further set-up"`
	Reason     string `json:"reason,omitempty" jsonschema:"why not, when it is not ready"`
}

// StatusOutput is the status tool's result (and the dsh://status
// resource).
type StatusOutput struct {
	Session      string       `json:"session"`
	World        string       `json:"world,omitempty" jsonschema:"the ID of this session's world, empty until a tool opens it"`
	Capabilities []Capability `json:"capabilities"`
	Confinement  Confinement  `json:"confinement"`
	// LSP are the language servers of this session's world, once it is
	// open.
	LSP []LSPServerState `json:"lsp,omitempty" jsonschema:"the language servers of this session's world (listed once the world is open)"`
	// MCPServers are the bridged MCP servers, shared by every session.
	MCPServers []MCPServerState `json:"mcp_servers,omitempty" jsonschema:"the bridged MCP servers, each confined in its own world"`
}

// LSPServerState is one language server of a session's world.
type LSPServerState struct {
	ID         string   `json:"id"`
	Command    string   `json:"command"`
	Extensions []string `json:"extensions"`
	State      string   `json:"state" jsonschema:"configured (its command not found in the world), resolvable, starting, indexing, ready or failed"`
	Resolved   string   `json:"resolved,omitempty" jsonschema:"where the command resolves in the world"`
	Why        string   `json:"why,omitempty"`
}

// MCPServerState is one bridged MCP server.
type MCPServerState struct {
	Name   string `json:"name"`
	State  string `json:"state" jsonschema:"idle (lazy, not started), connecting, ready, reconnecting or failed"`
	Reason string `json:"reason,omitempty"`
	Tools  int    `json:"tools"`
	World  string `json:"world,omitempty" jsonschema:"the ID of the server's own world"`
	Cached bool   `json:"cached,omitempty" jsonschema:"its tools are listed from the catalog cache, not yet confirmed by the server"`
	// Drift is how the live tools differed from the cached catalog
	// offered before the server was up.
	Drift []string `json:"drift,omitempty" jsonschema:"how the server's live tools differed from its cached catalog (clients were sent list_changed)"`
}

// StatusURI is the status resource.
const StatusURI = "dsh://status"

func (g *Gateway) addStatus() {
	addTool(g, &mcp.Tool{
		Name:        "status",
		Title:       "What this dsh offers and how it confines",
		Description: "Report, per capability, whether it exists, is configured, visible and ready (with the reason), and the confinement of this session's world: driver, limits, egress default, masks.",
		Annotations: &mcp.ToolAnnotations{Title: "status", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, func(ctx context.Context, c *call, _ struct{}) (string, StatusOutput, error) {
		st := g.status(ctx, c.s)
		c.wid = st.World
		return statusText(&st), st, nil
	})
	g.server.AddResource(&mcp.Resource{
		URI: StatusURI, Name: "status", MIMEType: "application/json",
		Description: "The status tool's report as JSON.",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		s, err := g.sessionOf(req.Session)
		if err != nil {
			return nil, err
		}
		st := g.status(ctx, s)
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: StatusURI, MIMEType: "application/json", Text: string(b)}}}, nil
	})
}

func (g *Gateway) status(ctx context.Context, s *session) StatusOutput {
	st := StatusOutput{Session: s.id, World: s.worldID(), Confinement: g.opts.Confinement}
	if st.Confinement.Masks == nil {
		st.Confinement.Masks = []string{}
	}
	world := Capability{Exists: true, Configured: true, Visible: true, Ready: true}
	if st.World == "" {
		world.Reason = "the world opens on the first call that needs it"
	}
	if !g.opts.Confinement.Confined {
		world.Reason = strings.TrimPrefix(world.Reason+"; ", "; ") + "UNCONFINED: the host driver runs everything directly on this host"
	}
	for _, name := range []string{"exec", "files"} {
		c := world
		c.Name = name
		st.Capabilities = append(st.Capabilities, c)
	}
	fetch := world
	fetch.Name = "web_fetch"
	fetch.Reason = fmt.Sprintf("web policy default %q; private, loopback and metadata addresses refused", g.opts.Confinement.WebPolicy)
	st.Capabilities = append(st.Capabilities, fetch)

	search := Capability{Name: "web_search", Exists: true, Visible: true}
	switch {
	case g.opts.Search == nil:
		search.Reason = "no search provider configured (web.search)"
	default:
		if _, err := g.opts.Search.Select(g.opts.SearchProvider); err != nil {
			search.Configured = g.opts.SearchProvider != ""
			search.Reason = err.Error()
		} else {
			search.Configured, search.Ready = true, true
		}
	}
	st.Capabilities = append(st.Capabilities, search)
	st.Capabilities = append(st.Capabilities, g.lspStatus(ctx, s, &st), g.bridgeStatus(&st))
	st.Capabilities = append(st.Capabilities, g.skillsStatus())
	return st
}

// lspStatus is the lsp capability; with the session's world open, each
// language server's state in it (st.LSP). It opens no world.
func (g *Gateway) lspStatus(ctx context.Context, s *session, st *StatusOutput) Capability {
	c := Capability{Name: "lsp", Exists: true}
	if g.opts.LSP == nil {
		c.Reason = "no language servers are configured for dsh serve"
		return c
	}
	c.Configured, c.Visible = true, true
	w, _ := s.currentLSP()
	if w == nil {
		c.Reason = "the language servers start in this session's world on the first lsp call"
		return c
	}
	lc, err := s.lspClient(w)
	if err != nil {
		c.Reason = err.Error()
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var usable []string
	for _, ss := range lc.Status(ctx) {
		st.LSP = append(st.LSP, LSPServerState{ID: ss.ID, Command: ss.Command, Extensions: ss.Extensions, State: ss.State.String(), Resolved: ss.Resolved, Why: ss.Why})
		if ss.State != lsp.StateConfigured && ss.State != lsp.StateFailed {
			usable = append(usable, ss.ID)
		}
	}
	if len(usable) > 0 {
		c.Ready = true
		c.Reason = "usable in this world: " + strings.Join(usable, ", ")
	} else {
		c.Reason = "no configured language server's command resolves in this world (see lsp)"
	}
	return c
}

// bridgeStatus is the mcp_bridge capability and its servers' states
// (st.MCPServers).
func (g *Gateway) bridgeStatus(st *StatusOutput) Capability {
	c := Capability{Name: "mcp_bridge", Exists: true}
	if g.opts.Bridge == nil {
		c.Reason = "no MCP servers are configured (mcp.servers)"
		return c
	}
	c.Configured, c.Visible = true, true
	var notReady []string
	for _, s := range g.opts.Bridge.Status() {
		st.MCPServers = append(st.MCPServers, MCPServerState{Name: s.Name, State: s.State, Reason: s.Reason, Tools: len(s.Tools), World: s.World, Cached: s.Cached, Drift: s.Drift})
		if s.State != "ready" && s.State != "idle" {
			notReady = append(notReady, s.Name+" "+s.State)
		}
	}
	c.Ready = len(notReady) == 0
	if !c.Ready {
		c.Reason = "not ready: " + strings.Join(notReady, ", ") + " (see mcp_servers)"
	}
	return c
}

func statusText(st *StatusOutput) string {
	var b strings.Builder
	c := st.Confinement
	conf := "confined"
	if !c.Confined {
		conf = "UNCONFINED"
	}
	fmt.Fprintf(&b, "session %s, world %s: %s driver (%s), workspace %s\n", st.Session, orNone(st.World), c.Driver, conf, c.Workspace)
	if c.LimitsOff {
		b.WriteString("limits: off\n")
	} else {
		fmt.Fprintf(&b, "limits: memory %s, pids %d, cpus %g\n", c.Memory, c.Pids, c.CPUs)
	}
	fmt.Fprintf(&b, "egress default %s (%d allow entries); web_fetch default %s; unix sockets %v; %d masks\n", c.Egress, len(c.Allow), c.WebPolicy, c.Unix, len(c.Masks))
	for _, cp := range st.Capabilities {
		state := "ready"
		if !cp.Ready {
			state = "not ready"
		}
		fmt.Fprintf(&b, "%s: exists=%v configured=%v visible=%v %s", cp.Name, cp.Exists, cp.Configured, cp.Visible, state)
		if cp.Reason != "" {
			fmt.Fprintf(&b, " (%s)", cp.Reason)
		}
		b.WriteString("\n")
	}
	for _, l := range st.LSP {
		fmt.Fprintf(&b, "lsp server %s (%s): %s", l.ID, strings.Join(l.Extensions, " "), l.State)
		if l.Why != "" {
			fmt.Fprintf(&b, " (%s)", l.Why)
		}
		b.WriteString("\n")
	}
	for _, m := range st.MCPServers {
		fmt.Fprintf(&b, "mcp server %s: %s, %d tool(s)", m.Name, m.State, m.Tools)
		if m.Reason != "" {
			fmt.Fprintf(&b, " (%s)", m.Reason)
		}
		if len(m.Drift) > 0 {
			fmt.Fprintf(&b, "; live tools differ from the cached catalog: %s", strings.Join(m.Drift, "; "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(not open yet)"
	}
	return s
}

func (g *Gateway) addTools() {
	g.addExec()
	g.addFiles()
	g.addWeb()
	g.addLSP()
	g.addStatus()
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/mcp/bridge"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// newMCPCmd is dsh mcp: the MCP bridge's servers from the command line.
func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Run third-party MCP servers, each confined in its own world",
		Long: `dsh mcp runs the MCP servers of mcp.servers in the configuration, each in
a world of its own (its own filesystem view, an egress allowlist that denies
everything by default, limits), and offers their tools as
mcp__<server>__<tool>.`,
		Example: `  dsh mcp list
  dsh mcp call mcp__fs__read_file '{"path":"README.md"}'
  dsh mcp import ~/.config/Claude/claude_desktop_config.json >> dsh.yaml`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	cmd.AddCommand(newMCPListCmd(), newMCPCallCmd(), newMCPImportCmd())
	return cmd
}

func newMCPListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "Start the configured MCP servers and list their state and tools",
		Long: `dsh mcp list starts every eager server of mcp.servers in its world, waits
for each (at most its startup_timeout), and lists its state (connecting,
ready, reconnecting, failed, idle for a lazy one), why it is not ready, and
its tools by public and raw name. The servers are stopped when it ends.

Each server's last good catalog is cached ($XDG_CACHE_HOME/dsh/mcp), so a
lazy server is listed without being started; how a live catalog differs
from the cached one is reported as drift.`,
		Example: `  dsh mcp list
  dsh mcp list --json
  dsh --config ci.yaml mcp list`,
		Args: cobra.NoArgs,
		RunE: runMCPList,
	}
	cmd.Flags().Bool("json", false, `print {"servers":[{"name","state","reason","tools":[{"public","raw"}],"resources","prompts","world","cached","drift"}]}`)
	return cmd
}

func newMCPCallCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "call PUBLIC_NAME [JSON_ARGS] [--json]",
		Short: "Call one tool of a configured MCP server",
		Long: `dsh mcp call starts the server the public name belongs to, in its world,
and calls the tool with JSON_ARGS (a JSON object; default {}). It prints the
tool's text; with --json, {"content":[...],"structuredContent":...,"isError":...}.
It exits 1 when the tool reports an error (isError) or the call fails, with
{"error":{"code","message"}} under --json.`,
		Example: `  dsh mcp call mcp__everything__echo '{"message":"hi"}'
  dsh mcp call --json mcp__fs__list_directory '{"path":"/"}'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: runMCPCall,
	}
	cmd.Flags().Bool("json", false, `print the canonical result {"content","structuredContent","isError"}`)
	return cmd
}

// mcpServers builds the bridge's servers from the configuration. start
// says which are started with the bridge (nil: those not lazy); the
// others are made lazy. The returned cleanup removes what the worlds
// needed (empty workspaces) once the bridge is closed.
func mcpServers(cfg *config.Config, start func(name string) bool, warn, audit io.Writer) ([]bridge.Server, func(), error) {
	return mcpServersIn(cfg, "", start, warn, audit)
}

// mcpServersIn is mcpServers for a workspace of its own (dsh serve's
// --workspace) rather than the current directory: the directory a
// server with workspace ro or rw sees, and the one masked from a server
// with none.
func mcpServersIn(cfg *config.Config, workspace string, start func(name string) bool, warn, audit io.Writer) ([]bridge.Server, func(), error) {
	var out []bridge.Server
	var dirs []string
	cleanup := func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	for i, s := range cfg.MCP.Servers {
		key := fmt.Sprintf("mcp.servers[%d]", i)
		srv := bridge.Server{
			Name:            s.Name,
			ToolAllow:       s.Tools.Allow,
			ToolDeny:        s.Tools.Deny,
			ProtocolVersion: s.ProtocolVersion,
			Required:        s.Required,
			Lazy:            s.Start == "lazy",
			CallTimeout:     duration(s.CallTimeout),
			StartupTimeout:  duration(s.StartupTimeout),
			CacheKey:        mcpCacheKey(cfg, s),
			Reconnect: bridge.Reconnect{
				Disabled:     s.Reconnect.Enabled != nil && !*s.Reconnect.Enabled,
				InitialDelay: duration(s.Reconnect.InitialDelay),
				MaxDelay:     duration(s.Reconnect.MaxDelay),
				MaxAttempts:  s.Reconnect.MaxAttempts,
			},
		}
		if start != nil {
			srv.Lazy = !start(s.Name)
		}
		env := make([]string, 0, len(s.Env))
		for j, kv := range s.Env {
			k, v, _ := strings.Cut(kv, "=")
			val, err := config.ExpandSecret(v, os.LookupEnv, nil)
			if err != nil {
				cleanup()
				return nil, nil, fmt.Errorf("%s.env[%d] (%s): %w", key, j, k, err)
			}
			env = append(env, k+"="+val)
		}
		plan, dir, err := mcpWorldPlanIn(cfg, s, workspace)
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("%s (%s): the server's world: %w", key, s.Name, err)
		}
		if dir != "" {
			dirs = append(dirs, dir)
		}
		plan.audit = audit
		open := func(ctx context.Context) (*execworld.World, error) { return openWorld(ctx, plan, warn) }
		if s.Transport == "http" {
			headers := map[string]string{}
			for _, h := range sortedKeys(s.Headers) {
				v, err := config.ExpandSecret(s.Headers[h], os.LookupEnv, nil)
				if err != nil {
					cleanup()
					return nil, nil, fmt.Errorf("%s.headers.%s (%s): %w", key, h, s.Name, err)
				}
				headers[h] = v
			}
			// Requests go through the world's Net, under world.allow.
			srv.Upstream = &bridge.HTTP{URL: s.URL, Headers: headers, World: open}
		} else {
			srv.Upstream = &bridge.Command{World: open, Argv: append([]string{s.Command}, s.Args...), Env: env, Dir: s.Cwd}
		}
		out = append(out, srv)
	}
	return out, cleanup, nil
}

// mcpWorldPlan is the world of server s: the sandbox section with the
// server's world overrides, an egress policy that denies all but the
// server's allow entries, and its workspace: the current directory
// (rw), or an empty directory of its own (none), returned for removal.
func mcpWorldPlan(cfg *config.Config, s config.MCPServer) (*worldPlan, string, error) {
	return mcpWorldPlanIn(cfg, s, "")
}

// mcpWorldPlanIn is mcpWorldPlan with workspace ("" the current
// directory) as the workspace of ro and rw and the one masked for none.
func mcpWorldPlanIn(cfg *config.Config, s config.MCPServer, workspace string) (*worldPlan, string, error) {
	c := *cfg
	w := s.World
	if w.Driver != "" {
		c.Sandbox.Driver = w.Driver
	}
	if w.Image != "" {
		c.Sandbox.Image = w.Image
	}
	if w.Limits.Memory != "" {
		c.Sandbox.Limits.Memory = w.Limits.Memory
	}
	if w.Limits.Pids != 0 {
		c.Sandbox.Limits.Pids = w.Limits.Pids
	}
	if w.Limits.CPUs != 0 {
		c.Sandbox.Limits.CPUs = w.Limits.CPUs
	}
	c.Network = netpolicy.Config{Default: "deny", Allow: w.Allow, Deny: cfg.Network.Deny, Ports: []int{}}
	var o worldOverrides
	var dir string
	switch w.Workspace {
	case "rw", "ro":
		// The current directory, as dsh run's default workspace (or the
		// one given), read-write or read-only.
		c.Sandbox.Workspace.Mode = w.Workspace
		o.Workspace = workspace
	case "", "none":
		d, err := os.MkdirTemp("/var/tmp", "dsh-mcp-"+s.Name+"-")
		if err != nil {
			return nil, "", fmt.Errorf("making the empty workspace of workspace: none: %w", err)
		}
		// Enterable by a world's unprivileged user (docker runs as the
		// image's); it holds nothing.
		if err := os.Chmod(d, 0o755); err != nil {
			os.RemoveAll(d)
			return nil, "", err
		}
		dir, o.Workspace = d, d
		// A native world shows the host root read-only: the workspace
		// the server must not see is masked there, by the kernel's mount.
		wd := workspace
		if wd == "" {
			wd, _ = os.Getwd()
		}
		if wd != "" {
			if _, err := sandbox.CheckWorkspace(wd, false); err == nil {
				c.Sandbox.Masks = append(slices.Clone(c.Sandbox.Masks), wd)
			}
		}
	default:
		return nil, "", fmt.Errorf("world.workspace %q is not a workspace mode; use none, ro or rw", w.Workspace)
	}
	plan, err := planWorld(&c, o)
	if err != nil {
		if dir != "" {
			os.RemoveAll(dir)
		}
		return nil, "", err
	}
	return plan, dir, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// mcpCacheKey is what a server's cached catalog belongs to: its entry
// (env and header values as ***, so the key holds no secret) but for
// its start, timeouts and reconnect budget, and the world it inherits.
func mcpCacheKey(cfg *config.Config, s config.MCPServer) string {
	// How and when it starts does not change what it offers.
	s.Start, s.Required, s.CallTimeout, s.StartupTimeout, s.Reconnect = "", false, "", "", config.MCPReconnect{}
	data, _ := json.Marshal(struct {
		Server config.MCPServer
		Driver string
		Image  string
	}{s, cfg.Sandbox.Driver, cfg.Sandbox.Image})
	return string(data)
}

// mcpCacheDir is where catalogs are cached: $XDG_CACHE_HOME/dsh/mcp
// (~/.cache/dsh/mcp); "" (no cache) when there is no such directory.
func mcpCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "dsh", "mcp")
}

// duration is a validated duration key, 0 when empty.
func duration(s string) time.Duration {
	d, _ := time.ParseDuration(s)
	return d
}

// openBridge starts the configured servers (start as mcpServers takes
// it) and returns the bridge and its closer.
func openBridge(cmd *cobra.Command, start func(string) bool) (*bridge.Bridge, func(), error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, nil, err
	}
	if len(cfg.MCP.Servers) == 0 {
		return nil, nil, &configError{errors.New("no MCP servers are configured; add entries to mcp.servers in dsh.yaml (dsh mcp import FILE converts an agent's mcpServers)")}
	}
	servers, cleanup, err := mcpServers(cfg, start, cmd.ErrOrStderr(), nil)
	if err != nil {
		return nil, nil, &configError{err}
	}
	b, err := bridge.New(servers, &bridge.Options{Version: version, CacheDir: mcpCacheDir()})
	if err != nil {
		cleanup()
		return nil, nil, &configError{err}
	}
	closeAll := func() {
		b.Close()
		cleanup()
	}
	if err := b.Start(cmd.Context()); err != nil {
		closeAll()
		return nil, nil, exitf(statusFailed, "%v", err)
	}
	return b, closeAll, nil
}

func runMCPList(cmd *cobra.Command, _ []string) error {
	b, closeAll, err := openBridge(cmd, nil)
	if err != nil {
		return err
	}
	status := b.Status()
	closeAll()
	if wantsJSON(cmd) {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"servers": status})
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	for _, s := range status {
		fmt.Fprintf(tw, "%s\t%s\t%d tool(s), %d resource(s), %d prompt(s)", s.Name, s.State, len(s.Tools), s.Resources, s.Prompts)
		if s.World != "" {
			fmt.Fprintf(tw, ", world %s", s.World)
		}
		if s.Cached {
			fmt.Fprint(tw, " (listed from the catalog cache)")
		}
		fmt.Fprintln(tw)
		if s.Reason != "" {
			fmt.Fprintf(tw, "  reason:\t%s\n", s.Reason)
		}
		for _, d := range s.Drift {
			fmt.Fprintf(tw, "  drift:\t%s\n", d)
		}
		for _, t := range s.Tools {
			fmt.Fprintf(tw, "  %s\t(%s)\n", t.Public, t.Raw)
		}
	}
	return tw.Flush()
}

func runMCPCall(cmd *cobra.Command, args []string) error {
	public := args[0]
	var raw json.RawMessage
	if len(args) == 2 {
		if !json.Valid([]byte(args[1])) {
			return &usageError{fmt.Errorf("JSON_ARGS %q is not JSON; pass an object such as '{\"path\":\"README.md\"}'", args[1])}
		}
		raw = json.RawMessage(args[1])
	}
	b, closeAll, err := openBridge(cmd, func(name string) bool { return bridge.MayOwn(name, public) })
	if err != nil {
		return err
	}
	defer closeAll()
	res, err := b.Call(cmd.Context(), public, raw, nil)
	var te *bridge.ToolError
	switch {
	case errors.As(err, &te):
		if wantsJSON(cmd) {
			if err := writeJSON(cmd.OutOrStdout(), res); err != nil {
				return err
			}
			return exitCode(statusFailed)
		}
		fmt.Fprintln(cmd.OutOrStdout(), res.Text)
		return exitf(statusFailed, "dsh: %v", err)
	case err != nil:
		ee := &exitError{code: statusFailed, msg: err.Error(), cause: err, jsonCode: mcpErrorCode(err)}
		return ee
	}
	if wantsJSON(cmd) {
		return writeJSON(cmd.OutOrStdout(), res)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), res.Text)
	return err
}

// mcpErrorCode is the --json code of a failed call.
func mcpErrorCode(err error) string {
	switch {
	case errors.Is(err, bridge.ErrUnknownTool):
		return "MCP_UNKNOWN_TOOL"
	case errors.Is(err, bridge.ErrUnavailable):
		return "MCP_UNAVAILABLE"
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(err.Error(), "call timeout"):
		return "MCP_TIMEOUT"
	}
	return "MCP_FAILED"
}

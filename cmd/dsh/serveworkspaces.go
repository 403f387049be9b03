package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/mcp/gateway"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/workspace"
	"github.com/dsh-dev/dsh/workspace/api"
)

// addWorkspaceServeFlags registers the flags of the workspaces dsh serve
// --http hosts (docs/WORKSPACES.md).
func addWorkspaceServeFlags(cmd *cobra.Command) {
	d := config.DefaultWorkspaces()
	f := cmd.Flags()
	f.String("workspace-root", "", "with --http: the state root of the hosted workspaces (default /var/lib/dsh/workspaces for root, else $XDG_STATE_HOME/dsh/workspaces)")
	f.Int("max-workspaces", d.Max, "with --http: the most workspaces at once (429 beyond)")
	f.String("workspace-ttl", d.TTL, "with --http: the TTL of a workspace whose create gives none")
	f.String("workspace-max-ttl", d.MaxTTL, "with --http: the most TTL a create or an extend may ask for")
	f.Int64("max-file", d.MaxFile, "with --http: the largest file read or written through the workspace API, in bytes (413 beyond)")
	f.StringArray("pool", nil, "with --http: a warm pool, TEMPLATE:N, N worlds of DRIVER[,image=IMG][,memory=SIZE][,pids=N][,cpus=X] kept open (repeatable; replaces workspaces.pool)")
	f.Bool("no-workspaces", false, "with --http: host no workspaces (no /v1 routes)")
	addWorkspaceOwnerFlag(cmd)
	bindConfigFlag(cmd, "workspace-root", "workspaces.root")
	bindConfigFlag(cmd, "max-workspaces", "workspaces.max")
	bindConfigFlag(cmd, "workspace-ttl", "workspaces.ttl")
	bindConfigFlag(cmd, "workspace-max-ttl", "workspaces.max_ttl")
	bindConfigFlag(cmd, "max-file", "workspaces.max_file")
}

// workspaceFlags are the flags of addWorkspaceServeFlags.
var workspaceFlags = []string{"workspace-root", "max-workspaces", "workspace-ttl", "workspace-max-ttl", "max-file", "pool", "no-workspaces", "workspace-owner"}

// checkWorkspaceFlags refuses a workspace flag without --http: stdio
// hosts no workspaces.
func checkWorkspaceFlags(cmd *cobra.Command, http string) error {
	if http != "" {
		return nil
	}
	for _, name := range workspaceFlags {
		if cmd.Flags().Changed(name) {
			return exitf(2, "--%s applies to --http only: workspaces are served over HTTP; add --http ADDR or drop it", name)
		}
	}
	return nil
}

// workspaceRoot is the state root of the workspaces: the configured one,
// else /var/lib/dsh/workspaces for root, else
// $XDG_STATE_HOME/dsh/workspaces (~/.local/state/dsh/workspaces).
func workspaceRoot(cfg *config.Config) (string, error) {
	if r := cfg.Workspaces.Root; r != "" {
		return r, nil
	}
	if os.Geteuid() == 0 {
		return "/var/lib/dsh/workspaces", nil
	}
	if s := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		return filepath.Join(s, "dsh", "workspaces"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the workspaces' state root: %w; pass --workspace-root DIR", err)
	}
	return filepath.Join(home, ".local", "state", "dsh", "workspaces"), nil
}

// workspaceOpener opens the worlds of workspaces as dsh serve opens its
// sessions' (planWorld over the loaded configuration and the world
// flags), with the workspace's directory, the template's driver, image
// and limits, and an egress policy of exactly its allow entries.
type workspaceOpener struct {
	cfg   *config.Config
	o     worldOverrides
	root  string // the state root, real path: masked in every world
	audit io.Writer
	warn  io.Writer

	mu       sync.Mutex
	backends map[string]execworld.Backend
}

var _ workspace.Opener = (*workspaceOpener)(nil)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{workspace.ErrInvalid}, args...)...)
}

// plan is the world of a workspace: the configuration with the
// template's driver, image and limits.
func (w *workspaceOpener) plan(dir string, t workspace.Template) (*worldPlan, error) {
	cfg := *w.cfg
	sb := &cfg.Sandbox
	if t.Driver != "" {
		sb.Driver = t.Driver
	}
	// A workspace is its files: its world always sees them read-write.
	sb.Workspace.Mode = "rw"
	o := w.o
	// A workspace is confined whatever the server's own sessions are:
	// --unconfined applies to /mcp, never to a hosted workspace.
	o.Unconfined = false
	o.Workspace, o.WorkspaceHome = dir, false
	o.Driver, o.Image, o.Policy = "", "", policyOverrides{}
	if t.Image != "" {
		sb.Image, o.Image = t.Image, t.Image
	}
	l := t.Limits
	if sb.Limits.Off && (l.Memory != "" || l.Pids != 0 || l.CPUs != 0) {
		return nil, invalidf("limits: this server runs worlds without limits (--no-limits or sandbox.limits.off); create without limits")
	}
	if l.Memory != "" {
		sb.Limits.Memory = l.Memory
	}
	if l.Pids != 0 {
		sb.Limits.Pids = l.Pids
	}
	if l.CPUs != 0 {
		sb.Limits.CPUs = l.CPUs
	}
	if err := cfg.Validate(driverNames()); err != nil {
		return nil, invalidf("%v", err)
	}
	p, err := planWorld(&cfg, o)
	if err != nil {
		return nil, invalidf("%v", err)
	}
	// The state root holds every workspace's files and record (token
	// hashes): a world sees only its own workspace, bound beneath the mask.
	if w.root != "" {
		p.spec.Masks = append(p.spec.Masks, w.root)
	}
	return p, nil
}

func (w *workspaceOpener) Open(ctx context.Context, dir string, t workspace.Template, allow []string) (*execworld.World, error) {
	p, err := w.plan(dir, t)
	if err != nil {
		return nil, err
	}
	if p.egress, err = w.Policy(allow); err != nil {
		return nil, err
	}
	// Net (web_fetch on the workspace's MCP endpoint) follows the same
	// allow list as the world's processes, and SetEgress moves both: a
	// workspace allowed nothing reaches nothing.
	p.net, p.audit = nil, w.audit
	b, err := w.backend(ctx, p.driver)
	if err != nil {
		return nil, err
	}
	return openWorldOn(ctx, b, p)
}

// Policy is the egress policy allowing exactly allow, on top of
// nothing: the entries are --allow's (host, *.host, host:port, IP, CIDR).
func (w *workspaceOpener) Policy(allow []string) (*netpolicy.Policy, error) {
	p, err := resolvePolicy(netpolicy.SandboxDefault(), policyOverrides{Allow: allow})
	if err != nil {
		return nil, invalidf("allow: %v", err)
	}
	return p, nil
}

// backend is the driver's backend, made once (and its leftovers reaped
// once) per dsh serve.
func (w *workspaceOpener) backend(ctx context.Context, d driver) (execworld.Backend, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if b, ok := w.backends[d.name]; ok {
		return b, nil
	}
	b, err := d.newBackend()
	if err != nil {
		return nil, err
	}
	reapOnce(ctx, b, w.warn)
	w.backends[d.name] = b
	return b, nil
}

// workspaceHost is what dsh serve --http runs for its workspaces.
type workspaceHost struct {
	root string
	m    *workspace.Mgr
	api  *api.API
}

// hostWorkspaces opens the workspace Manager over the state root (the
// workspaces of an earlier run come back, expired ones are reaped) and
// the API over it; mcp makes the gateway options of a workspace's MCP
// endpoint.
func hostWorkspaces(cmd *cobra.Command, cfg *config.Config, o worldOverrides, s serveSettings, token string, proxyAudit, stderr io.Writer, mcp func(*workspace.Workspace) (*gateway.Options, error)) (*workspaceHost, error) {
	wc := cfg.Workspaces
	if f := cmd.Flags().Lookup("pool"); f != nil && f.Changed {
		wc.Pool, _ = cmd.Flags().GetStringArray("pool")
	}
	root, err := workspaceRoot(cfg)
	if err != nil {
		return nil, exitf(2, "%v", err)
	}
	dur := func(key, v string) (time.Duration, error) {
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, exitf(2, "%s %q is not a duration: give one such as 1h or 30m", key, v)
		}
		return d, nil
	}
	ttl, err := dur("--workspace-ttl / workspaces.ttl", wc.TTL)
	if err != nil {
		return nil, err
	}
	maxTTL, err := dur("--workspace-max-ttl / workspaces.max_ttl", wc.MaxTTL)
	if err != nil {
		return nil, err
	}
	idle, err := dur("workspaces.idle_timeout", wc.IdleTimeout)
	if err != nil {
		return nil, err
	}
	var pools []workspace.PoolSpec
	for _, e := range wc.Pool {
		pe, err := config.ParsePool(e)
		if err != nil {
			return nil, exitf(2, "--pool / workspaces.pool: %v", err)
		}
		pools = append(pools, workspace.PoolSpec{Size: pe.Size, Template: workspace.Template{
			Driver: pe.Driver, Image: pe.Image, Limits: workspace.Limits{Memory: pe.Memory, Pids: pe.Pids, CPUs: pe.CPUs},
		}})
	}
	owner, err := workspaceOwner(cmd)
	if err != nil {
		return nil, err
	}
	if err := workspace.MakeRoot(root); err != nil {
		return nil, exitf(2, "%v; give another --workspace-root", err)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, exitf(2, "--workspace-root %s: %v", root, err)
	}
	opener := &workspaceOpener{cfg: cfg, o: o, root: realRoot, audit: proxyAudit, warn: stderr, backends: map[string]execworld.Backend{}}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := workspace.New(&workspace.Options{
		Root:               root,
		Opener:             opener,
		DefaultDriver:      cfg.Sandbox.Driver,
		DefaultImage:       cfg.Sandbox.Image,
		DefaultTTL:         ttl,
		MaxTTL:             maxTTL,
		DefaultIdleTimeout: idle,
		MaxWorkspaces:      wc.Max,
		Pool:               pools,
		Logger:             log,
		Owner:              owner,
	})
	if err != nil {
		return nil, fmt.Errorf("hosting workspaces under %s (--no-workspaces hosts none): %w", root, err)
	}
	a := api.New(&api.Options{
		Manager:    m,
		Token:      token,
		MaxBody:    s.maxBody,
		MaxFile:    wc.MaxFile,
		MCP:        mcp,
		MCPIdle:    s.idle,
		MCPMaxBody: s.maxBody,
		Logger:     log,
	})
	m.OnRemove(a.DropMCP)
	return &workspaceHost{root: root, m: m, api: a}, nil
}

// Handler serves /v1.
func (h *workspaceHost) Handler() http.Handler { return h.api }

// Close ends the MCP sessions, then closes the worlds (files and state
// stay: the next dsh serve brings them back).
func (h *workspaceHost) Close() error {
	h.api.Close()
	err := h.m.Close()
	if errors.Is(err, workspace.ErrClosed) {
		err = nil
	}
	return err
}

// workspaceMCP makes the gateway options of a workspace's MCP endpoint:
// dsh serve's tools (base: web, LSP, audit, metrics) with the status of
// the workspace's confinement. The MCP servers of mcp.servers and the
// skills of dsh serve's workspace are not offered: they belong to that
// workspace, not to a hosted one.
func workspaceMCP(base gateway.Options, cfg *config.Config) func(*workspace.Workspace) (*gateway.Options, error) {
	return func(ws *workspace.Workspace) (*gateway.Options, error) {
		o := base
		d, err := findDriver(ws.Driver)
		if err != nil {
			return nil, err
		}
		c := gateway.Confinement{
			Driver:    ws.Driver,
			Confined:  d.confines,
			Egress:    "deny",
			Allow:     slices.Clone(ws.Allow),
			WebPolicy: orDefault(cfg.Web.Policy.Default, "public"),
			Masks:     base.Confinement.Masks,
			Unix:      cfg.Sandbox.UnixSockets,
			LimitsOff: cfg.Sandbox.Limits.Off,
			Memory:    orDefault(ws.Limits.Memory, cfg.Sandbox.Limits.Memory),
			Pids:      int64(cmp.Or(ws.Limits.Pids, cfg.Sandbox.Limits.Pids)),
			CPUs:      cmp.Or(ws.Limits.CPUs, cfg.Sandbox.Limits.CPUs),
		}
		if c.LimitsOff {
			c.Memory, c.Pids, c.CPUs = "", 0, 0
		}
		o.Confinement = c
		return &o, nil
	}
}

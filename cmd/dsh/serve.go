package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/httpauth"
	"github.com/dsh-dev/dsh/mcp/gateway"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/web"
)

// serveTokenEnv holds the bearer token of dsh serve --http when no
// --token-file is given.
const serveTokenEnv = "DSH_SERVE_TOKEN"

// Defaults of dsh serve.
const (
	defaultServeGrace   = 10 * time.Second
	defaultServeMaxBody = 4 << 20
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve [--http ADDR [--token-file FILE]] [world flags]",
		Short: "Serve confined tools over MCP (stdio, or Streamable HTTP with --http)",
		Long: `Serve dsh's confined tools to an MCP client (Claude Code, Codex, Cursor, the
MCP Inspector, a script): exec, read_file, write_file, edit_file, list_dir,
web_fetch, web_search, lsp and status, each with typed input and output
schemas and read-only / destructive / open-world annotations.

lsp asks a language server (the presets and lsp.servers), run inside the
session's world, for a symbol's definition, references, implementations or
hover text, within 60 s.

The tools of the MCP servers of mcp.servers are offered too, as
mcp__<server>__<tool>: one bridge for all sessions, each server in a world
of its own (as dsh mcp runs it). dsh serve waits for the eager servers (each
at most its startup_timeout) before it answers, so the first tools/list has
their tools; a lazy server is listed from its cached catalog and started on
its first call. When a server's tools change, connected clients get
notifications/tools/list_changed.

Every MCP session gets its own execution world over the workspace, opened
on the first tool call that needs it and closed when the session ends,
after --idle-timeout without a call, and at shutdown. The world flags
(--driver, --workspace, --memory, --policy, --allow, ...) are dsh run's.
web_fetch follows the web policy (web.policy), not the world's egress.

Without --http, dsh serve speaks MCP on stdin and stdout (one session).
With --http ADDR it serves Streamable HTTP at http://ADDR/mcp, /healthz and
/metrics (Prometheus). A bearer token ("Authorization: Bearer TOKEN") is
read from --token-file or $DSH_SERVE_TOKEN; it is required unless ADDR is a
loopback address, and enforced whenever one is set (on /mcp and /metrics).
A request whose Origin is neither the server's own nor (on loopback) a
loopback origin nor one of --allow-origin is refused with 403.

MCP protocol revisions: 2025-11-25 with sessions (and the earlier
2025-06-18, 2025-03-26, 2024-11-05), and 2026-07-28 stateless requests, in
which each request is its own session, so each tool call gets a fresh
world.

One JSON line per tool call (call, session, world, tool, arguments with
secrets and file contents redacted, status, exit code, duration, bytes)
goes to --audit (default stderr). On SIGTERM or SIGINT calls in flight get
--grace to finish, then every world is closed and dsh serve exits 0.

With --http, dsh serve also hosts workspaces (docs/WORKSPACES.md; off with
--no-workspaces): named, persistent worlds under /v1/workspaces, each a
directory under --workspace-root with a TTL (--workspace-ttl, at most
--workspace-max-ttl), an idle timeout, pause and resume, and a token of
its own, returned by its create, that reaches only that workspace's
routes. The server's token reaches every route; create and list need it.
Each workspace is also an MCP endpoint, /v1/workspaces/NAME/mcp: these
tools, bound to its world. --pool keeps worlds open ahead for creates of a
template. GET /v1/openapi.json describes the API. The workspaces of an
earlier run come back (docker ones running, native ones stopped until
their next use); expired ones are deleted.`,
		Example: `  dsh serve
  dsh serve --workspace ~/src/project --memory 1GiB
  dsh serve --http 127.0.0.1:8765
  DSH_SERVE_TOKEN=$(cat ~/.dsh-token) dsh serve --http 0.0.0.0:8765
  dsh serve --http 127.0.0.1:8765 --token-file ~/.dsh-token --audit /var/log/dsh-tools.jsonl
  dsh serve --http 0.0.0.0:8765 --token-file ~/.dsh-token --pool native:4 --workspace-ttl 2h
  curl -H "Authorization: Bearer $(cat ~/.dsh-token)" -d '{"name":"build-1"}' http://127.0.0.1:8765/v1/workspaces
  claude mcp add dsh -- dsh serve --workspace "$PWD"`,
		Args: cobra.NoArgs,
		RunE: runServe,
	}
	addWorldFlags(cmd)
	addServeFlags(cmd)
	addWorkspaceServeFlags(cmd)
	return cmd
}

// addServeFlags registers dsh serve's own flags.
func addServeFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("http", "", "serve Streamable HTTP at http://ADDR/mcp instead of stdio (for example 127.0.0.1:8765)")
	f.String("token-file", "", "file holding the bearer token clients must send (default: $"+serveTokenEnv+"); required unless --http is a loopback address")
	f.StringArray("allow-origin", nil, "an Origin (scheme://host[:port]) allowed besides the server's own (repeatable)")
	f.String("audit", "-", "write one JSON line per tool call to FILE (appended), - for stderr, or off")
	f.Duration("idle-timeout", gateway.DefaultIdleTimeout, "close a session's world (and, over HTTP, the session) after this long without a request")
	f.Duration("grace", defaultServeGrace, "on SIGTERM, how long calls in flight get to finish before their worlds are closed")
	f.Int64("max-body", defaultServeMaxBody, "largest HTTP request body, in bytes (413 beyond)")
}

// serveSettings are dsh serve's flags, read once.
type serveSettings struct {
	http         string
	tokenFile    string
	allowOrigins []string
	audit        string
	idle, grace  time.Duration
	maxBody      int64
}

func serveFlags(cmd *cobra.Command) serveSettings {
	f := cmd.Flags()
	var s serveSettings
	s.http, _ = f.GetString("http")
	s.tokenFile, _ = f.GetString("token-file")
	s.allowOrigins, _ = f.GetStringArray("allow-origin")
	s.audit, _ = f.GetString("audit")
	s.idle, _ = f.GetDuration("idle-timeout")
	s.grace, _ = f.GetDuration("grace")
	s.maxBody, _ = f.GetInt64("max-body")
	return s
}

func runServe(cmd *cobra.Command, _ []string) error {
	s := serveFlags(cmd)
	stderr := cmd.ErrOrStderr()
	if s.idle <= 0 {
		return exitf(2, "--idle-timeout %v: give a positive duration such as 30m", s.idle)
	}
	if s.grace < 0 {
		return exitf(2, "--grace %v is negative: give a duration such as 10s", s.grace)
	}
	if s.maxBody <= 0 {
		return exitf(2, "--max-body %d: give a positive byte count", s.maxBody)
	}
	token, err := serveToken(s)
	if err != nil {
		return exitf(2, "%v", err)
	}
	if err := checkWorkspaceFlags(cmd, s.http); err != nil {
		return err
	}
	if s.http == "" && (token != "" && s.tokenFile != "") {
		return exitf(2, "--token-file applies to --http only: stdio has no one to authenticate; drop it or add --http ADDR")
	}
	loopback := false
	if s.http != "" {
		if loopback, err = isLoopbackAddr(s.http); err != nil {
			return exitf(2, "--http %s: %v; give HOST:PORT, such as 127.0.0.1:8765", s.http, err)
		}
		if token == "" && !loopback {
			return exitf(2, "--http %s is not a loopback address, so a bearer token is required: pass --token-file FILE or set $%s (or bind to 127.0.0.1)", s.http, serveTokenEnv)
		}
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	o := worldFlags(cmd)
	plan, err := planWorld(cfg, o)
	if err != nil {
		return err
	}
	plan.warnUnconfined(stderr)
	_, egress, _, err := resolvePolicySummary(cfg.Network, o.Policy)
	if err != nil {
		return fmt.Errorf("egress policy: %w", err)
	}
	webPolicy, err := resolvePolicy(cfg.Web.Policy, policyOverrides{})
	if err != nil {
		return fmt.Errorf("web policy: %w", err)
	}
	fetch, err := serveFetchOptions(cfg)
	if err != nil {
		return err
	}
	search, err := web.NewRegistry(&web.SearXNG{BaseURL: cfg.Web.Search.SearXNGURL}, &web.Brave{KeyEnv: cfg.Web.Search.BraveKeyEnv})
	if err != nil {
		return err
	}
	toolAudit, closeToolAudit, err := openServeAudit(s.audit, stderr)
	if err != nil {
		return exitf(2, "%v", err)
	}
	defer closeToolAudit()
	proxyAudit, closeProxyAudit, err := openRunAudit(cfg.Proxy.Audit, stderr)
	if err != nil {
		return err
	}
	defer closeProxyAudit()

	backend, err := plan.driver.newBackend()
	if err != nil {
		return err
	}
	// What a killed dsh serve left behind goes now, before any world opens.
	reapOnce(cmd.Context(), backend, stderr)
	plan.net, plan.audit = webPolicy, proxyAudit
	open := func(ctx context.Context) (*execworld.World, error) { return openWorldOn(ctx, backend, plan) }
	lspFactory, err := serveLSP(cfg)
	if err != nil {
		return err
	}
	// A signal while the bridge's servers start stops the wait: they are
	// closed, not left behind.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	br, closeBridge, err := serveBridge(ctx, cfg, plan.spec.Workspace, stderr, proxyAudit)
	if err != nil {
		return err
	}
	defer closeBridge()
	sk, closeSkills, err := serveSkills(plan.spec.Workspace)
	if err != nil {
		return err
	}
	defer closeSkills()
	metrics := newServeMetrics()
	gopts := gateway.Options{
		Version:        version,
		Fetch:          fetch,
		Search:         search,
		SearchProvider: cfg.Web.Search.Provider,
		Confinement:    confinementOf(plan, egress, cfg.Web.Policy, cfg.Sandbox.Limits.Memory),
		Audit:          toolAudit,
		IdleTimeout:    s.idle,
		Logger:         slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Observe:        metrics.observe,
		LSP:            lspFactory,
	}
	sessions := gopts
	sessions.Open, sessions.Bridge, sessions.Skills = open, br, sk
	g, err := gateway.New(&sessions)
	if err != nil {
		return err
	}
	metrics.register(g)

	if s.http == "" {
		return serveStdio(ctx, g, s, stderr)
	}
	var wh *workspaceHost
	if no, _ := cmd.Flags().GetBool("no-workspaces"); !no {
		if wh, err = hostWorkspaces(cmd, cfg, o, s, token, proxyAudit, stderr, workspaceMCP(gopts, cfg)); err != nil {
			g.Close()
			return err
		}
	}
	return serveHTTP(ctx, g, wh, s, token, loopback, metrics, stderr)
}

// serveToken reads the bearer token: --token-file, else $DSH_SERVE_TOKEN.
func serveToken(s serveSettings) (string, error) {
	if s.tokenFile != "" {
		b, err := os.ReadFile(s.tokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file: %v; give a readable file holding the token", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("--token-file %s is empty; put the token in it (for example: openssl rand -hex 32 > %s)", s.tokenFile, s.tokenFile)
		}
		return t, nil
	}
	return strings.TrimSpace(os.Getenv(serveTokenEnv)), nil
}

func openServeAudit(path string, stderr io.Writer) (io.Writer, func(), error) {
	switch path {
	case "off":
		return nil, func() {}, nil
	case "", "-":
		return stderr, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("--audit: %v; give a writable file, - for stderr, or off", err)
	}
	return f, func() { f.Close() }, nil
}

// serveFetchOptions are web_fetch's limits from web.fetch; the gateway
// dials through each world's Net (the web policy).
func serveFetchOptions(cfg *config.Config) (*web.FetchOptions, error) {
	opts := &web.FetchOptions{
		MaxBytes:     cfg.Web.Fetch.MaxBytes,
		MaxChars:     cfg.Web.Fetch.MaxChars,
		MaxRedirects: cfg.Web.Fetch.MaxRedirects,
	}
	if s := cfg.Web.Fetch.Timeout; s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("web.fetch.timeout %q is not a positive duration (for example 30s)", s)
		}
		opts.Timeout = d
	}
	return opts, nil
}

// confinementOf describes the planned worlds for the status tool.
func confinementOf(p *worldPlan, egress netpolicy.Config, webPol netpolicy.Config, memory string) gateway.Confinement {
	c := gateway.Confinement{
		Driver:    p.driver.name,
		Confined:  p.driver.confines,
		Workspace: p.spec.Workspace,
		Egress:    orDefault(egress.Default, "deny"),
		Allow:     slices.Clone(egress.Allow),
		WebPolicy: orDefault(webPol.Default, "public"),
		Masks:     slices.Clone(p.spec.Masks),
		Unix:      p.spec.UnixSockets,
	}
	r := p.spec.Resources
	if r == nil {
		c.LimitsOff = true
		return c
	}
	c.Memory = memory
	if r.Pids != nil && r.Pids.Limit != nil {
		c.Pids = *r.Pids.Limit
	}
	if r.CPU != nil && r.CPU.Quota != nil && r.CPU.Period != nil && *r.CPU.Period > 0 {
		c.CPUs = float64(*r.CPU.Quota) / float64(*r.CPU.Period)
	}
	return c
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// serveStdio serves one MCP session on stdin and stdout until the client
// closes it or a signal comes.
func serveStdio(ctx context.Context, g *gateway.Gateway, s serveSettings, stderr io.Writer) error {
	transport, answers := stdioTransport(g.Server())
	ss, err := g.Server().Connect(context.Background(), transport, nil)
	if err != nil {
		g.Close()
		return fmt.Errorf("serving MCP on stdio: %w", err)
	}
	ended := make(chan struct{})
	go func() { ss.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-ctx.Done():
		drain(g, s.grace, stderr)
		answers.wait(time.Second) // the answers of the calls that finished
		ss.Close()
	}
	return closeGateway(g)
}

// drain gives the calls in flight the grace to finish.
func drain(g *gateway.Gateway, grace time.Duration, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := g.Drain(ctx); err != nil {
		fmt.Fprintf(stderr, "dsh serve: calls still running after the %v grace are cancelled (their worlds closed)\n", grace)
	}
}

func closeGateway(g *gateway.Gateway) error {
	if err := g.Close(); err != nil {
		return fmt.Errorf("closing the worlds: %w", err)
	}
	return nil
}

// serveHTTP serves Streamable HTTP until a signal comes.
func serveHTTP(ctx context.Context, g *gateway.Gateway, wh *workspaceHost, s serveSettings, token string, loopback bool, m *serveMetrics, stderr io.Writer) error {
	closeAll := func() error {
		var err error
		if wh != nil {
			err = wh.Close()
		}
		return errors.Join(err, closeGateway(g))
	}
	l, err := net.Listen("tcp", s.http)
	if err != nil {
		closeAll()
		return exitf(1, "--http %s: %v", s.http, err)
	}
	h := mcpHandler(g, s)
	guard := &httpGuard{token: token, loopback: loopback, origins: s.allowOrigins}
	mux := http.NewServeMux()
	mux.Handle("/mcp", guard.wrap(h))
	mux.Handle("/metrics", guard.wrap(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})))
	if wh != nil {
		// The API checks tokens itself (the server's or a workspace's);
		// the Origin rule is the guard's.
		origins := &httpGuard{loopback: loopback, origins: s.allowOrigins}
		mux.Handle("/v1/", origins.wrap(wh.Handler()))
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	auth := "no token (loopback)"
	if token != "" {
		auth = "bearer token required"
	}
	fmt.Fprintf(stderr, "dsh serve: listening on http://%s/mcp (%s)\n", l.Addr(), auth)
	if wh != nil {
		fmt.Fprintf(stderr, "dsh serve: workspaces at http://%s/v1/workspaces (under %s)\n", l.Addr(), wh.root)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		closeAll()
		return exitf(1, "serving HTTP on %s: %v", l.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	shut := make(chan struct{})
	go func() { srv.Shutdown(sctx); close(shut) }()
	drain(g, s.grace, stderr)
	err = closeAll()
	// Streams still open (a client's GET) end with the server.
	select {
	case <-shut:
	case <-time.After(time.Second):
	}
	srv.Close()
	return err
}

// mcpHandler serves the gateway's Streamable HTTP at /mcp.
func mcpHandler(g *gateway.Gateway, s serveSettings) http.Handler {
	return gateway.HTTPHandler(g, s.idle, s.maxBody)
}

// isLoopbackAddr reports whether HOST:PORT binds only loopback.
func isLoopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// httpGuard enforces the Origin rule and the bearer token.
type httpGuard struct {
	token    string
	loopback bool
	origins  []string
}

func (g *httpGuard) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// On a loopback address only a loopback Host is the server: a page
		// whose name was rebound to 127.0.0.1 sends that name as Host and
		// as Origin, and would pass for the server's own origin.
		if g.loopback && !loopbackHost(r.Host) {
			http.Error(w, fmt.Sprintf("Misdirected Request: Host %q is not this server; on a loopback address dsh serve answers only to localhost, 127.0.0.0/8 and [::1]", r.Host), http.StatusMisdirectedRequest)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !g.originOK(o, r.Host) {
			http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not allowed; dsh serve accepts its own origin, loopback origins on a loopback address, and --allow-origin", o), http.StatusForbidden)
			return
		}
		if g.token != "" && !g.tokenOK(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="dsh serve"`)
			http.Error(w, "Unauthorized: send Authorization: Bearer TOKEN with the token of --token-file or $"+serveTokenEnv, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost tells whether a request's Host (name or address, with or
// without a port) is localhost or a loopback address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (g *httpGuard) tokenOK(header string) bool {
	return httpauth.Equal(httpauth.Token(header), g.token)
}

func (g *httpGuard) originOK(origin, host string) bool {
	if slices.Contains(g.origins, strings.TrimSuffix(origin, "/")) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	if !g.loopback {
		return false
	}
	name := u.Hostname()
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// serveMetrics are dsh serve's Prometheus metrics.
type serveMetrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newServeMetrics() *serveMetrics {
	m := &serveMetrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dsh_serve_tool_calls_total", Help: "Tool calls by tool and status (ok, tool_error, canceled).",
		}, []string{"tool", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dsh_serve_tool_call_seconds", Help: "Tool call durations.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"tool"}),
	}
	m.reg.MustRegister(m.calls, m.duration)
	return m
}

func (m *serveMetrics) observe(tool, status string, d time.Duration) {
	m.calls.WithLabelValues(tool, status).Inc()
	m.duration.WithLabelValues(tool).Observe(d.Seconds())
}

func (m *serveMetrics) register(g *gateway.Gateway) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dsh_serve_sessions", Help: "MCP sessions that have made a tool call and are open."},
			func() float64 { return float64(g.Sessions()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dsh_serve_worlds", Help: "Worlds open now."},
			func() float64 { return float64(len(g.Worlds())) }),
	)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/netpolicy/proxy"
)

// proxyDrainTimeout is how long dsh proxy waits for open tunnels and
// requests after SIGINT/SIGTERM before closing them.
const proxyDrainTimeout = 10 * time.Second

func newProxyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proxy --listen ADDR [--policy FILE] [--allow ENTRY]... [--audit FILE|-] [--metrics ADDR]",
		Short: "Run the egress proxy: HTTP forward and CONNECT under a network policy",
		Long: `dsh proxy serves an HTTP forward proxy (absolute-form requests) and CONNECT
tunnels on ADDR (host:port, or unix:PATH), and lets a connection through only
when the network policy allows its destination. It resolves names itself,
checks every resolved address, and connects only to the address it checked,
so neither DNS tricks nor a Host header can steer it to a private network.
Refusals answer 403 with the reason in the X-Dsh-Deny-Reason header.

Without --policy the sandbox egress policy of the configuration (network:)
applies; if none is configured, everything is denied. --allow adds entries
(host, *.host, host:port, IP, IP:port, [IPv6]:port, CIDR).

Used alone it is a compose sidecar that gives containers an audited,
SSRF-proof way out: point HTTP_PROXY and HTTPS_PROXY at it.`,
		Example: `  dsh proxy --listen 127.0.0.1:3128 --allow api.github.com:443 --audit -
  dsh proxy --listen unix:/run/dsh/egress.sock --policy egress.yaml --metrics 127.0.0.1:9090`,
		Args: cobra.NoArgs,
		RunE: runProxy,
	}
	f := cmd.Flags()
	f.String("listen", "", "address to serve on: host:port or unix:PATH (required)")
	f.String("audit", "", "write one JSON line per connection and request to FILE, or - for stdout")
	f.String("metrics", "", "serve Prometheus metrics at http://ADDR/metrics (host:port)")
	f.String("world", "proxy", "world name recorded in audit lines and metrics")
	bindConfigFlag(cmd, "listen", "proxy.listen")
	bindConfigFlag(cmd, "audit", "proxy.audit")
	bindConfigFlag(cmd, "metrics", "proxy.metrics")
	addPolicyFlags(cmd)
	return cmd
}

func runProxy(cmd *cobra.Command, _ []string) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return exitf(2, "%v", err)
	}
	if cfg.Proxy.Listen == "" {
		return exitf(2, "dsh proxy needs an address to serve on: pass --listen host:port or --listen unix:PATH (or set proxy.listen)")
	}
	overrides := policyFlags(cmd)
	pol, pc, src, err := resolvePolicySummary(cfg.Network, overrides)
	if err != nil {
		return exitf(2, "%v", err)
	}
	world, _ := cmd.Flags().GetString("world")

	var audit io.Writer
	var auditFile *reopenFile
	switch cfg.Proxy.Audit {
	case "":
	case "-":
		audit = cmd.OutOrStdout()
	default:
		auditFile, err = openReopenFile(cfg.Proxy.Audit)
		if err != nil {
			return exitf(2, "opening the audit log: %v (pass --audit with a writable file, or - for stdout)", err)
		}
		defer auditFile.Close()
		audit = auditFile
	}

	reg := prometheus.NewRegistry()
	metrics, err := proxy.NewMetrics(reg)
	if err != nil {
		return exitf(1, "%v", err)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	l, err := listenAddr(cfg.Proxy.Listen)
	if err != nil {
		return exitf(2, "--listen %s: %v", cfg.Proxy.Listen, err)
	}
	var ms *http.Server
	var ml net.Listener
	if cfg.Proxy.Metrics != "" {
		ml, err = listenAddr(cfg.Proxy.Metrics)
		if err != nil {
			l.Close()
			return exitf(2, "--metrics %s: %v", cfg.Proxy.Metrics, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "ok\n")
		})
		ms = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	}

	var private []netip.AddrPort
	if ta, ok := addrOf(ml).(*net.TCPAddr); ok {
		private = append(private, ta.AddrPort())
	}
	p := proxy.New(&netpolicy.Dialer{Policy: pol}, &proxy.Options{
		World:   world,
		Private: private, // the metrics listener is never a destination
		Audit:   audit,
		Metrics: metrics,
		Logger:  slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
	})
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr := cmd.ErrOrStderr()
	fmt.Fprintf(stderr, "dsh proxy: policy %s\n", proxyPolicyLine(pc, src))
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			reloadProxy(stderr, p, cfg.Network, overrides, auditFile)
		}
	}()

	errc := make(chan error, 2)
	go func() { errc <- p.Serve(l) }()
	if ms != nil {
		go func() { errc <- ms.Serve(ml) }()
		fmt.Fprintf(cmd.ErrOrStderr(), "dsh proxy: metrics on http://%s/metrics, health on http://%s/healthz\n", ml.Addr(), ml.Addr())
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "dsh proxy: serving world %q on %s\n", world, describeAddr(l))

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), proxyDrainTimeout)
	defer cancel()
	if ms != nil {
		ms.Shutdown(sctx)
	}
	if err := p.Shutdown(sctx); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "dsh proxy: closed connections still open after %v\n", proxyDrainTimeout)
	}
	if serveErr != nil && !errors.Is(serveErr, proxy.ErrClosed) && !errors.Is(serveErr, http.ErrServerClosed) {
		return exitf(1, "serving: %v", serveErr)
	}
	return nil
}

// listenAddr listens on host:port (TCP) or unix:PATH. A stale unix socket
// left by a crashed proxy is replaced; a live one is an error.
func listenAddr(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return nil, errors.New("empty socket path; write unix:/path/to/socket")
		}
		if fi, err := os.Lstat(path); err == nil {
			if fi.Mode()&os.ModeSocket == 0 {
				return nil, fmt.Errorf("%s exists and is not a socket; choose another path", path)
			}
			if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
				c.Close()
				return nil, fmt.Errorf("another process is already serving on %s", path)
			}
			os.Remove(path)
		}
		l, err := net.Listen("unix", path)
		if err != nil {
			return nil, err
		}
		l.(*net.UnixListener).SetUnlinkOnClose(true)
		return l, nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return nil, fmt.Errorf("not host:port or unix:PATH; write for example 127.0.0.1:3128")
	}
	return net.Listen("tcp", addr)
}

func describeAddr(l net.Listener) string {
	if l.Addr().Network() == "unix" {
		return "unix:" + l.Addr().String()
	}
	return l.Addr().String()
}

// addrOf is l's address, or nil when there is no listener.
func addrOf(l net.Listener) net.Addr {
	if l == nil {
		return nil
	}
	return l.Addr()
}

// reloadProxy is dsh proxy's answer to SIGHUP: it reads the policy again
// (the --policy file, with the --allow entries of the command line) and
// puts it in force, or keeps the policy in force and says why when the
// new one has a problem; and it reopens the audit file, for logrotate.
// The configuration file is not read again.
func reloadProxy(stderr io.Writer, p *proxy.Proxy, base netpolicy.Config, o policyOverrides, audit *reopenFile) {
	if audit != nil {
		if err := audit.Reopen(); err != nil {
			fmt.Fprintf(stderr, "dsh proxy: SIGHUP: reopening the audit log: %v; still writing to the old file\n", err)
		} else {
			fmt.Fprintf(stderr, "dsh proxy: SIGHUP: reopened the audit log %s\n", audit.path)
		}
	}
	pol, pc, src, err := resolvePolicySummary(base, o)
	if err != nil {
		fmt.Fprintf(stderr, "dsh proxy: SIGHUP: keeping the policy in force: %v\n", err)
		return
	}
	p.SetPolicy(pol)
	fmt.Fprintf(stderr, "dsh proxy: SIGHUP: reloaded policy %s\n", proxyPolicyLine(pc, src))
}

// proxyPolicyLine is one line about a policy: its default, its ports and
// its entries (or their counts, when there are many), and its source.
func proxyPolicyLine(c netpolicy.Config, src string) string {
	def := c.Default
	if def == "" {
		def = "deny"
	}
	list := func(name string, l []string) string {
		if len(l) <= 5 {
			return fmt.Sprintf("%s [%s]", name, strings.Join(l, ", "))
		}
		return fmt.Sprintf("%s %d entries", name, len(l))
	}
	ports := "any port"
	if len(c.Ports) > 0 {
		ports = fmt.Sprint("ports ", c.Ports)
	}
	if def == "deny" {
		ports = "" // ports limit only what default public admits
	} else {
		ports = ", " + ports
	}
	return fmt.Sprintf("default %s%s, %s, %s (from %s)", def, ports, list("allow", c.Allow), list("deny", c.Deny), src)
}

// reopenFile is an append-only file that can be reopened by path, so that
// logrotate can move it away and signal dsh proxy to start a new one.
type reopenFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openReopenFile(path string) (*reopenFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &reopenFile{path: path, f: f}, nil
}

func (r *reopenFile) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Write(b)
}

// Reopen opens the path again and closes the old file; on an error the
// old file stays in use.
func (r *reopenFile) Reopen() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	r.mu.Lock()
	old := r.f
	r.f = f
	r.mu.Unlock()
	return old.Close()
}

func (r *reopenFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Close()
}

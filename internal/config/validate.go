package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/internal/idn"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// Validate reports every problem in c at once, each naming its key path.
// drivers are the names sandbox.driver may take: the driver list of the
// build (cmd/dsh), which this package does not know. It returns nil or
// an Errors.
func (c *Config) Validate(drivers []string) error {
	var errs Errors
	bad := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}

	if !slices.Contains(drivers, c.Sandbox.Driver) {
		bad("sandbox.driver", "%q is not a sandbox driver of this build; use one of: %s (flag --driver)", c.Sandbox.Driver, strings.Join(drivers, ", "))
	}
	validateLimits(c.Sandbox.Limits, bad)
	validateWriteLimit(c.Sandbox.Limits.Write, bad)
	validateWorkspace(c.Sandbox.Workspace, bad)
	for i, m := range c.Sandbox.Masks {
		if !strings.HasPrefix(m, "/") && !strings.HasPrefix(m, "~/") {
			bad(fmt.Sprintf("sandbox.masks[%d]", i), "%q is not an absolute path or ~/path", m)
		}
	}
	for i, a := range c.Sandbox.Home.Allow {
		if !strings.HasPrefix(a, "~/") || slices.Contains(strings.Split(a, "/"), "..") || len(a) < 3 {
			bad(fmt.Sprintf("sandbox.home.allow[%d]", i), "%q is not a ~/path inside the home (such as ~/go)", a)
		}
	}
	validateViews(c.Sandbox, bad)
	validateProtected(c.Sandbox.Protected, bad)
	validateLSP(c.LSP, bad)
	validatePolicy("network", c.Network, bad)
	validatePolicy("web.policy", c.Web.Policy, bad)
	validateWorkspaces(c.Workspaces, bad)

	if _, err := time.ParseDuration(c.Web.Fetch.Timeout); c.Web.Fetch.Timeout != "" && err != nil {
		bad("web.fetch.timeout", "%q is not a duration (use 30s, 2m)", c.Web.Fetch.Timeout)
	}
	if c.Web.Fetch.MaxBytes < 0 {
		bad("web.fetch.max_bytes", "%d is negative", c.Web.Fetch.MaxBytes)
	}
	if c.Web.Fetch.MaxChars < 0 {
		bad("web.fetch.max_chars", "%d is negative", c.Web.Fetch.MaxChars)
	}
	if c.Web.Fetch.MaxRedirects < 0 {
		bad("web.fetch.max_redirects", "%d is negative", c.Web.Fetch.MaxRedirects)
	}
	switch c.Web.Search.Provider {
	case "", "searxng", "brave":
	default:
		bad("web.search.provider", "%q is not a search provider; use searxng or brave", c.Web.Search.Provider)
	}
	if u := c.Web.Search.SearXNGURL; u != "" {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			bad("web.search.searxng_url", "%q is not an http(s) URL", u)
		}
	}
	validateMCP(c.MCP, drivers, bad)
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// validateLimits checks the limits with the rules every sandbox driver
// applies (package sandbox), so a value the configuration accepts is one
// a driver opens. The flags of dsh run (--memory, --pids, --cpus) set
// these keys, so they are checked here too. Zero and empty are refused
// like any value no kernel enforces: the defaults are never zero, and
// running without limits is the explicit sandbox.limits.off.
func validateLimits(l Limits, bad func(key, format string, args ...any)) {
	if n, err := ParseSize(l.Memory); err != nil {
		bad("sandbox.limits.memory", "%v (flag --memory)", err)
	} else if err := sandbox.CheckMemory(n); err != nil {
		bad("sandbox.limits.memory", "%q: %v (flag --memory)", l.Memory, err)
	}
	if err := sandbox.CheckPids(int64(l.Pids)); err != nil {
		bad("sandbox.limits.pids", "%v (flag --pids)", err)
	}
	if err := sandbox.CheckCPUs(l.CPUs); err != nil {
		bad("sandbox.limits.cpus", "%v (flag --cpus)", err)
	}
}

// validatePolicy checks a policy section; each allow and deny entry is
// checked by netpolicy on its own, so a problem names its index.
// An empty key is a policy file's top level.
func validatePolicy(key string, p netpolicy.Config, bad func(key, format string, args ...any)) {
	path := func(k string) string {
		if key == "" {
			return k
		}
		return key + "." + k
	}
	entry := func(list string, i int, e string, c func(string) netpolicy.Config) {
		// netpolicy takes internationalised names as net/http dials them.
		ascii, err := idn.Entry(e)
		if err != nil {
			bad(fmt.Sprintf("%s[%d]", path(list), i), "%v", err)
			return
		}
		_, err = netpolicy.New(c(ascii))
		var pe *netpolicy.PolicyError
		if errors.As(err, &pe) && len(pe.Problems) > 0 {
			bad(fmt.Sprintf("%s[%d]", path(list), i), "%s", pe.Problems[0])
		}
	}
	for i, e := range p.Allow {
		entry("allow", i, e, func(a string) netpolicy.Config { return netpolicy.Config{Allow: []string{a}} })
	}
	for i, e := range p.Deny {
		entry("deny", i, e, func(a string) netpolicy.Config { return netpolicy.Config{Deny: []string{a}} })
	}
	switch p.Default {
	case "deny", "public":
	default:
		bad(path("default"), "%q is not a policy default; use deny or public", p.Default)
	}
	for i, port := range p.Ports {
		if port < 1 || port > 65535 {
			bad(fmt.Sprintf("%s[%d]", path("ports"), i), "%d is not a port (1-65535)", port)
		}
	}
}

// validateViews checks the keys that shape a world's view: the form of
// each mount (its paths are checked on this host when a world opens),
// and the root view.
func validateViews(s Sandbox, bad func(key, format string, args ...any)) {
	for i, m := range s.Mounts {
		if _, err := sandbox.ParseBindArg(m); err != nil {
			bad(fmt.Sprintf("sandbox.mounts[%d]", i), "%v (flag -v/--mount)", err)
		}
	}
	switch s.Root {
	case sandbox.RootHost, sandbox.RootMinimal:
	default:
		bad("sandbox.root", "%q is not a root view; use %s or %s (flag --root)", s.Root, sandbox.RootHost, sandbox.RootMinimal)
	}
}

// validateWorkspace checks the workspace mode and the overlay's bound
// with the rules of package sandbox.
func validateWorkspace(w Workspace, bad func(key, format string, args ...any)) {
	if _, err := sandbox.ParseWorkspaceMode(w.Mode); err != nil {
		bad("sandbox.workspace.mode", "%v (flag --workspace-mode)", err)
	}
	if w.OverlaySize == "" {
		return
	}
	if n, err := ParseSize(w.OverlaySize); err != nil {
		bad("sandbox.workspace.overlay_size", "%v (flag --overlay-size)", err)
	} else if n < sandbox.MinOverlaySize {
		bad("sandbox.workspace.overlay_size", "%s is below the minimum of 1MiB (flag --overlay-size)", w.OverlaySize)
	}
}

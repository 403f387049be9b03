package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/netpolicy"
)

// check is one fact doctor established about the machine.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// driverReport is what one sandbox driver can do here.
type driverReport struct {
	Name string `json:"name"`
	// Confines reports whether the driver confines at all (host does not).
	Confines bool `json:"confines"`
	// Ready reports whether a world can be opened with it now.
	Ready  bool    `json:"ready"`
	Checks []check `json:"checks"`
	// Problem and Fix say why it is not ready and what to do.
	Problem string `json:"problem,omitempty"`
	Fix     string `json:"fix,omitempty"`
}

// capability is one of dsh's tool surfaces. Visibility is not readiness:
// a capability can be configured and visible yet not ready to serve.
type capability struct {
	Name       string `json:"name"`
	Exists     bool   `json:"exists"`
	Configured bool   `json:"configured"`
	Visible    bool   `json:"visible"`
	Ready      bool   `json:"ready"`
	Detail     string `json:"detail,omitempty"`
}

type doctorReport struct {
	Version      string         `json:"version"`
	Driver       string         `json:"driver"`
	DriverSource string         `json:"driver_source"`
	Drivers      []driverReport `json:"drivers"`
	Capabilities []capability   `json:"capabilities"`
	// WriteBudget says which bounds on a world's writes hold here.
	WriteBudget []check `json:"write_budget"`
	OK          bool    `json:"ok"`
}

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Report what confinement and which capabilities are available here",
		Long: `doctor checks, for every sandbox driver, the confinement this machine really
offers (native: user namespaces, cgroups, seccomp, landlock, overlayfs, pivot_root;
docker: daemon, API version, cgroup driver, images), and for every capability
whether it exists, is configured, is visible and is ready. Under WRITE
BUDGET it says which bounds on what a world writes hold here: the file
size limit, the tmpfs sizes, the workspace overlay and a project quota.

It exits 1 when the configured driver cannot confine, and says how to fix it.`,
		Example: `  dsh doctor
  dsh doctor --json | jq '.drivers[] | {name, ready}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := load(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 20*time.Second)
			defer cancel()
			rep := runDoctor(ctx, l)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printDoctor(out, rep)
			}
			if !rep.OK {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func runDoctor(ctx context.Context, l *loaded) *doctorReport {
	cfg := l.cfg
	rep := &doctorReport{Version: version, Driver: cfg.Sandbox.Driver, DriverSource: l.sources["sandbox.driver"]}
	for _, d := range drivers {
		rep.Drivers = append(rep.Drivers, probeDriver(ctx, d, cfg))
	}
	rep.Capabilities = capabilities(cfg, rep)
	rep.WriteBudget = writeBudget(cfg)
	for _, d := range rep.Drivers {
		if d.Name == cfg.Sandbox.Driver {
			rep.OK = d.Ready && d.Confines
		}
	}
	return rep
}

// capabilities reports each tool surface.
func capabilities(cfg *config.Config, rep *doctorReport) []capability {
	var world *driverReport
	for i := range rep.Drivers {
		if rep.Drivers[i].Name == cfg.Sandbox.Driver {
			world = &rep.Drivers[i]
		}
	}
	worldReady := world != nil && world.Ready && world.Confines
	search := capability{Name: "web_search", Exists: true}
	switch {
	case cfg.Web.Search.Provider != "":
		search.Configured = true
		search.Detail = "provider " + cfg.Web.Search.Provider
	case cfg.Web.Search.SearXNGURL != "":
		search.Configured = true
		search.Detail = "SearXNG at " + cfg.Web.Search.SearXNGURL
	default:
		search.Detail = "no provider: set web.search.searxng_url, or " + cfg.Web.Search.BraveKeyEnv + " with web.search.provider: brave"
	}
	search.Visible, search.Ready = search.Configured, search.Configured
	return []capability{
		{Name: "exec", Exists: true, Configured: true, Visible: true, Ready: worldReady,
			Detail: "runs in the " + cfg.Sandbox.Driver + " driver"},
		{Name: "egress_proxy", Exists: true, Configured: true, Visible: true, Ready: true,
			Detail: "sandbox egress default " + cfg.Network.Default + policySummary(cfg.Network)},
		{Name: "web_fetch", Exists: true, Configured: true, Visible: true, Ready: true,
			Detail: "policy default " + cfg.Web.Policy.Default + policySummary(cfg.Web.Policy)},
		search,
		{Name: "lsp", Detail: "not built yet"},
		{Name: "mcp", Detail: "not built yet"},
	}
}

func policySummary(p netpolicy.Config) string {
	var parts []string
	if len(p.Ports) > 0 {
		parts = append(parts, fmt.Sprintf("ports %v", p.Ports))
	}
	if len(p.Allow) > 0 {
		parts = append(parts, fmt.Sprintf("%d allow", len(p.Allow)))
	}
	if len(p.Deny) > 0 {
		parts = append(parts, fmt.Sprintf("%d deny", len(p.Deny)))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func printDoctor(w io.Writer, rep *doctorReport) {
	fmt.Fprintf(w, "dsh %s — configured driver: %s (%s)\n\n", rep.Version, rep.Driver, rep.DriverSource)
	fmt.Fprintln(w, "SANDBOX DRIVERS")
	for _, d := range rep.Drivers {
		state := "ready"
		switch {
		case !d.Confines:
			state = "UNCONFINED (only with --unconfined)"
		case !d.Ready:
			state = "NOT READY"
		}
		fmt.Fprintf(w, "  %-7s %s\n", d.Name, state)
		for _, c := range d.Checks {
			mark := "ok"
			if !c.OK {
				mark = "--"
			}
			fmt.Fprintf(w, "     %s %s", mark, c.Name)
			if c.Detail != "" {
				fmt.Fprintf(w, ": %s", c.Detail)
			}
			fmt.Fprintln(w)
		}
		if d.Problem != "" {
			fmt.Fprintf(w, "     problem: %s\n", d.Problem)
		}
		if d.Fix != "" {
			fmt.Fprintf(w, "     fix: %s\n", d.Fix)
		}
	}
	printChecks(w, "WRITE BUDGET", rep.WriteBudget)
	fmt.Fprintln(w, "\nCAPABILITIES")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tEXISTS\tCONFIGURED\tVISIBLE\tREADY\tDETAIL")
	for _, c := range rep.Capabilities {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", c.Name, yesNo(c.Exists), yesNo(c.Configured), yesNo(c.Visible), yesNo(c.Ready), c.Detail)
	}
	tw.Flush()
	if !rep.OK {
		fmt.Fprintf(w, "\nThe configured driver %q cannot confine here; see its problem and fix above,\nor choose another with --config / DSH_SANDBOX_DRIVER.\n", rep.Driver)
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Opening a world from configuration is one mechanism for every command
// that opens one (dsh run; the language-server, MCP and serve surfaces
// will be the next): addWorldFlags declares the flags, worldFlags reads
// them once into worldOverrides, planWorld turns the configuration and
// the overrides into what the world will be, and openWorld opens it.
// Only worldFlags knows of cobra.

// addWorldFlags registers the flags of a command that opens a world:
// its driver, image, workspace, limits, unix sockets and egress policy.
// Those that set a configuration key override it in loadConfig.
func addWorldFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("driver", "", "sandbox driver, one of: "+strings.Join(driverNames(), ", ")+" ("+driverHost+" needs --unconfined)")
	f.Bool("unconfined", false, "run on the host WITHOUT any confinement (development only; selects the "+driverHost+" driver)")
	f.String("image", "", "container image of the docker driver")
	f.String("workspace", "", "workspace directory, mounted read-write unless --workspace-mode says otherwise (default: current directory); never a system location (/etc, /usr, /var, /sys, ...)")
	f.Bool("workspace-home", false, "accept a home directory itself (~, /root, /home/USER) as the workspace: every dotfile and credential in it becomes writable inside")
	f.String("memory", "", "memory limit, such as 512MiB or 2G (at least 8MiB)")
	f.Int("pids", 0, "maximum number of processes (1 to 4194304)")
	f.Float64("cpus", 0, "CPUs' worth of time, such as 1.5 (0.01 to this host's CPUs)")
	f.Bool("unix-sockets", false, "let the command create unix sockets (refused by default, which keeps every host socket, the workspace's too, out of reach); a world may then connect to host sockets it can see and write")
	f.Bool("no-limits", false, "run without memory, pids and cpu limits (where dsh cannot write cgroups); all other confinement stays")
	addPolicyFlags(cmd)
	addViewFlags(cmd)
	addBudgetFlags(cmd)
	addWorkspaceModeFlags(cmd)
	bindConfigFlag(cmd, "driver", "sandbox.driver")
	bindConfigFlag(cmd, "image", "sandbox.image")
	bindConfigFlag(cmd, "memory", "sandbox.limits.memory")
	bindConfigFlag(cmd, "pids", "sandbox.limits.pids")
	bindConfigFlag(cmd, "cpus", "sandbox.limits.cpus")
	bindConfigFlag(cmd, "no-limits", "sandbox.limits.off")
	bindConfigFlag(cmd, "unix-sockets", "sandbox.unix_sockets")
	_ = cmd.RegisterFlagCompletionFunc("driver", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return driverNames(), cobra.ShellCompDirectiveNoFileComp
	})
}

// limitFlags are the flags that set a limit, refused with limits off.
var limitFlags = []string{"memory", "pids", "cpus"}

// worldOverrides is what a command line says of a world beyond the
// configuration keys its flags set (loadConfig has applied those).
type worldOverrides struct {
	Workspace     string // --workspace; "" is the current directory
	WorkspaceHome bool   // --workspace-home
	Unconfined    bool   // --unconfined: the host driver, knowingly
	// Driver is --driver as given on the command line, "" when it was
	// not: with --unconfined it is a contradiction unless it is host.
	Driver string
	// Limits are the limit flags given on the command line (memory,
	// pids, cpus): a contradiction when limits are off.
	Limits []string
	// Image is --image as given on the command line, "" when it was not:
	// an error with a driver that uses no image.
	Image  string
	Policy policyOverrides
	Views  viewOverrides // mounts, masks, root view and user
}

// worldFlags reads the world flags of cmd (addWorldFlags).
func worldFlags(cmd *cobra.Command) worldOverrides {
	f := cmd.Flags()
	o := worldOverrides{Policy: policyFlags(cmd), Views: viewFlags(cmd)}
	o.Workspace, _ = f.GetString("workspace")
	o.WorkspaceHome, _ = f.GetBool("workspace-home")
	o.Unconfined, _ = f.GetBool("unconfined")
	if f.Changed("driver") {
		o.Driver, _ = f.GetString("driver")
	}
	if f.Changed("image") {
		o.Image, _ = f.GetString("image")
	}
	for _, name := range limitFlags {
		if f.Changed(name) {
			o.Limits = append(o.Limits, name)
		}
	}
	return o
}

// worldPlan is a world as configuration and command line decided it,
// checked and not yet opened.
type worldPlan struct {
	driver driver
	spec   *sandbox.Spec
	egress *netpolicy.Policy
	// audit, set by the caller, receives the egress proxy's JSON audit
	// lines; nil for none.
	audit io.Writer
	// net, set by the caller, is the policy of dsh's own egress on the
	// world's behalf (dsh serve's web_fetch: the web policy); nil means
	// the egress policy.
	net *netpolicy.Policy
}

// planWorld decides the world that cfg (validated by loadConfig) and the
// overrides describe: its driver, its Spec and its egress policy (the
// network section, as the policy overrides change it).
func planWorld(cfg *config.Config, o worldOverrides) (*worldPlan, error) {
	d, err := pickDriver(cfg.Sandbox.Driver, o)
	if err != nil {
		return nil, err
	}
	if o.Image != "" && !d.usesImage {
		return nil, fmt.Errorf("--image %s: the %s driver runs no container image; pass --driver %s to run the image, or drop --image", o.Image, d.name, driverDocker)
	}
	spec, err := worldSpec(cfg.Sandbox, o)
	if err != nil {
		return nil, err
	}
	if err := applyViews(spec, cfg.Sandbox, o.Views, d); err != nil {
		return nil, err
	}
	// Planned once, however many worlds a command opens from it.
	if err := hideConfigDir(spec); err != nil {
		return nil, err
	}
	egress, err := resolvePolicy(cfg.Network, o.Policy)
	if err != nil {
		return nil, fmt.Errorf("egress policy: %w", err)
	}
	return &worldPlan{driver: d, spec: spec, egress: egress}, nil
}

// openWorld opens the planned world with its driver.
func openWorld(ctx context.Context, p *worldPlan, warn io.Writer) (*execworld.World, error) {
	backend, err := p.driver.newBackend()
	if err != nil {
		return nil, err
	}
	cliTrace.mark("backend")
	// The leftovers of crashed dsh processes go while this world opens:
	// Reap leaves the worlds of every live dsh alone, so it is as safe
	// beside this process's Open as beside another dsh's, and it is done
	// before openWorld returns, so every start still runs it to the end.
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		reapOnce(ctx, backend, warn)
	}()
	w, err := openWorldOn(ctx, backend, p)
	<-reaped
	return w, err
}

// openWorldOn opens the planned world on a backend already made: dsh
// serve opens many worlds on one.
func openWorldOn(ctx context.Context, backend execworld.Backend, p *worldPlan) (*execworld.World, error) {
	return execworld.Open(ctx, backend, &execworld.Options{Spec: p.spec, Egress: p.egress, Net: p.net, Audit: p.audit})
}

// reapOnce removes what crashed dsh processes left of a driver's worlds
// (containers, cgroups, state), once per driver and dsh process, before
// or while it opens one: every command that opens worlds does so through
// openWorld. A failure is said, not fatal: it leaves only dead worlds'
// leftovers behind.
func reapOnce(ctx context.Context, backend execworld.Backend, warn io.Writer) {
	r, ok := backend.(sandbox.Reaper)
	if !ok {
		return
	}
	reaped.Lock()
	done := reaped.drivers[backend.Name()]
	reaped.drivers[backend.Name()] = true
	reaped.Unlock()
	if done {
		return
	}
	if err := r.Reap(ctx); err != nil && warn != nil {
		fmt.Fprintf(warn, "dsh: warning: removing leftovers of crashed dsh processes (%s driver): %v\n", backend.Name(), err)
	}
}

// reaped records the drivers reapOnce has reaped.
var reaped = struct {
	sync.Mutex
	drivers map[string]bool
}{drivers: map[string]bool{}}

// warnUnconfined tells the user, before anything runs, that an
// unconfined world confines nothing.
func (p *worldPlan) warnUnconfined(w io.Writer) {
	if p.driver.confines {
		return
	}
	fmt.Fprintln(w, "dsh: WARNING: --unconfined: the command runs directly on this host with NO confinement -")
	fmt.Fprintln(w, "dsh: WARNING: it can read and write anything you can, reach any network, and outlive dsh.")
}

// pickDriver resolves --unconfined and sandbox.driver (which --driver
// sets). A driver that does not confine is never chosen without
// --unconfined.
func pickDriver(name string, o worldOverrides) (driver, error) {
	if o.Unconfined {
		if o.Driver != "" && o.Driver != driverHost {
			return driver{}, fmt.Errorf("--unconfined runs on the %s driver, but --driver %s was given; drop one of them", driverHost, o.Driver)
		}
		name = driverHost
	}
	d, err := findDriver(name)
	if err != nil {
		return driver{}, err
	}
	if !d.confines && !o.Unconfined {
		return driver{}, fmt.Errorf("the %s driver runs commands with no confinement at all; pass --unconfined to accept that, or choose --driver %s or %s", d.name, driverNative, driverDocker)
	}
	return d, nil
}

// worldSpec builds the world's Spec from the sandbox configuration and
// the overrides.
func worldSpec(sb config.Sandbox, o worldOverrides) (*sandbox.Spec, error) {
	ws := o.Workspace
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("finding the current directory for the workspace: %w; pass --workspace", err)
		}
		ws = wd
	}
	abs, err := absDir(ws)
	if err != nil {
		return nil, err
	}
	spec := sandbox.DefaultSpec(abs)
	spec.AllowHomeWorkspace = o.WorkspaceHome
	if sb.Image != "" {
		spec.Image = sb.Image
	}
	spec.Masks = append(spec.Masks, sb.Masks...)
	spec.HomeAllow = slices.Clone(sb.Home.Allow)
	spec.Protected = slices.Clone(sb.Protected)
	spec.UnixSockets = sb.UnixSockets
	if err := workspaceModeSpec(spec, sb.Workspace); err != nil {
		return nil, err
	}
	lim := sb.Limits
	if err := applyWriteLimit(spec, lim); err != nil {
		return nil, err
	}
	if lim.Off {
		if len(o.Limits) > 0 {
			return nil, fmt.Errorf("--%s sets a limit, but limits are off (--no-limits or sandbox.limits.off); drop one of them", o.Limits[0])
		}
		spec.Resources = nil
		return spec, nil
	}
	// loadConfig validated the limits (config.Validate, with the rules of
	// package sandbox), whether they came from flags, environment or file.
	n, err := config.ParseSize(lim.Memory)
	if err != nil {
		return nil, fmt.Errorf("--memory / sandbox.limits.memory: %w", err)
	}
	pids := int64(lim.Pids)
	quota, period := sandbox.CPUQuota(lim.CPUs)
	spec.Resources.Memory = &specs.LinuxMemory{Limit: &n}
	spec.Resources.Pids = &specs.LinuxPids{Limit: &pids}
	spec.Resources.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	return spec, nil
}

func absDir(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		p = wd + "/" + p
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("workspace %q: %w; create it or pass another --workspace", p, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workspace %q is not a directory; pass a directory with --workspace", p)
	}
	return p, nil
}

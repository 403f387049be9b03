package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/docker"
	"github.com/dsh-dev/dsh/sandbox/native"
)

// probeDriver asks one driver of the list what it can do on this
// machine. Every confining driver relies on the init's world filter for
// unix sockets, so its report says how that is set.
func probeDriver(ctx context.Context, d driver, cfg *config.Config) driverReport {
	rep := d.probe(ctx, cfg)
	rep.Name, rep.Confines = d.name, d.confines
	if d.confines {
		rep.Checks = append(rep.Checks, worldFilterCheck(cfg.Sandbox.UnixSockets))
	}
	return rep
}

// worldFilterCheck states what keeps host unix sockets out of reach in
// every confining driver: the init's world filter (package pid1).
func worldFilterCheck(unixSockets bool) check {
	if unixSockets {
		return check{Name: "unix sockets", OK: false, Detail: "allowed (sandbox.unix_sockets): a world can connect to any host unix socket in its view that its identity may write, its workspace's too"}
	}
	return check{Name: "unix sockets", OK: true, Detail: "refused by the init's seccomp filter (socket(AF_UNIX) fails), so no host unix socket is reachable, wherever it is; only inet, inet6 and route netlink sockets are made (sandbox.unix_sockets: true opts out)"}
}

// probeDocker reports the docker driver: its engine and the image of
// sandbox.image.
func probeDocker(ctx context.Context, cfg *config.Config) driverReport {
	r := docker.Probe(ctx, nil, cfg.Sandbox.Image)
	rep := driverReport{Ready: r.Ready()}
	add := func(name string, ok bool, detail string) {
		rep.Checks = append(rep.Checks, check{Name: name, OK: ok, Detail: detail})
	}
	engine := r.Engine
	if r.EngineError != "" {
		engine = r.EngineError
	}
	add("engine", r.EngineError == "" && r.Engine != "", engine)
	if r.Engine != "" {
		add("cgroups", true, fmt.Sprintf("v%s, driver %s", r.CgroupVersion, r.CgroupDriver))
		add("seccomp", r.Seccomp, "")
		add("image "+r.Image, r.ImagePresent, "")
	}
	if r.InitError != "" {
		add("init binary", false, r.InitError)
	}
	if r.TrialTime > 0 || r.TrialError != "" {
		trial := fmt.Sprintf("trial world up and down in %v", r.TrialTime.Round(100_000))
		if r.TrialError != "" {
			trial = r.TrialError
		}
		add("trial world", r.TrialError == "", trial)
	}
	if !rep.Ready {
		rep.Problem = strings.Join(r.Problems, "; ")
	}
	return rep
}

// probeNative reports the native driver. With limits off
// (sandbox.limits.off) worlds need no cgroup, so an unwritable cgroup
// hierarchy does not keep the driver from being ready. It also says which
// host identity worlds hold and what they can read of the home.
func probeNative(ctx context.Context, cfg *config.Config) driverReport {
	limitsOff, masks, allow := cfg.Sandbox.Limits.Off, cfg.Sandbox.Masks, cfg.Sandbox.Home.Allow
	r := native.New(nil).Probe(ctx)
	ready := r.Ready()
	if limitsOff {
		ready = r.UserNamespaces && r.PivotRoot && r.Seccomp
	}
	rep := driverReport{Ready: ready}
	add := func(name string, ok bool, detail string) {
		rep.Checks = append(rep.Checks, check{Name: name, OK: ok, Detail: detail})
	}
	add("user namespaces", r.UserNamespaces, r.UserNSDetail)
	cg := r.CgroupVersion
	if len(r.CgroupControllers) > 0 {
		cg += " (" + strings.Join(r.CgroupControllers, ", ") + ")"
	}
	if !r.CgroupWritable {
		cg += ", not writable by this user"
	}
	if limitsOff {
		cg += "; limits are off (sandbox.limits.off), so worlds run without memory, pids and cpu limits"
	}
	add("cgroups", r.CgroupWritable || limitsOff, cg)
	add("seccomp", r.Seccomp, "")
	landlock := "unavailable (optional)"
	if r.LandlockABI > 0 {
		landlock = fmt.Sprintf("ABI %d", r.LandlockABI)
	}
	add("landlock", r.LandlockABI > 0, landlock)
	add("overlayfs", r.Overlayfs, "")
	trial := fmt.Sprintf("trial sandbox up and down in %v", r.TrialTime.Round(100_000))
	if r.TrialError != "" {
		trial = r.TrialError
	}
	add("pivot_root", r.PivotRoot, trial)
	add("identity", true, native.IdentityView(0))
	homes, readable := native.HomeView(append(slices.Clone(sandbox.DefaultMasks), masks...), allow)
	home := "hidden: " + strings.Join(homes, ", ") + "; readable (read-only): "
	if len(readable) == 0 {
		home += "nothing"
	} else {
		home += strings.Join(readable, ", ")
	}
	add("home", true, home+" (sandbox.home.allow)")
	if !rep.Ready {
		rep.Problem = strings.Join(r.Problems, "; ")
	}
	return rep
}

// probeHost reports the host driver, which has nothing to probe.
func probeHost(context.Context, *config.Config) driverReport {
	return driverReport{Ready: true, Checks: []check{{Name: "unconfined", OK: true, Detail: "no confinement at all; development only"}}}
}

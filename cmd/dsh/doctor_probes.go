package main

import (
	"context"
	"os"
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
// sandbox.image (sandbox.Prober).
func probeDocker(ctx context.Context, cfg *config.Config) driverReport {
	img := cfg.Sandbox.Image
	opts, err := dockerOptions(img)
	if err != nil {
		return driverReport{Problem: err.Error(), Checks: []check{{Name: "init", OK: false, Detail: err.Error()}}}
	}
	return fromProbe(docker.Probe(ctx, opts, img).ProbeReport())
}

// probeNative reports the native driver as worlds of this configuration
// use it (sandbox.Prober): with limits off, worlds need no cgroup; the
// home view of its masks and allow list.
func probeNative(ctx context.Context, cfg *config.Config) driverReport {
	var d sandbox.Prober = native.New(&native.Options{NoLimits: cfg.Sandbox.Limits.Off, Masks: cfg.Sandbox.Masks, HomeAllow: cfg.Sandbox.Home.Allow})
	rep := fromProbe(d.Probe(ctx))
	addUsernsCheck(&rep, "/proc/sys", os.Geteuid())
	return rep
}

// fromProbe is a driver's report as doctor prints it.
func fromProbe(r sandbox.ProbeReport) driverReport {
	rep := driverReport{Name: r.Driver, Confines: r.Confines, Ready: r.Ready, Problem: strings.Join(r.Problems, "; ")}
	for _, c := range r.Checks {
		rep.Checks = append(rep.Checks, check{Name: c.Name, OK: c.OK, Detail: c.Detail})
	}
	return rep
}

// probeHost reports the host driver, which has nothing to probe.
func probeHost(context.Context, *config.Config) driverReport {
	return driverReport{Ready: true, Checks: []check{{Name: "unconfined", OK: true, Detail: "no confinement at all; development only"}}}
}

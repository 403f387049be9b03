package main

import (
	"context"
	"strings"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/docker"
	"github.com/dsh-dev/dsh/sandbox/native"
)

// driverNamesForDoctor lists the drivers doctor reports on, in order.
func driverNamesForDoctor() []string {
	return []string{sandbox.DriverNative, sandbox.DriverDocker, sandbox.DriverHost}
}

// probeDriver asks one driver what it can do on this machine.
func probeDriver(ctx context.Context, name string, cfg *config.Config) driverReport {
	switch name {
	case sandbox.DriverNative:
		rep := probeNative(ctx, cfg.Sandbox.Limits.Off, cfg.Sandbox.Masks, cfg.Sandbox.Home.Allow)
		rep.Checks = append(rep.Checks, worldFilterCheck(cfg.Sandbox.UnixSockets))
		return rep
	case sandbox.DriverDocker:
		rep := probeDocker(ctx, cfg.Sandbox.Image)
		rep.Checks = append(rep.Checks, worldFilterCheck(cfg.Sandbox.UnixSockets))
		return rep
	case sandbox.DriverHost:
		return driverReport{Name: sandbox.DriverHost, Confines: false, Ready: true,
			Checks: []check{{Name: "unconfined", OK: true, Detail: "no confinement at all; development only"}}}
	}
	return driverReport{Name: name, Confines: true, Problem: "dsh has no probe for this driver"}
}

// worldFilterCheck states what keeps host unix sockets out of reach in
// every confining driver: the init's world filter (package pid1).
func worldFilterCheck(unixSockets bool) check {
	if unixSockets {
		return check{Name: "unix sockets", OK: false, Detail: "allowed (sandbox.unix_sockets): a world can connect to any host unix socket in its view that its identity may write, its workspace's too"}
	}
	return check{Name: "unix sockets", OK: true, Detail: "refused by the init's seccomp filter (socket(AF_UNIX) fails), so no host unix socket is reachable, wherever it is; only inet, inet6 and route netlink sockets are made (sandbox.unix_sockets: true opts out)"}
}

func probeDocker(ctx context.Context, image string) driverReport {
	return fromProbe(docker.Probe(ctx, &docker.Options{Image: image}, image).ProbeReport())
}

// probeNative reports the native driver as worlds of this configuration
// use it: with limits off, worlds need no cgroup; the home view of its
// masks and allow list.
func probeNative(ctx context.Context, limitsOff bool, masks, allow []string) driverReport {
	var d sandbox.Prober = native.New(&native.Options{NoLimits: limitsOff, Masks: masks, HomeAllow: allow})
	return fromProbe(d.Probe(ctx))
}

// fromProbe is a driver's report as doctor prints it.
func fromProbe(r sandbox.ProbeReport) driverReport {
	rep := driverReport{Name: r.Driver, Confines: r.Confines, Ready: r.Ready, Problem: strings.Join(r.Problems, "; ")}
	for _, c := range r.Checks {
		rep.Checks = append(rep.Checks, check{Name: c.Name, OK: c.OK, Detail: c.Detail})
	}
	return rep
}

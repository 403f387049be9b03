package main

import (
	"context"

	"github.com/dsh-dev/dsh/internal/config"
)

// driverNamesForDoctor lists the drivers doctor reports on, in order.
func driverNamesForDoctor() []string { return []string{"native", "docker", "host"} }

// probeDriver asks one driver what it can do on this machine.
func probeDriver(ctx context.Context, name string, cfg *config.Config) driverReport {
	switch name {
	case "host":
		return driverReport{Name: "host", Confines: false, Ready: true,
			Checks: []check{{Name: "unconfined", OK: true, Detail: "no confinement at all; development only"}}}
	}
	return driverReport{Name: name, Confines: true, Problem: "probe not wired yet"}
}

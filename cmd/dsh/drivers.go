package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/sandbox/docker"
	"github.com/dsh-dev/dsh/sandbox/host"
	"github.com/dsh-dev/dsh/sandbox/native"
)

// driverFactory builds a sandbox driver from the effective configuration.
type driverFactory func(cfg *config.Config) (execworld.Backend, error)

// drivers maps a driver name (--driver, sandbox.driver) to its factory.
// Each driver adds its own line.
var drivers = map[string]driverFactory{
	"docker": func(*config.Config) (execworld.Backend, error) { return docker.New(nil) },
	"host":   func(*config.Config) (execworld.Backend, error) { return host.New(), nil },
	"native": func(*config.Config) (execworld.Backend, error) { return native.New(nil), nil },
}

// confining reports whether the named driver confines its processes.
// Only host does not, and it is selected only with --unconfined.
func confining(name string) bool { return name != host.Name }

// newDriver returns the driver called name, or an error naming the
// drivers this build has.
func newDriver(name string, cfg *config.Config) (execworld.Backend, error) {
	f, ok := drivers[name]
	if !ok {
		var names []string
		for n := range drivers {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("sandbox driver %q is not available in this build (have: %s)", name, strings.Join(names, ", "))
	}
	return f(cfg)
}

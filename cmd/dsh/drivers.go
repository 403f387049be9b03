package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/sandbox/host"
	"github.com/dsh-dev/dsh/sandbox/native"
)

// The names of the drivers (--driver, sandbox.driver), each written once.
const (
	driverNative = "native"
	driverDocker = "docker"
	driverHost   = host.Name
)

// driver is one entry of the driver list: everything dsh knows of a
// sandbox driver by its name.
type driver struct {
	name string
	// confines is false only for host, which runs commands on this host
	// as they are and is selected only with --unconfined.
	confines bool
	// usesImage is true for a driver that runs a container image
	// (sandbox.image, --image); the others run this host's own files.
	usesImage bool
	// newBackend makes the driver.
	newBackend func() (execworld.Backend, error)
	// probe reports what the driver can do on this machine under cfg
	// (dsh doctor); the report's name and confines come from the entry.
	probe func(ctx context.Context, cfg *config.Config) driverReport
}

// drivers is the one list of the sandbox drivers of this build, in the
// order dsh doctor reports them; the first is the default
// (config.Default's sandbox.driver, which a test holds to it). Config
// validation, --driver's help and completion, dsh doctor and opening a
// world all ask it. A new driver is one entry here.
var drivers = []driver{
	{
		name: driverNative, confines: true,
		newBackend: func() (execworld.Backend, error) { return native.New(nil), nil },
		probe:      probeNative,
	},
	{
		name: driverDocker, confines: true, usesImage: true,
		newBackend: newDockerBackend,
		probe:      probeDocker,
	},
	{
		name: driverHost, confines: false,
		newBackend: func() (execworld.Backend, error) { return host.New(), nil },
		probe:      probeHost,
	},
}

// driverNames lists the names of the drivers, in list order.
func driverNames() []string {
	names := make([]string, len(drivers))
	for i, d := range drivers {
		names[i] = d.name
	}
	return names
}

// findDriver returns the driver called name, or an error naming the
// drivers this build has.
func findDriver(name string) (driver, error) {
	for _, d := range drivers {
		if d.name == name {
			return d, nil
		}
	}
	return driver{}, fmt.Errorf("sandbox driver %q is not available in this build (have: %s)", name, strings.Join(driverNames(), ", "))
}

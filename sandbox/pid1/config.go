package pid1

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
)

// ConfigEnv carries a Config as JSON to `dsh __init` (docker driver).
const ConfigEnv = "DSH_INIT_CONFIG"

// Config is what a driver tells the init about its world before it
// serves. The zero value: no egress, no world filter (the init as a plain
// process supervisor, as tests run it).
type Config struct {
	// Egress is the egress broker connection (sandbox.ServeEgress on the
	// host's side), inherited from the driver. If nil, EgressSocket is
	// tried.
	Egress *net.UnixConn `json:"-"`
	// EgressSocket is the path of a unix socket where the broker waits
	// for this init; the init connects once, before the world filter
	// makes unix sockets unavailable (docker driver). If both are empty,
	// the world has no network.
	EgressSocket string `json:"egressSocket,omitempty"`
	// ProxyAddr is where the relay listens inside the world
	// (127.0.0.1:PORT). Required with egress.
	ProxyAddr string `json:"proxyAddr,omitempty"`
	// Filter installs the world filter (filter.go) before serving.
	Filter bool `json:"filter,omitempty"`
	// UnixSockets lets the world's processes create unix sockets, which
	// the filter otherwise refuses.
	UnixSockets bool `json:"unixSockets,omitempty"`
	// Stdio is the init's end of the stdio socket (ServeOptions.Stdio),
	// inherited from the driver; nil relays every process's stdio.
	Stdio *net.UnixConn `json:"-"`
	// ForkGroup, if set, is the tasks file of the world's processes' own
	// cgroup (cgroup v1; native driver), opened by the driver: one thread
	// joins it and forks every process (forker.go), so the init's other
	// threads need no room under the processes' pids limit.
	ForkGroup *os.File `json:"-"`
	// Ready, if set, is called once the world is set up, just before the
	// init serves (the native driver reports readiness there).
	Ready func() error `json:"-"`
}

// configFromEnv reads ConfigEnv; an absent variable is the zero Config.
func configFromEnv() (*Config, error) {
	cfg := &Config{}
	s := os.Getenv(ConfigEnv)
	if s == "" {
		return cfg, nil
	}
	if err := json.Unmarshal([]byte(s), cfg); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", ConfigEnv, err)
	}
	return cfg, nil
}

// setUp prepares the world: the egress relay, then the world filter
// (after the broker connection is made: the filter may refuse unix
// sockets), then Ready.
func (c *Config) setUp(log *slog.Logger) error {
	broker := c.Egress
	if broker == nil && c.EgressSocket != "" {
		conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: c.EgressSocket, Net: "unix"})
		if err != nil {
			return fmt.Errorf("connecting to the egress broker: %w", err)
		}
		broker = conn
	}
	if broker != nil {
		if c.ProxyAddr == "" {
			return fmt.Errorf("egress without a proxy address")
		}
		if err := startRelay(c.ProxyAddr, broker, log); err != nil {
			return fmt.Errorf("egress relay: %w", err)
		}
	}
	if c.Filter {
		if err := installWorldFilter(c.UnixSockets); err != nil {
			return err
		}
	}
	if c.Ready != nil {
		return c.Ready()
	}
	return nil
}

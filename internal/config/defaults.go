package config

import (
	"slices"

	"github.com/dsh-dev/dsh/sandbox"
)

// Default returns the configuration dsh uses when nothing is set. Every
// key has a default here, so every key is known to the loader (and to
// unknown-key detection).
func Default() Config {
	return Config{
		Sandbox: Sandbox{
			Driver: "native",
			Image:  "dsh/base:latest",
			Limits: Limits{Memory: "2GiB", Pids: sandbox.DefaultPids, CPUs: min(sandbox.DefaultCPUs, float64(sandbox.HostCPUs()))},
			Masks:  []string{},
			Home:   Home{Allow: slices.Clone(sandbox.DefaultHomeAllow)},
		},
		Network: Policy{Default: "deny", Ports: []int{}, Allow: []string{}, Deny: []string{}},
		Web: Web{
			Policy: Policy{Default: "public", Ports: []int{80, 443}, Allow: []string{}, Deny: []string{}},
			Fetch:  Fetch{Timeout: "30s", MaxBytes: 5_000_000, MaxChars: 100_000, MaxRedirects: 5},
			Search: Search{BraveKeyEnv: "BRAVE_API_KEY"},
		},
		Proxy: Proxy{},
	}
}

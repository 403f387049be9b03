package config

import (
	"slices"

	"github.com/dsh-dev/dsh/netpolicy"
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
			Limits: Limits{Memory: "2GiB", Pids: sandbox.DefaultPids, CPUs: min(sandbox.DefaultCPUs, float64(sandbox.HostCPUs())), Write: "4GiB"},
			Masks:  []string{},
			Home:   Home{Allow: slices.Clone(sandbox.DefaultHomeAllow)},
			Mounts: []string{},
			Root:   sandbox.RootHost,
			// Read-only in every world: project configuration, git's
			// configuration and hooks, editor tasks.
			Protected: slices.Clone(sandbox.DefaultProtected),
			Workspace: Workspace{Mode: string(sandbox.WorkspaceRW), OverlaySize: ""},
		},
		Network: withLists(netpolicy.SandboxDefault()),
		Web: Web{
			Policy: withLists(netpolicy.WebDefault()),
			Fetch:  Fetch{Timeout: "30s", MaxBytes: 5_000_000, MaxChars: 100_000, MaxRedirects: 5},
			Search: Search{BraveKeyEnv: "BRAVE_API_KEY"},
		},
		Proxy: Proxy{},
		LSP:   LSP{Servers: []LSPServer{}},
		MCP:   MCP{Servers: []MCPServer{}},

		Workspaces: DefaultWorkspaces(),
	}
}

// withLists gives p's unset lists an empty value, so that every list key
// has a default of its type (a file's list replaces it, never nil).
func withLists(p netpolicy.Config) netpolicy.Config {
	if p.Ports == nil {
		p.Ports = []int{}
	}
	if p.Allow == nil {
		p.Allow = []string{}
	}
	if p.Deny == nil {
		p.Deny = []string{}
	}
	return p
}

// Package config is dsh's typed configuration: every setting, its default
// and its validation. Loading (file, environment, flags) is done by
// cmd/dsh with viper; this package only describes and checks the result.
package config

import "github.com/dsh-dev/dsh/netpolicy"

// Config is the whole of dsh's configuration. Keys are the lower-case
// mapstructure names; nested keys join with dots (sandbox.limits.memory).
type Config struct {
	// Sandbox is how worlds are confined.
	Sandbox Sandbox `mapstructure:"sandbox"`
	// Network is the egress policy of processes inside a world.
	// It is a netpolicy.Config, read as it is (see keyName).
	// Default: deny everything (netpolicy.SandboxDefault).
	Network netpolicy.Config `mapstructure:"network"`
	// Web configures web_fetch and web_search.
	Web Web `mapstructure:"web"`
	// Proxy configures the egress proxy.
	Proxy Proxy `mapstructure:"proxy"`
	// LSP configures the language servers (lsp.go).
	LSP LSP `mapstructure:"lsp"`
	// MCP configures the MCP bridge (dsh mcp).
	MCP MCP `mapstructure:"mcp"`
	// Workspaces configures the workspaces of dsh serve --http
	// (workspaces.go).
	Workspaces Workspaces `mapstructure:"workspaces"`
}

// Sandbox configures the execution world's confinement.
type Sandbox struct {
	// Driver names a driver of cmd/dsh's driver list (native, docker,
	// host); Validate is given the list. Default native. host runs
	// unconfined and is only accepted with --unconfined.
	Driver string `mapstructure:"driver"`
	// Image is the docker driver's image. If empty, dsh/base:latest.
	Image string `mapstructure:"image"`
	// Limits are the cgroup limits of a world.
	Limits Limits `mapstructure:"limits"`
	// Masks are extra host paths hidden inside a world, beside the
	// built-in list of credential locations.
	Masks []string `mapstructure:"masks"`
	// Home is what a world sees of the host's home directories.
	Home Home `mapstructure:"home"`
	// UnixSockets lets a world's processes create unix sockets. Default
	// false: the world filter refuses them, which is what keeps every
	// host unix socket (in the workspace too) out of reach. With true, a
	// world can connect to any socket in its view its identity may write.
	UnixSockets bool `mapstructure:"unix_sockets"`
	// Mounts are extra bind mounts, SRC:DST[:ro|rw] with absolute paths
	// (sandbox.ParseBindArg); a source outside the workspace is
	// read-only unless :rw says otherwise. Flag -v/--mount adds to them.
	Mounts []string `mapstructure:"mounts"`
	// Root is the world's view of the host's root: host (read-only, with
	// masks) or minimal (programs, libraries and an allow-list of /etc;
	// native driver only). Default host. Flag --root.
	Root string `mapstructure:"root"`
	// Protected are workspace paths (relative; a trailing slash marks a
	// directory) read-only in every world, whether they exist or not,
	// replacing the built-in list (sandbox.DefaultProtected). Removing
	// an entry widens what a world may change; adding one narrows it.
	Protected []string `mapstructure:"protected"`
	// Workspace is how a world sees its workspace.
	Workspace Workspace `mapstructure:"workspace"`
}

// Workspace configures the workspace mode of worlds.
type Workspace struct {
	// Mode is rw (default), ro (read-only) or overlay (copy-on-write:
	// dsh run reports the change set, --apply copies it into the
	// workspace).
	Mode string `mapstructure:"mode"`
	// OverlaySize bounds what an overlay world can write: a size such as
	// 256MiB or 1G, at least 1MiB and at most the memory limit (the
	// upper layer's pages are charged to it). Empty (the default) is
	// half the memory limit, at most 1GiB.
	OverlaySize string `mapstructure:"overlay_size"`
}

// Home configures the home directories inside a world (native driver:
// docker shows no host home). Every home is hidden but for Allow.
type Home struct {
	// Allow are the "~/path" locations a world may read, read-only,
	// replacing the built-in list of toolchain locations
	// (sandbox.DefaultHomeAllow). An empty list hides the whole home.
	Allow []string `mapstructure:"allow"`
}

// Limits are per-world resource limits.
type Limits struct {
	// Memory is a size such as 512MiB or 2G, at least 8MiB. Default 2GiB.
	Memory string `mapstructure:"memory"`
	// Pids is the maximum number of processes, 1 to 4194304. Default 1024.
	Pids int `mapstructure:"pids"`
	// CPUs is the number of CPUs' worth of time, 0.01 to the host's CPUs.
	// Default 2, or every CPU of a host with fewer.
	CPUs float64 `mapstructure:"cpus"`
	// Zero, negative, NaN and infinite values are refused, never read
	// as "no limit".
	// Off runs worlds with no memory, pids or cpu limits, for hosts where
	// dsh cannot write cgroups (an unprivileged user on cgroup v1). It is
	// an explicit choice, never a fallback: filesystem, network and
	// syscall confinement are unchanged. Default false.
	Off bool `mapstructure:"off"`
	// Write is the write budget of a world: a size such as 4GiB (at least
	// 1MiB), or "unlimited". No file a world writes grows past it
	// (RLIMIT_FSIZE), and its tmpfs mounts hold no more together. It needs
	// no cgroup, so Off leaves it on. Default 4GiB.
	Write string `mapstructure:"write"`
}

// Web configures the web surface.
type Web struct {
	// Policy governs every fetch. Default: public addresses on ports 80
	// and 443 (netpolicy.WebDefault).
	Policy netpolicy.Config `mapstructure:"policy"`
	// Fetch limits.
	Fetch Fetch `mapstructure:"fetch"`
	// Search providers.
	Search Search `mapstructure:"search"`
}

// Fetch holds web_fetch's limits.
type Fetch struct {
	// Timeout is a duration. If empty, 30s.
	Timeout string `mapstructure:"timeout"`
	// MaxBytes is the response byte cap. If zero, 5,000,000.
	MaxBytes int64 `mapstructure:"max_bytes"`
	// MaxChars is the decoded character cap. If zero, 100,000.
	MaxChars int `mapstructure:"max_chars"`
	// MaxRedirects is the redirect hop budget. If zero, 5.
	MaxRedirects int `mapstructure:"max_redirects"`
}

// Search configures web_search.
type Search struct {
	// Provider is the configured provider id (searxng, brave). If empty,
	// the single usable provider is chosen; several are an error.
	Provider string `mapstructure:"provider"`
	// SearXNGURL is the base URL of a SearXNG instance.
	SearXNGURL string `mapstructure:"searxng_url"`
	// BraveKeyEnv names the environment variable holding the Brave Search
	// API key. If empty, BRAVE_API_KEY.
	BraveKeyEnv string `mapstructure:"brave_key_env"`
}

// Proxy configures dsh proxy.
type Proxy struct {
	// Listen is host:port or unix:PATH.
	Listen string `mapstructure:"listen"`
	// Audit is a file path, or - for stdout. If empty, no audit log.
	Audit string `mapstructure:"audit"`
	// Metrics is the host:port of the Prometheus listener. If empty, none.
	Metrics string `mapstructure:"metrics"`
}

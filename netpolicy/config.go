package netpolicy

// Config is a policy as written in configuration: dsh's configuration
// (network, web.policy) and policy files decode into it directly.
type Config struct {
	// Default is "deny" or "public" (any globally reachable address).
	// If empty, deny is used.
	Default string
	// Ports are the ports allowed for destinations allowed only by
	// Default "public". Empty means any port.
	Ports []int
	// Allow entries: host, *.host, host:port, *.host:port, IP, IP:port,
	// [IPv6]:port, CIDR, or * (anything) and *:port. "*.example.org"
	// matches names below example.org, not example.org itself. Only IP,
	// IP:port and CIDR entries can allow a special-purpose address; a
	// host entry never unlocks a private address its name resolves to.
	// Addresses are written canonically (127.0.0.1, not 127.1) and CIDRs
	// without host bits.
	Allow []string
	// Deny entries, in the same forms as Allow. An address or CIDR entry
	// also denies the IPv6 forms that carry the address (mapped, NAT64,
	// 6to4, Teredo, compatible, SIIT).
	Deny []string
}

// WebDefault is the policy of web fetches when none is configured:
// globally reachable addresses on ports 80 and 443.
func WebDefault() Config { return Config{Default: "public", Ports: []int{80, 443}} }

// SandboxDefault is the egress policy of a world when none is
// configured: nothing.
func SandboxDefault() Config { return Config{Default: "deny"} }

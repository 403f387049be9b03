package bridge

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of a Server, as the reference client has them where it has
// them at all.
const (
	// DefaultCallTimeout bounds one tools/call.
	DefaultCallTimeout = 60 * time.Second
	// DefaultStartupTimeout bounds one connection attempt: starting the
	// server, the MCP handshake and the first complete sync.
	DefaultStartupTimeout = 30 * time.Second
	// DefaultInitialDelay is the first reconnect delay; each next attempt
	// of an outage doubles it, up to DefaultMaxDelay.
	DefaultInitialDelay = 500 * time.Millisecond
	// DefaultMaxDelay caps the reconnect delay. A connection that stays
	// up this long resets the outage budget.
	DefaultMaxDelay = 30 * time.Second
	// DefaultMaxAttempts is the number of reconnect attempts one outage
	// may use before the server is given up.
	DefaultMaxAttempts = 10
	// StopTimeout bounds stopping a failed connection's process. One
	// that has not ended by then stops the supervisor, so that two
	// processes of one server never run at once.
	StopTimeout = 5 * time.Second
	// PinnedProtocolVersion is the protocol version offered to stdio
	// upstreams unless Server.ProtocolVersion says otherwise: the
	// go-sdk's default probes the 2026-07-28 server/discover first,
	// which many stdio servers never answer.
	PinnedProtocolVersion = "2025-11-25"
)

// Server is one upstream MCP server as the Bridge runs it.
type Server struct {
	// Name is the local identity of the server, ^[A-Za-z0-9_-]{1,32}$,
	// unique in a Bridge. It namespaces the public names of its tools.
	Name string
	// Upstream starts connections to the server. Required.
	Upstream Upstream
	// ToolAllow, if not empty, keeps only the tools whose raw name
	// matches one of its path.Match patterns; ToolDeny then drops those
	// matching one of its patterns.
	ToolAllow, ToolDeny []string
	// CallTimeout bounds one tools/call. If zero, DefaultCallTimeout.
	CallTimeout time.Duration
	// StartupTimeout bounds one connection attempt (start, handshake,
	// first sync). If zero, DefaultStartupTimeout.
	StartupTimeout time.Duration
	// ProtocolVersion is offered in initialize. If empty, the upstream's
	// choice (PinnedProtocolVersion for a stdio Command), else the
	// go-sdk's latest.
	ProtocolVersion string
	// Required makes Bridge.Start fail when the server is not ready in
	// time; otherwise it starts without the server's tools.
	Required bool
	// Lazy defers the first connection to the first call (or Connect).
	Lazy bool
	// Reconnect is the supervisor's budget.
	Reconnect Reconnect
	// CacheKey identifies the server's configuration for the catalog
	// cache (Options.CacheDir): a catalog cached under another key is
	// not used. If empty, the server's catalog is not cached.
	CacheKey string
}

// Reconnect configures the reconnect supervisor.
type Reconnect struct {
	// Disabled gives a server up at its first lost connection.
	Disabled bool
	// InitialDelay is the delay before the first attempt of an outage;
	// attempt n waits min(MaxDelay, InitialDelay*2^(n-1)). If zero,
	// DefaultInitialDelay.
	InitialDelay time.Duration
	// MaxDelay caps the delay, and a connection up this long resets the
	// budget. If zero, DefaultMaxDelay.
	MaxDelay time.Duration
	// MaxAttempts is the attempts one outage may use. If zero,
	// DefaultMaxAttempts.
	MaxAttempts int
}

func (r Reconnect) withDefaults() Reconnect {
	if r.InitialDelay <= 0 {
		r.InitialDelay = DefaultInitialDelay
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = DefaultMaxDelay
	}
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	return r
}

// Delay is the wait before reconnect attempt n (1-based) of an outage.
func (r Reconnect) Delay(n int) time.Duration {
	r = r.withDefaults()
	d := r.InitialDelay
	for i := 1; i < n && d < r.MaxDelay; i++ {
		d *= 2
	}
	return min(d, r.MaxDelay)
}

// Upstream starts connections to one server.
type Upstream interface {
	// Start starts one connection: for a stdio server, its process.
	// ctx bounds the start only.
	Start(ctx context.Context) (*Link, error)
}

// Link is one connection to a server.
type Link struct {
	// Transport is what the go-sdk client connects over.
	Transport mcp.Transport
	// Stop ends what Start started (the process) and returns once it has
	// ended, or ctx's error if it had not by then. May be nil.
	Stop func(ctx context.Context) error
	// Diagnose describes how the connection's process is doing for an
	// error message: its exit status, the tail of its stderr. May be nil.
	Diagnose func() string
}

// protocolPinner is an Upstream with a protocol version of its own.
type protocolPinner interface{ protocolVersion() string }

func (s *Server) callTimeout() time.Duration {
	if s.CallTimeout > 0 {
		return s.CallTimeout
	}
	return DefaultCallTimeout
}

func (s *Server) startupTimeout() time.Duration {
	if s.StartupTimeout > 0 {
		return s.StartupTimeout
	}
	return DefaultStartupTimeout
}

func (s *Server) protocolVersion() string {
	if s.ProtocolVersion != "" {
		return s.ProtocolVersion
	}
	if p, ok := s.Upstream.(protocolPinner); ok {
		return p.protocolVersion()
	}
	return ""
}

// allowed reports whether the tool lists keep raw.
func (s *Server) allowed(raw string) bool {
	if len(s.ToolAllow) > 0 && !matchAny(s.ToolAllow, raw) {
		return false
	}
	return !matchAny(s.ToolDeny, raw)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// check reports the problems of s, each naming the field.
func (s *Server) check(prefix string) []string {
	var out []string
	if !ValidServerName(s.Name) {
		out = append(out, fmt.Sprintf("%sname: %q must be 1 to 32 characters of A-Z, a-z, 0-9, _ and -", prefix, s.Name))
	}
	if s.Upstream == nil {
		out = append(out, prefix+"upstream: none given")
	}
	for i, p := range s.ToolAllow {
		if _, err := path.Match(p, ""); err != nil {
			out = append(out, fmt.Sprintf("%stools.allow[%d]: %q is not a valid pattern", prefix, i, p))
		}
	}
	for i, p := range s.ToolDeny {
		if _, err := path.Match(p, ""); err != nil {
			out = append(out, fmt.Sprintf("%stools.deny[%d]: %q is not a valid pattern", prefix, i, p))
		}
	}
	return out
}

package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure New.
type Options struct {
	// Logger receives the supervisor's records. If nil, they are
	// discarded.
	Logger *slog.Logger
	// Version is the client version sent in initialize. If empty, "dev".
	Version string
	// CacheDir, if set, keeps each server's last good catalog (one file
	// per server and Server.CacheKey), offered before the server is up.
	CacheDir string
}

// Bridge runs a set of upstream servers and offers their tools under
// public names. Its methods are safe for concurrent use.
type Bridge struct {
	log     *slog.Logger
	impl    *mcp.Implementation
	servers []*server // in configuration order

	mu     sync.Mutex // guards the fields below
	tools  map[string]*Tool
	subs   map[int]func(Event)
	nextID int
	closed bool
}

// Tool is a tool of an upstream server as the Bridge offers it.
type Tool struct {
	// Public is the model-facing name (PublicName).
	Public string
	// Server is the server's configured name.
	Server string
	// Def is the server's definition; Def.Name is the raw name, the only
	// one sent on the wire.
	Def *mcp.Tool

	srv *server
	// out is Def's output schema, resolved; nil when the tool has none
	// or it uses vocabulary the validator does not support.
	out *jsonschema.Resolved
}

// EventKind says what changed.
type EventKind int

const (
	// ToolsChanged: a server's tools were replaced (a new generation, or
	// none after the server was given up).
	ToolsChanged EventKind = iota
	// ResourcesChanged: a server's resources were replaced.
	ResourcesChanged
	// PromptsChanged: a server's prompts were replaced.
	PromptsChanged
	// StateChanged: a server's State changed.
	StateChanged
)

func (k EventKind) String() string {
	switch k {
	case ToolsChanged:
		return "tools"
	case ResourcesChanged:
		return "resources"
	case PromptsChanged:
		return "prompts"
	case StateChanged:
		return "state"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is a change of one server.
type Event struct {
	Server string
	Kind   EventKind
}

// New checks servers (every problem at once) and returns a Bridge that
// has started nothing yet: Start connects the eager servers.
func New(servers []Server, opts *Options) (*Bridge, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	b := &Bridge{
		log:   log,
		impl:  &mcp.Implementation{Name: "dsh", Version: o.Version},
		tools: map[string]*Tool{},
		subs:  map[int]func(Event){},
	}
	var problems []string
	seen := map[string]int{}
	for i := range servers {
		s := servers[i]
		prefix := fmt.Sprintf("servers[%d].", i)
		problems = append(problems, s.check(prefix)...)
		if j, dup := seen[s.Name]; dup && s.Name != "" {
			problems = append(problems, fmt.Sprintf("%sname: %q is already the name of servers[%d]; server names must be unique", prefix, s.Name, j))
		}
		seen[s.Name] = i
		b.servers = append(b.servers, newServer(b, s))
	}
	if len(problems) > 0 {
		return nil, &ConfigError{Problems: problems}
	}
	if o.CacheDir != "" {
		for _, s := range b.servers {
			s.loadCache(o.CacheDir)
		}
	}
	return b, nil
}

// Start starts every eager server and waits, each at most its
// StartupTimeout, until it is ready or has failed. It fails only for a
// Required server that is not ready, naming why; the others go on
// connecting in the background.
func (b *Bridge) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(b.servers))
	for i, s := range b.servers {
		if s.cfg.Lazy {
			continue
		}
		s.ensureStarted()
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The attempt ends at its own deadline; the margin lets its
			// reason arrive.
			wctx, cancel := context.WithTimeout(ctx, s.cfg.startupTimeout()+time.Second)
			defer cancel()
			if err := s.waitFirst(wctx); err != nil && s.cfg.Required {
				errs[i] = fmt.Errorf("required MCP server %s is not ready: %w", s.cfg.Name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Connect starts server name if it has not been started (a Lazy one) and
// waits until it is ready, or ctx ends.
func (b *Bridge) Connect(ctx context.Context, name string) error {
	s := b.server(name)
	if s == nil {
		return fmt.Errorf("bridge: no MCP server %q; configured: %s", name, strings.Join(b.names(), ", "))
	}
	s.ensureStarted()
	_, err := s.waitReady(ctx)
	return err
}

func (b *Bridge) server(name string) *server {
	for _, s := range b.servers {
		if s.cfg.Name == name {
			return s
		}
	}
	return nil
}

func (b *Bridge) names() []string {
	var n []string
	for _, s := range b.servers {
		n = append(n, s.cfg.Name)
	}
	return n
}

// Tools returns every tool offered, sorted by public name.
func (b *Bridge) Tools() []Tool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Tool, 0, len(b.tools))
	for _, t := range b.tools {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Public < out[j].Public })
	return out
}

// Subscribe calls f after every change, from the goroutine that made
// it; f must not block. The returned function ends the subscription.
func (b *Bridge) Subscribe(f func(Event)) (cancel func()) {
	b.mu.Lock()
	id := b.nextID
	b.nextID++
	b.subs[id] = f
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.subs, id)
		b.mu.Unlock()
	}
}

func (b *Bridge) notify(ev Event) {
	b.mu.Lock()
	subs := make([]func(Event), 0, len(b.subs))
	for _, f := range b.subs {
		subs = append(subs, f)
	}
	b.mu.Unlock()
	for _, f := range subs {
		f(ev)
	}
}

// install replaces s's tools in the registry with gen, all or nothing: a
// public name another server holds rolls s back to no tools at all.
func (b *Bridge) install(s *server, gen map[string]*Tool) error {
	b.mu.Lock()
	for name, t := range b.tools {
		if t.srv == s {
			delete(b.tools, name)
		}
	}
	var conflict error
	for _, name := range sortedKeys(gen) {
		if other, ok := b.tools[name]; ok {
			conflict = fmt.Errorf("tool %q of server %s has the public name %s, which server %s's tool %q holds; rename one of the servers",
				gen[name].Def.Name, s.cfg.Name, name, other.Server, other.Def.Name)
			break
		}
	}
	if conflict == nil {
		for name, t := range gen {
			b.tools[name] = t
		}
	}
	b.mu.Unlock()
	b.notify(Event{Server: s.cfg.Name, Kind: ToolsChanged})
	return conflict
}

// uninstall removes s's tools.
func (b *Bridge) uninstall(s *server) {
	b.mu.Lock()
	n := 0
	for name, t := range b.tools {
		if t.srv == s {
			delete(b.tools, name)
			n++
		}
	}
	b.mu.Unlock()
	if n > 0 {
		b.notify(Event{Server: s.cfg.Name, Kind: ToolsChanged})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Close stops every server (closing sessions, stopping processes,
// closing the upstreams that are io.Closers) and waits for them. Later
// calls return ErrClosed.
func (b *Bridge) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.closed = true
	b.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(b.servers))
	for i, s := range b.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (b *Bridge) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

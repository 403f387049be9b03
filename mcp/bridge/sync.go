package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxPages bounds a paginated list: a server whose cursors never end
// fails the sync instead of looping.
const maxPages = 1000

// catalog is a server's current generation of resources and prompts
// (its tools live in the Bridge's registry).
type catalog struct {
	resources []*mcp.Resource
	prompts   []*mcp.Prompt
}

type kinds uint8

const (
	kindTools kinds = 1 << iota
	kindResources
	kindPrompts
	allKinds = kindTools | kindResources | kindPrompts
)

var errStale = errors.New("bridge: the connection was replaced during the sync")

// ListError is a tool list the bridge refused: the last good generation
// stays.
type ListError struct {
	Server string
	Msg    string
}

func (e *ListError) Error() string {
	return fmt.Sprintf("MCP server %s sent an invalid tool list: %s; its previous tools stay", e.Server, e.Msg)
}

// resync re-syncs after a list_changed notification of connection
// epoch; a notification of an older connection is ignored.
func (s *server) resync(epoch uint64, kind EventKind) {
	s.mu.Lock()
	sess, cur := s.sess, s.epoch
	s.mu.Unlock()
	if sess == nil || cur != epoch {
		s.b.log.Debug("MCP list_changed of a replaced connection ignored", "server", s.cfg.Name, "kind", kind.String())
		return
	}
	s.b.log.Debug("MCP list_changed: re-sync", "server", s.cfg.Name, "kind", kind.String())
	k := map[EventKind]kinds{ToolsChanged: kindTools, ResourcesChanged: kindResources, PromptsChanged: kindPrompts}[kind]
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.startupTimeout())
	defer cancel()
	if err := s.sync(ctx, sess, epoch, k); err != nil && !errors.Is(err, errStale) {
		s.b.log.Warn("MCP re-sync failed; the previous generation stays", "server", s.cfg.Name, "err", err)
	}
}

// sync fetches every page of the lists in k and, only if all are
// complete and valid, installs them as the next generation. Syncs of a
// server are serialised; a sync whose connection was replaced installs
// nothing.
func (s *server) sync(ctx context.Context, sess *mcp.ClientSession, epoch uint64, k kinds) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	caps := sess.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}

	var gen map[string]*Tool
	if k&kindTools != 0 && caps.Tools != nil {
		tools, err := listAll(ctx, func(c string) ([]*mcp.Tool, string, error) {
			r, err := sess.ListTools(ctx, &mcp.ListToolsParams{Cursor: c})
			if err != nil {
				return nil, "", err
			}
			return r.Tools, r.NextCursor, nil
		})
		if err != nil {
			return fmt.Errorf("listing the tools of MCP server %s: %w", s.cfg.Name, err)
		}
		if gen, err = s.generation(tools); err != nil {
			return err
		}
	} else if k&kindTools != 0 {
		gen = map[string]*Tool{}
	}
	var cat catalog
	s.mu.Lock()
	cat = s.catalog
	s.mu.Unlock()
	if k&kindResources != 0 {
		cat.resources = nil
		if caps.Resources != nil {
			res, err := listAll(ctx, func(c string) ([]*mcp.Resource, string, error) {
				r, err := sess.ListResources(ctx, &mcp.ListResourcesParams{Cursor: c})
				if err != nil {
					return nil, "", err
				}
				return r.Resources, r.NextCursor, nil
			})
			if err != nil {
				return fmt.Errorf("listing the resources of MCP server %s: %w", s.cfg.Name, err)
			}
			cat.resources = res
		}
	}
	if k&kindPrompts != 0 {
		cat.prompts = nil
		if caps.Prompts != nil {
			ps, err := listAll(ctx, func(c string) ([]*mcp.Prompt, string, error) {
				r, err := sess.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: c})
				if err != nil {
					return nil, "", err
				}
				return r.Prompts, r.NextCursor, nil
			})
			if err != nil {
				return fmt.Errorf("listing the prompts of MCP server %s: %w", s.cfg.Name, err)
			}
			cat.prompts = ps
		}
	}

	s.mu.Lock()
	if s.epoch != epoch || s.state == Closed {
		s.mu.Unlock()
		return errStale
	}
	s.catalog = cat
	s.mu.Unlock()
	if k&kindResources != 0 {
		s.b.notify(Event{Server: s.cfg.Name, Kind: ResourcesChanged})
	}
	if k&kindPrompts != 0 {
		s.b.notify(Event{Server: s.cfg.Name, Kind: PromptsChanged})
	}
	if gen != nil {
		if err := s.b.install(s, gen); err != nil {
			s.b.log.Error("MCP tool registration conflict; the server has no tools", "server", s.cfg.Name, "err", err)
			return err
		}
	}
	s.cacheLive(gen, k)
	return nil
}

// loadCache offers the server's cached catalog until it is up.
func (s *server) loadCache(dir string) {
	if s.cfg.CacheKey == "" {
		return
	}
	s.cachePath = cachePath(dir, s.cfg.Name, s.cfg.CacheKey)
	c, err := loadCatalog(s.cachePath)
	if err != nil {
		if !os.IsNotExist(err) {
			s.b.log.Warn("MCP catalog cache unreadable; ignored", "server", s.cfg.Name, "err", err)
		}
		return
	}
	gen, err := s.generation(c.Tools)
	if err != nil {
		s.b.log.Warn("MCP catalog cache invalid; ignored", "server", s.cfg.Name, "err", err)
		return
	}
	if err := s.b.install(s, gen); err != nil {
		s.b.log.Warn("MCP catalog cache conflicts; ignored", "server", s.cfg.Name, "err", err)
		return
	}
	s.mu.Lock()
	s.cached = c
	s.catalog = catalog{resources: c.Resources, prompts: c.Prompts}
	s.mu.Unlock()
}

// cacheLive writes the live catalog to the cache and, at the first live
// sync after a cached catalog was offered, records how they differ:
// drift is reported (Status.Drift, the log), never applied silently.
func (s *server) cacheLive(gen map[string]*Tool, k kinds) {
	if s.cachePath == "" || k != allKinds {
		return
	}
	var tools []*mcp.Tool
	for _, name := range sortedKeys(gen) {
		tools = append(tools, gen[name].Def)
	}
	s.mu.Lock()
	cat := s.catalog
	cached := s.cached
	s.cached = nil
	s.mu.Unlock()
	if cached != nil {
		var cachedAllowed []*mcp.Tool
		for _, t := range cached.Tools {
			if s.cfg.allowed(t.Name) {
				cachedAllowed = append(cachedAllowed, t)
			}
		}
		if d := drift(cachedAllowed, tools); len(d) > 0 {
			s.b.log.Warn("MCP server's live tools differ from its cached catalog", "server", s.cfg.Name, "drift", d)
			s.mu.Lock()
			s.drift = d
			s.mu.Unlock()
		}
	}
	c := &cachedCatalog{Version: cacheVersion, Server: s.cfg.Name, Tools: tools, Resources: cat.resources, Prompts: cat.prompts}
	if err := storeCatalog(s.cachePath, c); err != nil {
		s.b.log.Warn("writing the MCP catalog cache", "server", s.cfg.Name, "err", err)
	}
}

// generation turns a complete tool list into the next generation: the
// allowed tools under their public names. A name listed twice makes the
// list invalid.
func (s *server) generation(tools []*mcp.Tool) (map[string]*Tool, error) {
	gen := map[string]*Tool{}
	raws := map[string]bool{}
	for _, t := range tools {
		if raws[t.Name] {
			return nil, &ListError{Server: s.cfg.Name, Msg: fmt.Sprintf("tool %q is listed twice", t.Name)}
		}
		raws[t.Name] = true
		if !s.cfg.allowed(t.Name) {
			continue
		}
		pub := PublicName(s.cfg.Name, t.Name)
		if prev, dup := gen[pub]; dup {
			return nil, &ListError{Server: s.cfg.Name, Msg: fmt.Sprintf("tools %q and %q have the same public name %s", prev.Def.Name, t.Name, pub)}
		}
		gen[pub] = &Tool{Public: pub, Server: s.cfg.Name, Def: t, srv: s, out: resolveSchema(t.OutputSchema)}
	}
	return gen, nil
}

// listAll drains a paginated list.
func listAll[T any](ctx context.Context, page func(cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	cursor := ""
	for range maxPages {
		items, next, err := page(cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("more than %d pages", maxPages)
}

// resolveSchema resolves an output schema for validation; nil when there
// is none or the validator cannot use it (the result then goes
// unchecked, as the reference does).
func resolveSchema(schema any) *jsonschema.Resolved {
	if schema == nil {
		return nil
	}
	data, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(data, &js); err != nil {
		return nil
	}
	r, err := js.Resolve(nil)
	if err != nil {
		return nil
	}
	return r
}

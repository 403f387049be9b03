package web

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Source is one search hit.
type Source struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet,omitempty"`
}

// Provider is a search backend.
type Provider interface {
	// ID is the provider's stable name, as configured (web.search.provider).
	ID() string
	// Available returns why the provider cannot be used now, or nil. It
	// checks local configuration only and never touches the network.
	Available() error
	// Search runs one query and returns hits best first, at most max.
	// Errors should be *Error.
	Search(ctx context.Context, query string, max int) ([]Source, error)
}

// Registry holds the search providers and picks one per call.
type Registry struct {
	byID map[string]Provider
	ids  []string // sorted, for messages that do not depend on registration order
}

// NewRegistry returns a registry of providers. Two providers with the
// same id fail with WEB_DUPLICATE_PROVIDER.
func NewRegistry(providers ...Provider) (*Registry, error) {
	r := &Registry{byID: make(map[string]Provider, len(providers))}
	for _, p := range providers {
		id := p.ID()
		if _, dup := r.byID[id]; dup {
			return nil, newError(CodeDuplicateProvider, "", "search provider id %q is registered twice; each provider needs its own id", id)
		}
		r.byID[id] = p
		r.ids = append(r.ids, id)
	}
	slices.Sort(r.ids)
	return r, nil
}

// Select picks the provider for one call, deterministically:
// the configured id if set (missing or unavailable is an error, never a
// fallback); else the single available provider; else an error naming
// the choices. Availability is checked now, at every call.
func (r *Registry) Select(configured string) (Provider, error) {
	if configured != "" {
		p, ok := r.byID[configured]
		if !ok {
			return nil, newError(CodeConfiguredMissing, "", "search provider %q is configured but not known; known providers: %s", configured, r.list(r.ids))
		}
		if err := p.Available(); err != nil {
			return nil, wrapError(CodeConfiguredUnavailable, "", err, "search provider %q is configured but cannot be used", configured)
		}
		return p, nil
	}
	var usable []string
	var why []string
	for _, id := range r.ids {
		if err := r.byID[id].Available(); err != nil {
			why = append(why, fmt.Sprintf("%s: %v", id, err))
			continue
		}
		usable = append(usable, id)
	}
	switch len(usable) {
	case 1:
		return r.byID[usable[0]], nil
	case 0:
		if len(why) == 0 {
			return nil, newError(CodeUnavailable, "", "no search provider is registered")
		}
		return nil, newError(CodeUnavailable, "", "no search provider is usable (%s); configure one", strings.Join(why, "; "))
	}
	return nil, newError(CodeAmbiguous, "", "several search providers are usable (%s); choose one with web.search.provider or --provider", strings.Join(usable, ", "))
}

func (r *Registry) list(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

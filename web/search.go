package web

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
)

// Limits of one web_search call, as in the reference.
const (
	MaxQueries       = 4
	MaxSearchResults = 8
	// MaxQueryChars bounds one query; providers reject far less anyway.
	MaxQueryChars = 500
)

// SearchResult is the answer to one web_search call.
type SearchResult struct {
	// Provider is the id of the provider that answered.
	Provider string `json:"provider"`
	// Queries are the queries that ran, duplicates removed.
	Queries []string `json:"queries"`
	// Sources are the merged hits, at most MaxSearchResults.
	Sources []Source `json:"sources"`
}

// Search selects a provider (see Registry.Select) and runs the queries.
func (r *Registry) Search(ctx context.Context, configured string, queries []string) (*SearchResult, error) {
	qs, err := normalizeQueries(queries)
	if err != nil {
		return nil, err
	}
	p, err := r.Select(configured)
	if err != nil {
		return nil, err
	}
	return runQueries(ctx, p, qs)
}

// normalizeQueries checks the 1-4 rule and drops duplicates (compared
// with whitespace collapsed and case folded), keeping first occurrences.
func normalizeQueries(queries []string) ([]string, error) {
	if len(queries) < 1 || len(queries) > MaxQueries {
		return nil, newError(CodeInvalidQuery, "", "web_search takes 1 to %d queries, got %d", MaxQueries, len(queries))
	}
	seen := make(map[string]bool, len(queries))
	var out []string
	for i, q := range queries {
		q = strings.Join(strings.Fields(q), " ")
		if q == "" {
			return nil, newError(CodeInvalidQuery, "", "query %d is empty", i+1)
		}
		if n := charCount(q); n > MaxQueryChars {
			return nil, newError(CodeInvalidQuery, "", "query %d is %d characters, over the limit of %d", i+1, n, MaxQueryChars)
		}
		key := strings.ToLower(q)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, q)
	}
	return out, nil
}

// runQueries runs every query at once and merges the hits. Any failing
// query fails the call: a silent partial answer would hide an outage.
func runQueries(ctx context.Context, p Provider, queries []string) (*SearchResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lists := make([][]Source, len(queries))
	errs := make([]error, len(queries))
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Go(func() {
			lists[i], errs[i] = p.Search(ctx, q, MaxSearchResults)
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	// Report the first query's own error, not a sibling's cancellation.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || CodeOf(first) == CodeAborted && CodeOf(err) != CodeAborted) {
			first = err
		}
	}
	if first != nil {
		var we *Error
		if !errors.As(first, &we) {
			first = wrapError(CodeProviderError, "", first, "search provider %q failed", p.ID())
		}
		return nil, first
	}
	return &SearchResult{Provider: p.ID(), Queries: queries, Sources: mergeByRank(lists, MaxSearchResults)}, nil
}

// mergeByRank interleaves the lists round-robin (every list's first hit,
// then every second hit, ...) so each query is represented, skipping URLs
// already taken, until max hits.
func mergeByRank(lists [][]Source, max int) []Source {
	out := []Source{}
	seen := make(map[string]bool)
	for rank := 0; len(out) < max; rank++ {
		more := false
		for _, l := range lists {
			if rank >= len(l) {
				continue
			}
			more = true
			s := l[rank]
			key := urlKey(s.URL)
			if key == "" || seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, s)
			if len(out) == max {
				break
			}
		}
		if !more {
			break
		}
	}
	return out
}

// urlKey is the identity of a hit's URL: scheme and host case-folded,
// fragment dropped. An unparsable URL is its own trimmed text.
func urlKey(raw string) string {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

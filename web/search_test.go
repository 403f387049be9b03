package web

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func hits(prefix string, n int) []Source {
	var out []Source
	for i := range n {
		out = append(out, Source{Title: fmt.Sprintf("%s%d", prefix, i), URL: fmt.Sprintf("https://%s.example/%d", prefix, i)})
	}
	return out
}

func urls(s []Source) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.URL)
	}
	return out
}

func TestNormalizeQueries(t *testing.T) {
	got, err := normalizeQueries([]string{" go  generics ", "Go generics", "rust", "go generics"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"go generics", "rust"}, got); diff != "" {
		t.Errorf("normalizeQueries (-want +got):\n%s", diff)
	}
	for _, bad := range [][]string{nil, {}, {"a", "b", "c", "d", "e"}, {"a", "  "}, {string(make([]byte, MaxQueryChars+1))}} {
		if _, err := normalizeQueries(bad); CodeOf(err) != CodeInvalidQuery {
			t.Errorf("normalizeQueries(%q) error = %v, want %s", bad, err, CodeInvalidQuery)
		}
	}
}

func TestMergeByRank(t *testing.T) {
	a, b := hits("a", 5), hits("b", 2)
	// b's second hit repeats a's first (case of host and fragment differ).
	b[1].URL = "https://A.example/0#frag"
	got := urls(mergeByRank([][]Source{a, b}, 8))
	want := []string{
		"https://a.example/0", "https://b.example/0",
		"https://a.example/1", // b[1] is a duplicate of a[0]
		"https://a.example/2", "https://a.example/3", "https://a.example/4",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mergeByRank (-want +got):\n%s", diff)
	}
}

func TestMergeByRankCaps(t *testing.T) {
	got := mergeByRank([][]Source{hits("a", 8), hits("b", 8), hits("c", 8)}, MaxSearchResults)
	want := []string{
		"https://a.example/0", "https://b.example/0", "https://c.example/0",
		"https://a.example/1", "https://b.example/1", "https://c.example/1",
		"https://a.example/2", "https://b.example/2",
	}
	if diff := cmp.Diff(want, urls(got)); diff != "" {
		t.Errorf("mergeByRank (-want +got):\n%s", diff)
	}
	if got := mergeByRank(nil, 8); got == nil || len(got) != 0 {
		t.Errorf("mergeByRank(nil) = %#v, want empty non-nil", got)
	}
}

func TestRegistrySearch(t *testing.T) {
	p := &fakeProvider{id: "f", hits: map[string][]Source{"x": hits("x", 3), "y": hits("y", 3)}}
	r, _ := NewRegistry(p)
	res, err := r.Search(context.Background(), "", []string{"x", "y", "X"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Provider != "f" || len(res.Queries) != 2 || len(res.Sources) != 6 {
		t.Errorf("Search = %+v; want provider f, 2 queries, 6 sources", res)
	}
	if res.Sources[0].URL != "https://x.example/0" || res.Sources[1].URL != "https://y.example/0" {
		t.Errorf("Search sources not interleaved by rank: %v", urls(res.Sources))
	}
}

func TestRegistrySearchFailure(t *testing.T) {
	p := &fakeProvider{id: "f", hits: map[string][]Source{"x": hits("x", 3)},
		err: map[string]error{"y": fmt.Errorf("boom")}}
	r, _ := NewRegistry(p)
	_, err := r.Search(context.Background(), "", []string{"x", "y"})
	if CodeOf(err) != CodeProviderError {
		t.Fatalf("Search with a failing query = %v, want %s", err, CodeProviderError)
	}
	// Bad queries fail before a provider is chosen.
	r0, _ := NewRegistry()
	if _, err := r0.Search(context.Background(), "", nil); CodeOf(err) != CodeInvalidQuery {
		t.Errorf("Search(no queries) = %v, want %s", err, CodeInvalidQuery)
	}
}

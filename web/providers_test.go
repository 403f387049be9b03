package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeSearXNG serves SearXNG's JSON API under /searx on loopback.
func fakeSearXNG(t *testing.T, jsonAllowed bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/searx/search" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("format") != "json" || !jsonAllowed {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		q := r.URL.Query().Get("q")
		if q == "broken" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"results": [`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"query": q,
			"results": []map[string]any{
				{"url": "https://one.example/" + q, "title": "One &amp; " + q, "content": "first", "engine": "x"},
				{"url": "", "title": "no url"},
				{"url": "https://two.example/", "title": "Two", "content": "second"},
			},
			"answers": []string{},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSearXNG(t *testing.T) {
	srv := fakeSearXNG(t, true)
	p := &SearXNG{BaseURL: srv.URL + "/searx"}
	if err := p.Available(); err != nil {
		t.Fatalf("Available() = %v", err)
	}
	got, err := p.Search(context.Background(), "go fmt", 8)
	if err != nil {
		t.Fatal(err)
	}
	want := []Source{
		{Title: "One & go fmt", URL: "https://one.example/go fmt", Snippet: "first"},
		{Title: "Two", URL: "https://two.example/", Snippet: "second"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Search (-want +got):\n%s", diff)
	}
	if got, _ := p.Search(context.Background(), "q", 1); len(got) != 1 {
		t.Errorf("Search(max 1) returned %d hits", len(got))
	}
	if _, err := p.Search(context.Background(), "broken", 8); CodeOf(err) != CodeProviderError || !strings.Contains(err.Error(), "malformed JSON") {
		t.Errorf("Search(truncated JSON) = %v, want %s malformed JSON", err, CodeProviderError)
	}
}

func TestSearXNGJSONDisabled(t *testing.T) {
	srv := fakeSearXNG(t, false)
	p := &SearXNG{BaseURL: srv.URL + "/searx"}
	_, err := p.Search(context.Background(), "q", 8)
	if CodeOf(err) != CodeProviderError || !strings.Contains(err.Error(), "search.formats") {
		t.Errorf("Search against json-disabled instance = %v, want %s naming search.formats", err, CodeProviderError)
	}
}

func TestSearXNGAvailable(t *testing.T) {
	for _, base := range []string{"", "ftp://x", "not a url", "http://"} {
		if err := (&SearXNG{BaseURL: base}).Available(); err == nil {
			t.Errorf("SearXNG{BaseURL: %q}.Available() = nil, want an error", base)
		}
	}
}

func TestSearXNGUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there now (loopback)
	_, err := (&SearXNG{BaseURL: base}).Search(context.Background(), "q", 8)
	if CodeOf(err) != CodeProviderError {
		t.Errorf("Search against a closed port = %v, want %s", err, CodeProviderError)
	}
}

func TestSearchCancelled(t *testing.T) {
	srv := fakeSearXNG(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&SearXNG{BaseURL: srv.URL + "/searx"}).Search(ctx, "q", 8)
	if CodeOf(err) != CodeAborted {
		t.Errorf("Search with a cancelled context = %v, want %s", err, CodeAborted)
	}
}

// fakeBrave serves the Brave web search API on loopback.
func fakeBrave(t *testing.T, key string) (*httptest.Server, *http.Request) {
	t.Helper()
	var last http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last = *r.Clone(context.Background())
		if r.URL.Path != "/res/v1/web/search" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("X-Subscription-Token") != key {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"type":"search","query":{"original":"x"},"web":{"type":"search","results":[
			{"title":"The <strong>Go</strong> site","url":"https://go.dev/","description":"Build <strong>simple</strong>, secure"},
			{"title":"Tour","url":"https://go.dev/tour/","description":"A tour"}]}}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &last
}

func TestBrave(t *testing.T) {
	srv, last := fakeBrave(t, "k3y")
	env := map[string]string{"MY_BRAVE": "k3y"}
	p := &Brave{
		KeyEnv:    "MY_BRAVE",
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		BaseURL:   srv.URL + "/res/v1/web/search",
	}
	if err := p.Available(); err != nil {
		t.Fatalf("Available() = %v", err)
	}
	got, err := p.Search(context.Background(), "golang", 8)
	if err != nil {
		t.Fatal(err)
	}
	want := []Source{
		{Title: "The Go site", URL: "https://go.dev/", Snippet: "Build simple, secure"},
		{Title: "Tour", URL: "https://go.dev/tour/", Snippet: "A tour"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Search (-want +got):\n%s", diff)
	}
	if q := last.URL.Query(); q.Get("q") != "golang" || q.Get("count") != "8" {
		t.Errorf("request query = %v, want q=golang count=8", q)
	}
	if a := last.Header.Get("Accept"); a != "application/json" {
		t.Errorf("Accept = %q", a)
	}

	env["MY_BRAVE"] = "wrong"
	if _, err := p.Search(context.Background(), "golang", 8); CodeOf(err) != CodeProviderError || !strings.Contains(err.Error(), "MY_BRAVE") {
		t.Errorf("Search with a bad key = %v, want %s naming MY_BRAVE", err, CodeProviderError)
	}
	if strings.Contains(last.URL.String(), "wrong") {
		t.Errorf("key sent in the URL: %s", last.URL)
	}
}

func TestBraveAvailable(t *testing.T) {
	p := &Brave{LookupEnv: func(string) (string, bool) { return "", false }}
	err := p.Available()
	if err == nil || !strings.Contains(err.Error(), DefaultBraveKeyEnv) {
		t.Errorf("Available() without key = %v, want an error naming %s", err, DefaultBraveKeyEnv)
	}
	if _, err := p.Search(context.Background(), "q", 8); CodeOf(err) != CodeUnavailable {
		t.Errorf("Search without key = %v, want %s", err, CodeUnavailable)
	}
}

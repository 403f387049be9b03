package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// webTestEnv isolates the web commands from any config file and search
// key of the machine running the tests.
func webTestEnv(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("BRAVE_API_KEY", "")
	t.Setenv("DSH_WEB_SEARCH_SEARXNG_URL", "")
	t.Setenv("DSH_WEB_SEARCH_PROVIDER", "")
	t.Chdir(t.TempDir()) // no ./dsh.yaml
}

func exitStatus(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return 2
	}
	return 0
}

func pageServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/missing" {
			w.WriteHeader(http.StatusNotFound)
		}
		fmt.Fprint(w, `<html><body><script>evil()</script><h1>Hello</h1><p>a <a href="/b">link</a></p></body></html>`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchCommandJSON(t *testing.T) {
	webTestEnv(t)
	srv := pageServer(t)
	hp := srv.Listener.Addr().String()
	out, err := runDsh(t, "fetch", "--json", "--allow", hp, srv.URL+"/missing")
	if err != nil {
		t.Fatalf("dsh fetch: %v\n%s", err, out)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	want := map[string]any{
		"url": srv.URL + "/missing", "final_url": srv.URL + "/missing", "status": float64(404),
		"kind": "html", "content": "# Hello\n\na [link](" + srv.URL + "/b)", "truncated": false,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("keys %v, want exactly %v", got, want)
	}
}

func TestFetchCommandText(t *testing.T) {
	webTestEnv(t)
	srv := pageServer(t)
	hp := srv.Listener.Addr().String()
	out, err := runDsh(t, "fetch", "--allow", hp, srv.URL)
	if err != nil {
		t.Fatalf("dsh fetch: %v", err)
	}
	if !strings.HasPrefix(out, "Fetched "+srv.URL+" (HTTP 200)\n# Hello") || strings.Contains(out, "evil") {
		t.Errorf("dsh fetch printed %q", out)
	}
	out, err = runDsh(t, "fetch", "--raw", "--allow", hp, srv.URL)
	if err != nil || !strings.Contains(out, "(HTTP 200)\n<html><body><script>") {
		t.Errorf("dsh fetch --raw = %q, %v; want the HTML as served", out, err)
	}
}

func TestFetchCommandPolicyFile(t *testing.T) {
	webTestEnv(t)
	srv := pageServer(t)
	file := filepath.Join(t.TempDir(), "web.yaml")
	os.WriteFile(file, []byte("default: deny\nallow:\n  - "+srv.Listener.Addr().String()+"\n"), 0o600)
	if out, err := runDsh(t, "fetch", "--policy", file, srv.URL); err != nil || !strings.Contains(out, "# Hello") {
		t.Errorf("dsh fetch --policy admitting the server = %q, %v", out, err)
	}
}

func TestFetchCommandErrors(t *testing.T) {
	webTestEnv(t)
	srv := pageServer(t)
	tests := []struct {
		url  string
		code string
	}{
		{srv.URL, "NET_DENIED"}, // loopback is not public
		{"ftp://example.com/", "WEB_INVALID_URL"},
		{"http://u:p@example.com/", "WEB_BLOCKED_URL"},
		{"not a url", "WEB_INVALID_URL"},
	}
	for _, tt := range tests {
		out, err := runDsh(t, "fetch", "--json", tt.url)
		if exitStatus(err) != 1 || !strings.HasPrefix(err.Error(), tt.code+": ") {
			t.Errorf("dsh fetch %s: exit %d, error %v; want exit 1 with %s", tt.url, exitStatus(err), err, tt.code)
		}
		var got struct {
			URL   string
			Error struct{ Code, Message, Reason string }
		}
		if jerr := json.Unmarshal([]byte(out), &got); jerr != nil {
			t.Fatalf("not JSON: %v\n%s", jerr, out)
		}
		if got.URL != tt.url || got.Error.Code != tt.code || got.Error.Message == "" {
			t.Errorf("dsh fetch --json %s = %+v, want error code %s", tt.url, got, tt.code)
		}
		if tt.code == "NET_DENIED" && got.Error.Reason == "" {
			t.Errorf("NET_DENIED without the policy reason: %+v", got)
		}
	}
}

func TestSearchCommand(t *testing.T) {
	webTestEnv(t)
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("q")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"results":[{"url":"https://%s.example/","title":"%s","content":"about %s"}]}`, q, q, q)
	}))
	defer searx.Close()
	t.Setenv("DSH_WEB_SEARCH_SEARXNG_URL", searx.URL)

	out, err := runDsh(t, "search", "--json", "-q", "alpha", "-q", "beta", "-q", "alpha")
	if err != nil {
		t.Fatalf("dsh search: %v\n%s", err, out)
	}
	var got struct {
		Provider string
		Queries  []string
		Sources  []struct{ Title, URL, Snippet string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.Provider != "searxng" || len(got.Queries) != 2 || len(got.Sources) != 2 || got.Sources[1].URL != "https://beta.example/" {
		t.Errorf("dsh search --json = %+v", got)
	}
	out, err = runDsh(t, "search", "alpha")
	if err != nil || !strings.Contains(out, "1. alpha\n   https://alpha.example/\n   about alpha") {
		t.Errorf("dsh search = %q, %v", out, err)
	}
}

func TestSearchCommandErrors(t *testing.T) {
	webTestEnv(t)
	// No provider usable.
	out, err := runDsh(t, "search", "--json", "q")
	if exitStatus(err) != 1 || !strings.Contains(out, `"code":"WEB_PROVIDER_UNAVAILABLE"`) {
		t.Errorf("no provider: exit %d, %q", exitStatus(err), out)
	}
	// Two usable providers, none chosen: ambiguous. (Neither is contacted.)
	t.Setenv("DSH_WEB_SEARCH_SEARXNG_URL", "http://127.0.0.1:9/")
	t.Setenv("BRAVE_API_KEY", "k")
	out, err = runDsh(t, "search", "--json", "q")
	if exitStatus(err) != 1 || !strings.Contains(out, `"code":"WEB_PROVIDER_AMBIGUOUS"`) {
		t.Errorf("two providers: exit %d, %q", exitStatus(err), out)
	}
	// Too many queries.
	out, err = runDsh(t, "search", "--json", "--provider", "searxng", "-q", "a", "-q", "b", "-q", "c", "-q", "d", "-q", "e")
	if exitStatus(err) != 1 || !strings.Contains(out, `"code":"WEB_INVALID_QUERY"`) {
		t.Errorf("five queries: exit %d, %q", exitStatus(err), out)
	}
	// Configured but unavailable.
	t.Setenv("BRAVE_API_KEY", "")
	out, err = runDsh(t, "search", "--json", "--provider", "brave", "q")
	if exitStatus(err) != 1 || !strings.Contains(out, `"code":"WEB_PROVIDER_CONFIGURED_UNAVAILABLE"`) {
		t.Errorf("brave without key: exit %d, %q", exitStatus(err), out)
	}
}

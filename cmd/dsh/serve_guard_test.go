package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestServeLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8765": true, "[::1]:8765": true, "localhost:1": true, "127.1.2.3:9": true,
		":8765": false, "0.0.0.0:8765": false, "[::]:1": false, "10.0.0.1:80": false, "example.org:80": false,
	} {
		got, err := isLoopbackAddr(addr)
		if err != nil || got != want {
			t.Errorf("isLoopbackAddr(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
	if _, err := isLoopbackAddr("8765"); err == nil {
		t.Error("a bare port was accepted as an address")
	}
}

func TestServeGuard(t *testing.T) {
	g := &httpGuard{token: "tok", loopback: true, origins: []string{"https://app.example"}}
	for _, tc := range []struct {
		origin, host string
		want         bool
	}{
		{"http://127.0.0.1:8765", "127.0.0.1:8765", true},
		{"http://localhost:6274", "127.0.0.1:8765", true},
		{"https://app.example", "127.0.0.1:8765", true},
		{"https://app.example/", "127.0.0.1:8765", true},
		{"https://evil.example", "127.0.0.1:8765", false},
		{"null", "127.0.0.1:8765", false},
		{"file://", "127.0.0.1:8765", false},
	} {
		if got := g.originOK(tc.origin, tc.host); got != tc.want {
			t.Errorf("origin %q on host %q: %v, want %v", tc.origin, tc.host, got, tc.want)
		}
	}
	remote := &httpGuard{token: "tok"}
	if remote.originOK("http://localhost:6274", "dsh.example:8765") {
		t.Error("off loopback, a loopback origin was accepted")
	}
	if !remote.originOK("https://dsh.example:8765", "dsh.example:8765") {
		t.Error("the server's own origin was refused")
	}
	for h, want := range map[string]bool{"Bearer tok": true, "Bearer tok2": false, "Bearer ": false, "tok": false, "bearer tok": true, "": false} {
		if got := g.tokenOK(h); got != want {
			t.Errorf("Authorization %q: %v, want %v", h, got, want)
		}
	}
}

// On a loopback address a request must name a loopback host: a page that
// rebinds its own name to 127.0.0.1 sends its name as Host and as Origin,
// which the Origin rule alone takes for the server's own origin.
func TestServeGuardRefusesForeignHostOnLoopback(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, token := range []string{"", "tok"} {
		h := (&httpGuard{token: token, loopback: true}).wrap(ok)
		for host, want := range map[string]int{
			"127.0.0.1:8765": http.StatusNoContent, "localhost:8765": http.StatusNoContent, "[::1]:8765": http.StatusNoContent,
			"127.0.0.1": http.StatusNoContent, "LOCALHOST:1": http.StatusNoContent,
			"evil.example:8765": http.StatusMisdirectedRequest, "10.0.0.1:8765": http.StatusMisdirectedRequest, "": http.StatusMisdirectedRequest,
		} {
			r := httptest.NewRequest("POST", "http://x/v1/workspaces", nil)
			r.Host = host
			if host != "" {
				r.Header.Set("Origin", "http://"+host)
			}
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != want {
				t.Errorf("token %q, Host %q: status %d, want %d", token, host, rec.Code, want)
			}
		}
	}
	// Off loopback the Host is the client's business (a proxy, a name).
	h := (&httpGuard{token: "tok"}).wrap(ok)
	r := httptest.NewRequest("GET", "http://dsh.example:8765/mcp", nil)
	r.Header.Set("Authorization", "Bearer tok")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusNoContent {
		t.Errorf("off loopback, Host dsh.example: status %d", rec.Code)
	}
}

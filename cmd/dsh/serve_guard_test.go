package main

import "testing"

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

package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHealthAnswersByStatus: dsh health exits 0 on 200 at /healthz (the
// path it adds), 1 on another status, on a refused connection and on a
// server that does not answer in time, and 2 on a URL it cannot ask.
func TestHealthAnswersByStatus(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/down", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "draining", http.StatusServiceUnavailable) })
	hang := make(chan struct{})
	mux.HandleFunc("/hang", func(http.ResponseWriter, *http.Request) { <-hang })
	ts := httptest.NewServer(mux)
	defer ts.Close()
	defer close(hang)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	for _, c := range []struct {
		name string
		args []string
		code int
		text string
	}{
		{"healthz added", []string{ts.URL}, 0, "/healthz: ok"},
		{"explicit path", []string{ts.URL + "/healthz"}, 0, "/healthz: ok"},
		{"503", []string{ts.URL + "/down"}, 1, `HTTP 503 "draining"`},
		{"refused", []string{closedURL}, 1, "connection refused"},
		{"timeout", []string{"--timeout", "200ms", ts.URL + "/hang"}, 1, "no answer within 200ms"},
		{"not a URL", []string{"127.0.0.1:8765"}, 2, "is not an http(s) URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out, err := runDsh(t, append([]string{"health"}, c.args...)...)
			code := 0
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
				out += ee.msg
			} else if err != nil {
				t.Fatalf("dsh health: %v", err)
			}
			if code != c.code || !strings.Contains(out, c.text) {
				t.Errorf("dsh health %v: exit %d %q, want %d and %q", c.args, code, out, c.code, c.text)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("dsh health took %v, longer than its timeout allows", d)
			}
		})
	}
}

// TestHealthJSONIgnoresProxy: --json prints one object, and the request
// goes to the URL itself although HTTP_PROXY names a proxy that answers
// 502 to everything.
func TestHealthJSONIgnoresProxy(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("ok\n"))
	}))
	defer ts.Close()
	proxied := false
	px := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		proxied = true
		http.Error(w, "proxy", http.StatusBadGateway)
	}))
	defer px.Close()
	t.Setenv("HTTP_PROXY", px.URL)
	t.Setenv("http_proxy", px.URL)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	out, err := runDsh(t, "health", "--json", ts.URL)
	if err != nil {
		t.Fatalf("dsh health --json: %v\n%s", err, out)
	}
	var res healthResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if !res.OK || res.Status != 200 || res.Body != "ok" || res.URL != ts.URL+"/healthz" {
		t.Errorf("result %+v, want ok, 200, body ok at %s/healthz", res, ts.URL)
	}
	if proxied {
		t.Error("dsh health went through HTTP_PROXY")
	}
}

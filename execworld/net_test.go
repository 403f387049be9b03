package execworld_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/netpolicy/proxy"
)

func TestNetFollowsTheWorldsPolicy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	// No policy at all: dsh's own egress for the world is denied.
	w, _ := execworldtest.NewWorld(t, nil)
	if _, err := w.Net.HTTPClient().Get(srv.URL); !errors.Is(err, netpolicy.ErrDenied) {
		t.Fatalf("GET without a policy = %v; want ErrDenied", err)
	}

	// Net allows the server; Egress (the processes' proxy) does not matter.
	allow := netpolicy.MustNew(netpolicy.Config{Default: "deny", Allow: []string{addr}})
	deny := netpolicy.MustNew(netpolicy.SandboxDefault())
	w2, _ := execworldtest.NewWorld(t, &execworld.Options{Net: allow, Egress: deny})
	resp, err := w2.Net.HTTPClient().Get(srv.URL)
	if err != nil {
		t.Fatalf("GET of an allowed server: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "reached" {
		t.Fatalf("body %q", b)
	}
	if _, err := w2.Net.DialContext(t.Context(), "tcp", "127.0.0.1:1"); !errors.Is(err, netpolicy.ErrDenied) {
		t.Fatalf("dial of a port the policy does not allow = %v; want ErrDenied", err)
	}
}

// A world with an egress policy hands the driver a proxy built for that
// world: its policy, its ID in every audit line. The fake serves it on
// loopback and advertises it in HTTP_PROXY.
func TestEgressProxyIsWired(t *testing.T) {
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "via-proxy") }))
	defer allowed.Close()
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the denied server was reached") }))
	defer denied.Close()
	audit := &syncBuffer{}
	// A world names the host's loopback host.dsh.internal.
	asWorld := func(u string) string {
		return strings.Replace(u, "127.0.0.1", netpolicy.HostName, 1)
	}
	pol := netpolicy.MustNew(netpolicy.Config{Default: "deny", Allow: []string{strings.TrimPrefix(asWorld(allowed.URL), "http://")}})
	w, b := execworldtest.NewWorld(t, &execworld.Options{Egress: pol, Audit: audit})
	if !b.Specs()[0].Egress {
		t.Fatal("the driver got no egress server")
	}
	res := run(t, w, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", `printf %s "$HTTP_PROXY"`}})
	proxyURL, err := url.Parse(res.Stdout.String())
	if err != nil || proxyURL.Host == "" {
		t.Fatalf("HTTP_PROXY inside = %q", res.Stdout.String())
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	resp, err := client.Get(asWorld(allowed.URL))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "via-proxy" {
		t.Fatalf("allowed server through the world's proxy: %d %q", resp.StatusCode, body)
	}
	resp, err = client.Get(asWorld(denied.URL))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("denied server through the world's proxy: status %d, want 403", resp.StatusCode)
	}
	// A record is written when its request ends, which may trail the
	// response the client saw.
	client.CloseIdleConnections()
	for i := 0; i < 200 && strings.Count(audit.String(), "\n") < 2; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	var verdicts []string
	for _, l := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		var rec proxy.AuditRecord
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		if rec.World != w.ID {
			t.Errorf("audit line for world %q, want %q", rec.World, w.ID)
		}
		verdicts = append(verdicts, rec.Verdict)
	}
	if strings.Join(verdicts, ",") != "allow,deny" {
		t.Fatalf("audit verdicts %v, want allow then deny", verdicts)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// SetEgress moves Net with the proxy when Net follows the egress policy
// (no Options.Net), idle connections of the old policy included; a Net of
// its own keeps its policy.
func TestSetEgressMovesNetThatFollowsIt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	deny := netpolicy.MustNew(netpolicy.SandboxDefault())
	allow := netpolicy.MustNew(netpolicy.Config{Default: "deny", Allow: []string{addr}})
	get := func(w *execworld.World) error {
		resp, err := w.Net.HTTPClient().Get(srv.URL)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return err
	}

	w, _ := execworldtest.NewWorld(t, &execworld.Options{Egress: deny})
	if err := get(w); !errors.Is(err, netpolicy.ErrDenied) {
		t.Fatalf("before SetEgress: %v, want ErrDenied", err)
	}
	if err := w.SetEgress(allow); err != nil {
		t.Fatal(err)
	}
	if err := get(w); err != nil {
		t.Fatalf("after SetEgress allowed the server: %v", err)
	}
	if err := w.SetEgress(deny); err != nil {
		t.Fatal(err)
	}
	if err := get(w); !errors.Is(err, netpolicy.ErrDenied) {
		t.Fatalf("after SetEgress denied it again (a kept-alive connection open): %v, want ErrDenied", err)
	}

	own, _ := execworldtest.NewWorld(t, &execworld.Options{Egress: deny, Net: deny})
	if err := own.SetEgress(allow); err != nil {
		t.Fatal(err)
	}
	if err := get(own); !errors.Is(err, netpolicy.ErrDenied) {
		t.Fatalf("a Net of its own followed SetEgress: %v, want ErrDenied", err)
	}
}

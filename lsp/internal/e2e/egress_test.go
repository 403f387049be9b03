package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/lsp"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
	"github.com/dsh-dev/dsh/sandbox/native"
)

// lockedBuffer collects the proxy's audit lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestGoplsEgressIsRefusedAndAudited makes gopls try the module proxy
// (as a user's GOPROXY and GOFLAGS=-mod=mod would) for a dependency that
// is not in any cache: the world's egress proxy refuses the connection
// and audits it. The proxy's name resolves through a stub to a
// documentation address, so no packet could leave even if it were
// allowed.
func TestGoplsEgressIsRefusedAndAudited(t *testing.T) {
	testenv.RequireUserNS(t)
	server := goplsServer(t)
	server.Env = append(server.Env, "GOPROXY=https://proxy.golang.org", "GOFLAGS=-mod=mod", "GONOSUMDB=*")
	ws := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/app\n\ngo 1.26\n\nrequire example.org/missing v1.0.0\n",
		"main.go": "package main\n\nimport _ \"example.org/missing\"\n\nfunc main() { hello() }\n\nfunc hello() {}\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	policy, err := netpolicy.New(netpolicy.SandboxDefault())
	if err != nil {
		t.Fatal(err)
	}
	audit := &lockedBuffer{}
	w, err := execworld.Open(context.Background(), native.New(nil), &execworld.Options{
		Spec:     sandbox.DefaultSpec(ws),
		Egress:   policy,
		Resolver: netpolicy.StubResolver{"proxy.golang.org": {netip.MustParseAddr("203.0.113.7")}},
		Audit:    audit,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := lsp.New(w, &lsp.Options{Servers: []lsp.ServerConfig{server}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Whatever gopls answers without its dependency, the query returns.
	_, qerr := c.Query(ctx, lsp.Query{Op: lsp.Definition, File: "main.go", Line: 5, Column: 15})
	t.Logf("query: %v", qerr)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(audit.String(), "proxy.golang.org") {
		time.Sleep(200 * time.Millisecond)
	}
	var refused bool
	for _, line := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		var rec struct{ Host, Verdict string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Host == "proxy.golang.org" {
			if rec.Verdict != "deny" {
				t.Errorf("audit line %s: verdict %q, want deny", line, rec.Verdict)
			}
			refused = true
		}
	}
	if !refused {
		t.Errorf("no refused proxy.golang.org connection in the audit:\n%s", audit.String())
	}
}

package main

import (
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/config"
)

// Each server's world: the sandbox section with its overrides, egress
// denied but for its allow entries, and a workspace of its own unless
// rw, the real one masked.
func TestMCPWorldPlan(t *testing.T) {
	ws := t.TempDir()
	t.Chdir(ws)
	cfg := config.Default()
	cfg.Network.Allow = []string{"example.com"} // the global egress is not the server's
	s := config.MCPServer{Name: "fs", Command: "srv", World: config.MCPWorld{
		Allow: []string{"api.example.org:443"}, Limits: config.MCPLimits{Memory: "256MiB", Pids: 64},
	}}
	plan, dir, err := mcpWorldPlan(&cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if dir == "" || plan.spec.Workspace != dir || !strings.HasPrefix(dir, "/var/tmp/dsh-mcp-fs-") {
		t.Errorf("workspace none: workspace %q (dir %q), want an empty directory of its own", plan.spec.Workspace, dir)
	}
	if !slices.Contains(plan.spec.Masks, ws) {
		t.Errorf("workspace none: masks %q lack the real workspace %s", plan.spec.Masks, ws)
	}
	if got := *plan.spec.Resources.Memory.Limit; got != 256<<20 {
		t.Errorf("memory limit %d, want 256MiB", got)
	}
	if got := *plan.spec.Resources.Pids.Limit; got != 64 {
		t.Errorf("pids limit %d, want 64", got)
	}
	for _, tt := range []struct {
		host string
		port uint16
		want bool
	}{{"api.example.org", 443, true}, {"example.com", 443, false}, {"api.example.org", 80, false}} {
		// A name-only pre-check: nothing is resolved.
		if d := plan.egress.Decide(tt.host, netip.Addr{}, tt.port); d.Allowed() != tt.want {
			t.Errorf("egress to %s:%d: %v, want allowed=%v", tt.host, tt.port, d.Reason, tt.want)
		}
	}

	s.World.Workspace = "rw"
	plan, dir, err = mcpWorldPlan(&cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	if dir != "" || plan.spec.Workspace != ws || slices.Contains(plan.spec.Masks, ws) {
		t.Errorf("workspace rw: workspace %q, masks %q; want the current directory, unmasked", plan.spec.Workspace, plan.spec.Masks)
	}
}

package main

import (
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/execworld/execworldtest"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/workspace"
)

func testOpener(t *testing.T, edit func(*config.Config)) *workspaceOpener {
	t.Helper()
	cfg := config.Default()
	cfg.Sandbox.Workspace.Mode = "overlay"
	if edit != nil {
		edit(&cfg)
	}
	return &workspaceOpener{cfg: &cfg}
}

// A workspace's world is the configuration's, with the template's
// driver, image and limits, over the workspace's directory, read-write.
func TestWorkspaceOpenerPlan(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, nil)
	p, err := o.plan(dir, workspace.Template{Driver: "docker", Image: "dsh/base:latest", Limits: workspace.Limits{Memory: "64MiB", Pids: 32, CPUs: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if p.driver.name != "docker" || p.spec.Image != "dsh/base:latest" || p.spec.Workspace != dir || p.spec.WorkspaceMode != "rw" {
		t.Errorf("plan: driver %s image %s workspace %s mode %s", p.driver.name, p.spec.Image, p.spec.Workspace, p.spec.WorkspaceMode)
	}
	r := p.spec.Resources
	if *r.Memory.Limit != 64<<20 || *r.Pids.Limit != 32 || *r.CPU.Quota*2 != int64(*r.CPU.Period) {
		t.Errorf("limits: memory %d pids %d cpu %d/%d", *r.Memory.Limit, *r.Pids.Limit, *r.CPU.Quota, *r.CPU.Period)
	}
	if o.cfg.Sandbox.Driver != "native" || o.cfg.Sandbox.Limits.Memory != "2GiB" {
		t.Error("planning a workspace changed the server's configuration")
	}
	for _, tc := range []struct {
		edit func(*config.Config)
		t    workspace.Template
		want string
	}{
		{nil, workspace.Template{Driver: "native", Image: "alpine"}, "--image"},
		{nil, workspace.Template{Driver: "host"}, "no confinement"},
		{nil, workspace.Template{Driver: "vm"}, "vm"},
		{nil, workspace.Template{Driver: "native", Limits: workspace.Limits{Memory: "1k"}}, "memory"},
		{func(c *config.Config) { c.Sandbox.Limits.Off = true }, workspace.Template{Driver: "native", Limits: workspace.Limits{Pids: 5}}, "without limits"},
	} {
		_, err := testOpener(t, tc.edit).plan(dir, tc.t)
		if !errors.Is(err, workspace.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("plan %+v: %v, want ErrInvalid naming %q", tc.t, err, tc.want)
		}
	}
}

func TestWorkspaceOpenerPolicy(t *testing.T) {
	o := testOpener(t, nil)
	if _, err := o.Policy([]string{"example.org:443", "10.0.0.0/8"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Policy([]string{"exa mple"}); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("a bad allow entry: %v, want ErrInvalid", err)
	}
}

func TestWorkspaceRoot(t *testing.T) {
	cfg := config.Default()
	cfg.Workspaces.Root = "/srv/ws"
	if r, _ := workspaceRoot(&cfg); r != "/srv/ws" {
		t.Errorf("configured root: %s", r)
	}
	cfg.Workspaces.Root = ""
	r, err := workspaceRoot(&cfg)
	if err != nil || !filepath.IsAbs(r) || !strings.HasSuffix(r, "workspaces") {
		t.Errorf("default root: %s %v", r, err)
	}
}

// --unconfined is the server's own sessions' business: a hosted
// workspace is always confined, and its state root is masked.
func TestWorkspaceOpenerNeverUnconfined(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, nil)
	o.o.Unconfined = true
	o.root = filepath.Dir(dir)
	p, err := o.plan(dir, workspace.Template{Driver: "native"})
	if err != nil {
		t.Fatal(err)
	}
	if p.driver.name != "native" || !p.driver.confines {
		t.Errorf("with --unconfined a workspace's world is planned on %s (confines %v), want native", p.driver.name, p.driver.confines)
	}
	if !slices.Contains(p.spec.Masks, o.root) {
		t.Errorf("the state root %s is not masked: %v", o.root, p.spec.Masks)
	}
}

// dsh's own egress for a workspace (web_fetch on its MCP endpoint) is
// its allow list, not the server's web policy: allowed nothing, it
// reaches nothing, and a pooled world's handover moves it too.
func TestWorkspaceOpenerNetIsTheAllowList(t *testing.T) {
	o := testOpener(t, nil)
	o.backends = map[string]execworld.Backend{"native": execworldtest.New()}
	w, err := o.Open(t.Context(), t.TempDir(), workspace.Template{Driver: "native"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const target = "93.184.215.14:443" // written as an address: decided, never dialled
	ap := netip.MustParseAddrPort(target)
	if d := w.Net.Policy().Decide("", ap.Addr(), ap.Port()); d.Allowed() {
		t.Errorf("a workspace allowed nothing lets web_fetch reach %s (%s)", target, d.Reason)
	}
	pol, err := o.Policy([]string{target})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetEgress(pol); err != nil {
		t.Fatal(err)
	}
	if d := w.Net.Policy().Decide("", ap.Addr(), ap.Port()); !d.Allowed() {
		t.Errorf("after the handover to an allow list naming %s, web_fetch is refused: %s", target, d.Reason)
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// planWorld turns a configuration and the command line's overrides into
// the driver, Spec and egress policy of a world, without opening one.
func TestPlanWorld(t *testing.T) {
	ws := t.TempDir()
	policyFile := filepath.Join(t.TempDir(), "egress.yaml")
	if err := os.WriteFile(policyFile, []byte("default: deny\nallow: [files.example:443]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	public := netip.MustParseAddr("93.184.216.34")
	allows := func(p *netpolicy.Policy, host string, port uint16) bool {
		return p.Decide(host, public, port).Verdict == netpolicy.Allow
	}
	for _, tc := range []struct {
		name    string
		cfg     func(*config.Config)
		o       worldOverrides
		wantErr string // "" when the plan is made
		check   func(t *testing.T, p *worldPlan)
	}{
		{name: "defaults", check: func(t *testing.T, p *worldPlan) {
			if p.driver.name != driverNative || !p.driver.confines {
				t.Errorf("driver = %s (confines %v), want native, confining", p.driver.name, p.driver.confines)
			}
			if p.spec.Workspace != ws || p.spec.AllowHomeWorkspace || p.spec.UnixSockets {
				t.Errorf("spec workspace %q, home %v, unix sockets %v; want %q, false, false", p.spec.Workspace, p.spec.AllowHomeWorkspace, p.spec.UnixSockets, ws)
			}
			r := p.spec.Resources
			if r == nil || *r.Memory.Limit != 2<<30 || *r.Pids.Limit != sandbox.DefaultPids {
				t.Errorf("resources = %+v, want the default limits", r)
			}
			if allows(p.egress, "example.org", 443) {
				t.Error("the default egress policy allows example.org:443, want deny everything")
			}
		}},
		{name: "sandbox keys reach the spec",
			cfg: func(c *config.Config) {
				c.Sandbox.Driver = driverDocker
				c.Sandbox.Image = "my/image:1"
				c.Sandbox.Masks = []string{"/srv/secret"}
				c.Sandbox.Home.Allow = []string{"~/go"}
				c.Sandbox.UnixSockets = true
				c.Sandbox.Limits = config.Limits{Memory: "64MiB", Pids: 7, CPUs: 0.5, Write: "16MiB"}
			},
			o: worldOverrides{WorkspaceHome: true},
			check: func(t *testing.T, p *worldPlan) {
				s := p.spec
				if p.driver.name != driverDocker || s.Image != "my/image:1" || !s.UnixSockets || !s.AllowHomeWorkspace {
					t.Errorf("driver %s, image %q, unix sockets %v, home workspace %v", p.driver.name, s.Image, s.UnixSockets, s.AllowHomeWorkspace)
				}
				if !slices.Contains(s.Masks, "/srv/secret") || !slices.Contains(s.Masks, sandbox.DefaultMasks[0]) {
					t.Errorf("masks = %v, want the built-in ones and /srv/secret", s.Masks)
				}
				if !slices.Equal(s.HomeAllow, []string{"~/go"}) {
					t.Errorf("home allow = %v, want [~/go]", s.HomeAllow)
				}
				r := s.Resources
				if *r.Memory.Limit != 64<<20 || *r.Pids.Limit != 7 || *r.CPU.Quota*2 != int64(*r.CPU.Period) {
					t.Errorf("resources: memory %d, pids %d, cpu %d/%d; want 64MiB, 7, half a CPU", *r.Memory.Limit, *r.Pids.Limit, *r.CPU.Quota, *r.CPU.Period)
				}
			}},
		{name: "the write limit holds with limits off",
			cfg: func(c *config.Config) { c.Sandbox.Limits.Off, c.Sandbox.Limits.Write = true, "2MiB" },
			check: func(t *testing.T, p *worldPlan) {
				if p.spec.Resources != nil || p.spec.WriteLimit != 2<<20 {
					t.Errorf("resources %v, write limit %d; want none and 2 MiB", p.spec.Resources, p.spec.WriteLimit)
				}
			}},
		{name: "an unlimited write limit",
			cfg: func(c *config.Config) { c.Sandbox.Limits.Write = "Unlimited" },
			check: func(t *testing.T, p *worldPlan) {
				if p.spec.WriteLimit != 0 {
					t.Errorf("write limit %d, want 0 (none)", p.spec.WriteLimit)
				}
			}},
		{name: "the default write limit",
			check: func(t *testing.T, p *worldPlan) {
				if p.spec.WriteLimit != sandbox.DefaultWriteLimit {
					t.Errorf("write limit %d, want %d", p.spec.WriteLimit, sandbox.DefaultWriteLimit)
				}
			}},
		{name: "limits off",
			cfg: func(c *config.Config) { c.Sandbox.Limits.Off = true },
			check: func(t *testing.T, p *worldPlan) {
				if p.spec.Resources != nil {
					t.Errorf("resources = %+v, want none", p.spec.Resources)
				}
			}},
		{name: "a limit flag with limits off",
			cfg:     func(c *config.Config) { c.Sandbox.Limits.Off = true },
			o:       worldOverrides{Limits: []string{"pids"}},
			wantErr: "--pids sets a limit, but limits are off"},
		{name: "unconfined",
			o: worldOverrides{Unconfined: true},
			check: func(t *testing.T, p *worldPlan) {
				if p.driver.name != driverHost || p.driver.confines {
					t.Errorf("driver = %s (confines %v), want host, not confining", p.driver.name, p.driver.confines)
				}
			}},
		{name: "unconfined with --driver host",
			cfg: func(c *config.Config) { c.Sandbox.Driver = driverHost },
			o:   worldOverrides{Unconfined: true, Driver: driverHost},
			check: func(t *testing.T, p *worldPlan) {
				if p.driver.name != driverHost {
					t.Errorf("driver = %s, want host", p.driver.name)
				}
			}},
		{name: "unconfined with another --driver",
			cfg:     func(c *config.Config) { c.Sandbox.Driver = driverDocker },
			o:       worldOverrides{Unconfined: true, Driver: driverDocker},
			wantErr: "--unconfined runs on the host driver, but --driver docker was given"},
		{name: "unconfined overrides a configured driver",
			cfg: func(c *config.Config) { c.Sandbox.Driver = driverDocker },
			o:   worldOverrides{Unconfined: true},
			check: func(t *testing.T, p *worldPlan) {
				if p.driver.name != driverHost {
					t.Errorf("driver = %s, want host", p.driver.name)
				}
			}},
		{name: "host without --unconfined",
			cfg:     func(c *config.Config) { c.Sandbox.Driver = driverHost },
			wantErr: "pass --unconfined to accept that"},
		{name: "a driver not in the list",
			cfg:     func(c *config.Config) { c.Sandbox.Driver = "vm" },
			wantErr: `sandbox driver "vm" is not available in this build (have: native, docker, host)`},
		{name: "configured network policy with --allow",
			cfg: func(c *config.Config) { c.Network.Allow = []string{"a.example"} },
			o:   worldOverrides{Policy: policyOverrides{Allow: []string{"b.example:443"}}},
			check: func(t *testing.T, p *worldPlan) {
				if !allows(p.egress, "a.example", 80) || !allows(p.egress, "b.example", 443) || allows(p.egress, "c.example", 443) {
					t.Error("want a.example and b.example:443 allowed, c.example denied")
				}
			}},
		{name: "a policy file replaces the network section",
			cfg: func(c *config.Config) { c.Network.Allow = []string{"a.example"} },
			o:   worldOverrides{Policy: policyOverrides{File: policyFile}},
			check: func(t *testing.T, p *worldPlan) {
				if allows(p.egress, "a.example", 443) || !allows(p.egress, "files.example", 443) {
					t.Error("want a.example denied and files.example:443 allowed")
				}
			}},
		{name: "a bad --allow entry",
			o:       worldOverrides{Policy: policyOverrides{Allow: []string{"10.0.0.1/8"}}},
			wantErr: "egress policy: the configured policy (with --allow entries)"},
		{name: "a missing workspace",
			o:       worldOverrides{Workspace: filepath.Join(ws, "nowhere")},
			wantErr: "create it or pass another --workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			if tc.o.Workspace == "" {
				tc.o.Workspace = ws
			}
			p, err := planWorld(&cfg, tc.o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("planWorld() = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("planWorld() = %v", err)
			}
			tc.check(t, p)
		})
	}
}

// The command line reaches planWorld through worldFlags alone: a flag
// given is an override, one left at its default is none.
func TestWorldFlags(t *testing.T) {
	cmd := newRunCmd()
	if err := cmd.ParseFlags([]string{"--unconfined", "--driver", "host", "--memory", "1G", "--workspace", "/w", "--allow", "x.example", "--policy", "p.yaml"}); err != nil {
		t.Fatal(err)
	}
	got := worldFlags(cmd)
	want := worldOverrides{Workspace: "/w", Unconfined: true, Driver: "host", Limits: []string{"memory"},
		Policy: policyOverrides{File: "p.yaml", Allow: []string{"x.example"}}}
	if got.Workspace != want.Workspace || got.Unconfined != want.Unconfined || got.Driver != want.Driver ||
		!slices.Equal(got.Limits, want.Limits) || got.Policy.File != want.Policy.File || !slices.Equal(got.Policy.Allow, want.Policy.Allow) {
		t.Errorf("worldFlags() = %+v, want %+v", got, want)
	}
	if o := worldFlags(newRunCmd()); o.Driver != "" || len(o.Limits) != 0 || o.Unconfined {
		t.Errorf("worldFlags() of no flags = %+v, want no overrides", o)
	}
}

// reapCounter is a backend that counts Reap calls.
type reapCounter struct {
	execworld.Backend
	name  string
	reaps int
	err   error
}

func (r *reapCounter) Name() string { return r.name }

func (r *reapCounter) Reap(context.Context) error { r.reaps++; return r.err }

// TestReapOnceReapsEachDriverOnce: leftovers of crashed dsh processes are
// removed once per driver before worlds open, and a failure is said.
func TestReapOnceReapsEachDriverOnce(t *testing.T) {
	var warn bytes.Buffer
	a := &reapCounter{name: "test-reap-a", err: errors.New("engine gone")}
	b := &reapCounter{name: "test-reap-b"}
	for range 3 {
		reapOnce(context.Background(), a, &warn)
		reapOnce(context.Background(), b, &warn)
	}
	if a.reaps != 1 || b.reaps != 1 {
		t.Errorf("Reap calls: %d and %d, want 1 each", a.reaps, b.reaps)
	}
	if !strings.Contains(warn.String(), "test-reap-a driver): engine gone") || strings.Count(warn.String(), "\n") != 1 {
		t.Errorf("warnings: %q, want one naming the driver and the error", warn.String())
	}
}

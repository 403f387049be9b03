package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Limits and workspaces that no driver may open are refused before a
// world exists, with status 125 and a message naming the flag (and its
// configuration key) and what is accepted. The flags, the environment and
// the config file share config.Validate.
func TestRunRefusesBadLimitsAndWorkspaces(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, c := range []struct {
		name     string
		env      []string // KEY=VALUE set for the run
		args     []string
		code     int
		inStderr []string
	}{
		{"cpus Inf", nil, []string{"--cpus", "Inf"}, 125, []string{"sandbox.limits.cpus", "--cpus", "0.01 to"}},
		{"cpus NaN", nil, []string{"--cpus", "NaN"}, 125, []string{"sandbox.limits.cpus", "NaN"}},
		{"cpus zero", nil, []string{"--cpus", "0"}, 125, []string{"sandbox.limits.cpus"}},
		{"cpus negative", nil, []string{"--cpus", "-1"}, 125, []string{"sandbox.limits.cpus"}},
		{"cpus above the host", nil, []string{"--cpus", "100000"}, 125, []string{"this host's CPUs"}},
		{"pids zero", nil, []string{"--pids", "0"}, 125, []string{"sandbox.limits.pids", "--pids", "1 to 4194304"}},
		{"pids negative", nil, []string{"--pids", "-3"}, 125, []string{"sandbox.limits.pids"}},
		{"memory zero", nil, []string{"--memory", "0"}, 125, []string{"sandbox.limits.memory", "--memory"}},
		{"memory below the minimum", nil, []string{"--memory", "4k"}, 125, []string{"sandbox.limits.memory", "8MiB"}},
		{"cpus Inf from the environment", []string{"DSH_SANDBOX_LIMITS_CPUS=Inf"}, nil, 125, []string{"sandbox.limits.cpus"}},
		{"pids zero from the environment", []string{"DSH_SANDBOX_LIMITS_PIDS=0"}, nil, 125, []string{"sandbox.limits.pids"}},
		{"limits in range", nil, []string{"--cpus", "0.5", "--pids", "50", "--memory", "64MiB"}, 0, nil},
		{"workspace /etc", nil, []string{"--workspace", "/etc"}, 125, []string{"Workspace", "system location /etc", "system files"}},
		{"workspace /usr/local", nil, []string{"--workspace", "/usr/local"}, 125, []string{"system location /usr"}},
		{"workspace /sys/fs/cgroup", nil, []string{"--workspace", "/sys/fs/cgroup"}, 125, []string{"system location /sys", "cgroup"}},
		{"workspace /var", nil, []string{"--workspace", "/var"}, 125, []string{"system location /var"}},
		{"workspace /", nil, []string{"--workspace", "/"}, 125, []string{"system location /"}},
		{"workspace HOME", nil, []string{"--workspace", home}, 125, []string{"home directory", "--workspace-home"}},
		{"workspace HOME, meant", nil, []string{"--workspace", home, "--workspace-home"}, 0, nil},
		{"workspace in HOME", nil, []string{"--workspace", mkdir(t, filepath.Join(home, "proj"))}, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			code, _, stderr := dshRun(t, append(append([]string{"--unconfined"}, c.args...), "--", "true")...)
			if code != c.code {
				t.Fatalf("dsh run %q = %d, stderr %q; want %d", c.args, code, stderr, c.code)
			}
			for _, want := range c.inStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("dsh run %q: stderr %q does not mention %q", c.args, stderr, want)
				}
			}
		})
	}
}

// A config file is checked by the same rules as the flags.
func TestRunRefusesBadLimitsInTheConfigFile(t *testing.T) {
	for _, c := range []struct{ yaml, key string }{
		{"sandbox:\n  limits:\n    cpus: .inf\n", "sandbox.limits.cpus"},
		{"sandbox:\n  limits:\n    cpus: .nan\n", "sandbox.limits.cpus"},
		{"sandbox:\n  limits:\n    pids: 0\n", "sandbox.limits.pids"},
		{"sandbox:\n  limits:\n    memory: 1k\n", "sandbox.limits.memory"},
	} {
		f := filepath.Join(t.TempDir(), "dsh.yaml")
		if err := os.WriteFile(f, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := dshRun(t, "--config", f, "--unconfined", "--", "true")
		if code != 125 || !strings.Contains(stderr, c.key) {
			t.Errorf("dsh run with %q = %d, stderr %q; want 125 naming %s", c.yaml, code, stderr, c.key)
		}
	}
}

func TestRunHelpShowsWorkspaceHome(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"run", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--workspace-home", "never a system location", "0.01 to this host's CPUs", "at least 8MiB"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dsh run --help does not mention %q:\n%s", want, out.String())
		}
	}
}

func mkdir(t *testing.T, p string) string {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

package config

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
)

// Limits a kernel would not enforce, or that would not limit anything,
// are refused with the key, the flag and the accepted range; values in
// range pass.
func TestValidateLimits(t *testing.T) {
	host := runtime.NumCPU()
	for _, c := range []struct {
		name    string
		set     func(*Limits)
		key     string // "" when valid
		inError string
	}{
		{"defaults", func(*Limits) {}, "", ""},
		{"cpus 1", func(l *Limits) { l.CPUs = 1 }, "", ""},
		{"cpus minimum", func(l *Limits) { l.CPUs = 0.01 }, "", ""},
		{"cpus all of the host", func(l *Limits) { l.CPUs = float64(host) }, "", ""},
		{"cpus Inf", func(l *Limits) { l.CPUs = math.Inf(1) }, "sandbox.limits.cpus", "--cpus"},
		{"cpus -Inf", func(l *Limits) { l.CPUs = math.Inf(-1) }, "sandbox.limits.cpus", "0.01 to"},
		{"cpus NaN", func(l *Limits) { l.CPUs = math.NaN() }, "sandbox.limits.cpus", "NaN"},
		{"cpus zero", func(l *Limits) { l.CPUs = 0 }, "sandbox.limits.cpus", fmt.Sprintf("0.01 to %d", host)},
		{"cpus negative", func(l *Limits) { l.CPUs = -1 }, "sandbox.limits.cpus", "--cpus"},
		{"cpus below the minimum", func(l *Limits) { l.CPUs = 0.001 }, "sandbox.limits.cpus", "0.01"},
		{"cpus above the host", func(l *Limits) { l.CPUs = float64(host) + 0.5 }, "sandbox.limits.cpus", "this host's CPUs"},
		{"pids 1", func(l *Limits) { l.Pids = 1 }, "", ""},
		{"pids zero", func(l *Limits) { l.Pids = 0 }, "sandbox.limits.pids", "1 to 4194304"},
		{"pids negative", func(l *Limits) { l.Pids = -5 }, "sandbox.limits.pids", "--pids"},
		{"pids above the kernel's", func(l *Limits) { l.Pids = 1<<22 + 1 }, "sandbox.limits.pids", "1 to 4194304"},
		{"memory minimum", func(l *Limits) { l.Memory = "8MiB" }, "", ""},
		{"memory below the minimum", func(l *Limits) { l.Memory = "4k" }, "sandbox.limits.memory", "8MiB"},
		{"memory zero", func(l *Limits) { l.Memory = "0" }, "sandbox.limits.memory", "--memory"},
		{"memory negative", func(l *Limits) { l.Memory = "-1G" }, "sandbox.limits.memory", "not a size"},
		{"memory empty", func(l *Limits) { l.Memory = "" }, "sandbox.limits.memory", "not a size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			c.set(&cfg.Sandbox.Limits)
			err := cfg.Validate(testDrivers)
			if c.key == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != c.key || !strings.Contains(err.Error(), c.inError) {
				t.Fatalf("Validate() = %v, want a problem at %s mentioning %q", err, c.key, c.inError)
			}
		})
	}
}

// The default CPU limit never exceeds the host, so the defaults are
// valid on a one-CPU machine too.
func TestDefaultCPUsFitTheHost(t *testing.T) {
	if got := Default().Sandbox.Limits.CPUs; got > float64(runtime.NumCPU()) || got <= 0 {
		t.Errorf("default cpus = %v on a host with %d CPUs", got, runtime.NumCPU())
	}
}

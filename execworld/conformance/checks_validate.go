package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox"
)

// openOn opens a world on the workspace ws (which the suite did not make)
// and returns the error of Open; a world that opens is closed at once,
// before anything runs in it.
func (s *suite) openOn(ctx context.Context, ws string, mutate func(*sandbox.Spec)) error {
	spec := s.spec(ws)
	if mutate != nil {
		mutate(spec)
	}
	pol, err := s.egressPolicy()
	if err != nil {
		return err
	}
	w, err := execworld.Open(ctx, s.backend, &execworld.Options{Spec: spec, Egress: pol, Audit: s.audit})
	if err != nil {
		return err
	}
	w.Close()
	return nil
}

// refusedAs reports how err fails to be a *sandbox.SpecError on a field
// starting with field, or "" when it is one.
func refusedAs(err error, field string) string {
	var se *sandbox.SpecError
	switch {
	case err == nil:
		return "opened"
	case !errors.As(err, &se):
		return fmt.Sprintf("failed, but not as an invalid Spec: %v", err)
	case !strings.HasPrefix(se.Field, field):
		return fmt.Sprintf("refused for Spec.%s, not %s: %v", se.Field, field, err)
	case se.Fix == "":
		return fmt.Sprintf("refused without saying how to fix it: %v", err)
	}
	return ""
}

// A world is never opened on a system location (its files would be
// writable inside, and with /sys/fs/cgroup the world could leave its
// cgroup) nor on a home directory itself unless the Spec says so; a
// project directory and an explicitly allowed home open.
func checkSystemWorkspaces(ctx context.Context, s *suite) error {
	link := filepath.Join(s.base, "etc-link")
	if err := os.Symlink("/etc", link); err != nil && !os.IsExist(err) {
		return err
	}
	refused := []string{"/", "/etc", "/usr", "/sys/fs/cgroup", "/var", "/proc", "/dev", "/run", link}
	if _, err := os.Stat("/usr/local"); err == nil {
		refused = append(refused, "/usr/local")
	}
	// dsh's native state, where every world's egress socket and root
	// are: the directory of the caller's /tmp fallback, and one inside it.
	state := sandbox.StateDirs(os.Getuid())[2]
	if _, err := os.Stat(state); os.IsNotExist(err) {
		defer os.Remove(state)
	}
	inState := filepath.Join(state, "conformance-ws")
	if err := os.MkdirAll(inState, 0o700); err != nil {
		return err
	}
	defer os.Remove(inState)
	refused = append(refused, state, inState)
	var problems []string
	for _, ws := range refused {
		if p := refusedAs(s.openOn(ctx, ws, nil), "Workspace"); p != "" {
			problems = append(problems, fmt.Sprintf("workspace %s: %s", ws, p))
		}
	}
	// The suite's HOME is its fake home.
	err := s.openOn(ctx, s.fakeHome, nil)
	if p := refusedAs(err, "Workspace"); p != "" {
		problems = append(problems, fmt.Sprintf("workspace %s (HOME) without AllowHomeWorkspace: %s", s.fakeHome, p))
	} else if !strings.Contains(err.Error(), "AllowHomeWorkspace") {
		problems = append(problems, fmt.Sprintf("refusing HOME does not name Spec.AllowHomeWorkspace: %v", err))
	}
	if err := s.openOn(ctx, s.fakeHome, func(sp *sandbox.Spec) { sp.AllowHomeWorkspace = true }); err != nil {
		problems = append(problems, fmt.Sprintf("workspace %s (HOME) with AllowHomeWorkspace did not open: %v", s.fakeHome, err))
	}
	w, err := s.open(ctx, nil)
	if err != nil {
		problems = append(problems, fmt.Sprintf("a project workspace did not open: %v", err))
	} else {
		defer w.w.Close()
		if err := alive(ctx, w); err != nil {
			problems = append(problems, fmt.Sprintf("a project workspace: %v", err))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// Limits are numbers the kernel enforces: a NaN or infinite CPU count
// (which converts to a negative quota), a zero or negative quota, period,
// memory or pids limit, and more CPUs than the host has are refused at
// Open rather than run as "no limit"; a world at the smallest limits runs.
func checkBadLimits(ctx context.Context, s *suite) error {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	nan, inf := math.NaN(), math.Inf(1)
	period := uint64(sandbox.DefaultCPUPeriod)
	cpu := func(q int64, p uint64) *specs.LinuxResources {
		return &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: &q, Period: &p}}
	}
	bad := []struct {
		name string
		r    *specs.LinuxResources
	}{
		//lint:ignore SA4012 a NaN CPU count converted as a caller would convert it
		{"cpus NaN", cpu(int64(nan*float64(period)), period)},
		{"cpus Inf", cpu(int64(inf*float64(period)), period)},
		{"cpu quota 0", cpu(0, period)},
		{"cpu quota -1", cpu(-1, period)},
		{"cpu period 0", cpu(50000, 0)},
		{"cpus above the host's", cpu(int64(sandbox.HostCPUs()+1)*int64(period), period)},
		{"memory 0", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(0)}}},
		{"memory -1", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(-1)}}},
		{"memory 4096 bytes", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(4096)}}},
		{"pids 0", &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(0)}}},
		{"pids -1", &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(-1)}}},
	}
	var problems []string
	for _, b := range bad {
		ws, err := os.MkdirTemp(s.base, "ws-")
		if err != nil {
			return err
		}
		if p := refusedAs(s.openOn(ctx, ws, func(sp *sandbox.Spec) { sp.Resources = b.r }), "Resources."); p != "" {
			problems = append(problems, fmt.Sprintf("%s: %s", b.name, p))
		}
	}
	// The documented minimums are limits a world runs under.
	minimum := &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: i64(sandbox.MinMemoryBytes)},
		CPU:    &specs.LinuxCPU{Quota: i64(sandbox.MinCPUQuota), Period: u64(period)},
	}
	w, err := s.open(ctx, func(sp *sandbox.Spec) { sp.Resources = minimum })
	if err != nil {
		problems = append(problems, fmt.Sprintf("a world at the minimum limits did not open: %v", err))
	} else {
		defer w.w.Close()
		if err := alive(ctx, w); err != nil {
			problems = append(problems, fmt.Sprintf("a world at the minimum limits: %v", err))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

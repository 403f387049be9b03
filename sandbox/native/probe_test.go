package native

import (
	"context"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
)

func TestProbeAsRoot(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	r := New(&Options{Executable: testExe(t), StateDir: stateDir(t)}).Probe(context.Background())
	if !r.UserNamespaces || !r.PivotRoot || !r.Seccomp || !r.CgroupWritable || !r.Ready() {
		t.Errorf("Probe as root on this host = %+v, want everything available", r)
	}
	if len(r.Problems) != 0 {
		t.Errorf("Probe problems = %q, want none", r.Problems)
	}
	if r.CgroupVersion == "none" || len(r.CgroupControllers) == 0 {
		t.Errorf("cgroup report = %s %v", r.CgroupVersion, r.CgroupControllers)
	}
}

func TestProbeReportsBrokenSetup(t *testing.T) {
	testenv.RequireUserNS(t)
	// A binary that is not dsh cannot serve as the init: the trial fails
	// and says so instead of reporting the driver ready.
	r := New(&Options{Executable: "/bin/true", StateDir: stateDir(t)}).Probe(context.Background())
	if r.PivotRoot || r.Ready() || r.TrialError == "" {
		t.Errorf("Probe with a non-dsh init = %+v, want a failed trial", r)
	}
}

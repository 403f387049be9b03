package native

import (
	"context"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
	"github.com/dsh-dev/dsh/sandbox"
)

func TestProbeAsRoot(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	r := New(&Options{Executable: initExe(t), StateDir: stateDir(t)}).Inspect(context.Background())
	if !r.UserNamespaces || !r.PivotRoot || !r.Seccomp || !r.CgroupWritable || !r.Ready() {
		t.Errorf("Probe as root on this host = %+v, want everything available", r)
	}
	if len(r.Problems) != 0 {
		t.Errorf("Probe problems = %q, want none", r.Problems)
	}
	if r.CgroupVersion == "none" || len(r.CgroupControllers) == 0 {
		t.Errorf("cgroup report = %s %v", r.CgroupVersion, r.CgroupControllers)
	}
	var p sandbox.Prober = New(&Options{Executable: initExe(t), StateDir: stateDir(t)})
	rep := p.Probe(context.Background())
	if !rep.Ready || !rep.Confines || rep.Driver != sandbox.DriverNative || len(rep.Problems) != 0 {
		t.Errorf("Probe = %+v, want native ready, confining, no problems", rep)
	}
	for _, c := range rep.Checks {
		if !c.OK && c.Name != "landlock" && c.Name != "overlayfs" {
			t.Errorf("check %+v failed on a host where everything is available", c)
		}
	}
}

func TestProbeReportsBrokenSetup(t *testing.T) {
	testenv.RequireUserNS(t)
	// A binary that is not dsh cannot serve as the init: the trial fails
	// and says so instead of reporting the driver ready.
	r := New(&Options{Executable: "/bin/true", StateDir: stateDir(t)}).Inspect(context.Background())
	if r.PivotRoot || r.Ready() || r.TrialError == "" {
		t.Errorf("Probe with a non-dsh init = %+v, want a failed trial", r)
	}
}

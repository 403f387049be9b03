package docker

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/sandbox"
)

func TestProbeReady(t *testing.T) {
	newClient(t)
	r := Probe(context.Background(), &Options{InitPath: initBinary(t)}, baseImage)
	if !r.Ready() || r.TrialTime <= 0 || !r.ImagePresent || !strings.Contains(r.Engine, "Docker Engine") {
		t.Errorf("Probe = %+v, want ready with a trial time, the image present and the engine named", r)
	}
}

func TestProbeMissingImageNamesFix(t *testing.T) {
	newClient(t)
	r := Probe(context.Background(), &Options{InitPath: initBinary(t)}, "dsh/no-such-image:probe")
	if r.Ready() || r.ImagePresent || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "make images") {
		t.Errorf("Probe(missing image) = %+v, want one problem naming make images", r)
	}
}

func TestProbeDynamicInitIsAProblem(t *testing.T) {
	r := Probe(context.Background(), &Options{InitPath: "/bin/sh"}, baseImage)
	if r.Ready() || !strings.Contains(r.InitError, "CGO_ENABLED=0") {
		t.Errorf("Probe(dynamic init) = %+v, want a problem saying how to build a static dsh", r)
	}
}

func TestProberReport(t *testing.T) {
	newClient(t)
	d, err := New(&Options{InitPath: initBinary(t), Image: baseImage})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var p sandbox.Prober = d
	r := p.Probe(context.Background())
	if !r.Ready || !r.Confines || r.Driver != sandbox.DriverDocker || len(r.Problems) != 0 {
		t.Errorf("Probe = %+v, want docker ready, confining, no problems", r)
	}
	names := map[string]bool{}
	for _, c := range r.Checks {
		names[c.Name] = c.OK
	}
	for _, n := range []string{"engine", "seccomp", "image " + baseImage, "trial world"} {
		if ok, found := names[n]; !ok || !found {
			t.Errorf("check %q: found %v, ok %v; checks %+v", n, found, ok, r.Checks)
		}
	}
}

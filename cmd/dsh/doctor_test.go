package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
)

func TestDoctorJSONListsDriversAndCapabilities(t *testing.T) {
	out, err := runDsh(t, "doctor", "--json")
	var ee *exitError
	if err != nil && !(errors.As(err, &ee) && ee.code == 1) {
		t.Fatalf("dsh doctor --json: %v", err)
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("dsh doctor --json is not JSON: %v\n%s", err, out)
	}
	got := map[string]driverReport{}
	for _, d := range rep.Drivers {
		got[d.Name] = d
	}
	for _, name := range []string{"native", "docker", "host"} {
		if _, ok := got[name]; !ok {
			t.Errorf("driver %s missing from the report", name)
		}
	}
	if got["host"].Confines {
		t.Error("host driver reported as confining")
	}
	// The exit status follows the configured driver (native by default).
	if want := got["native"].Ready; rep.OK != want || (err == nil) != want {
		t.Errorf("ok = %v, exit error = %v; want both to follow native readiness %v", rep.OK, err, want)
	}
	caps := map[string]bool{}
	for _, c := range rep.Capabilities {
		caps[c.Name] = true
	}
	for _, name := range []string{"exec", "egress_proxy", "web_fetch", "web_search"} {
		if !caps[name] {
			t.Errorf("capability %s missing from the report", name)
		}
	}
}

func TestDoctorSeesDockerAndNative(t *testing.T) {
	testenv.RequireDocker(t)
	testenv.RequireRoot(t)
	cmd := exec.Command(staticDsh(t), "doctor", "--json")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("dsh doctor --json: %v", err)
	}
	var rep doctorReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("dsh doctor --json is not JSON: %v\n%s", err, out)
	}
	for _, d := range rep.Drivers {
		if (d.Name == "native" || d.Name == "docker") && !d.Ready {
			t.Errorf("driver %s not ready: %s", d.Name, d.Problem)
		}
	}
	if !rep.OK {
		t.Error("report not OK although the configured driver (native) is ready")
	}
}

// TestDoctorStatesTheUnixSocketMechanism: doctor says, for each confining
// driver, what keeps host unix sockets out of reach, and flags the
// opt-out when the configuration takes it.
func TestDoctorStatesTheUnixSocketMechanism(t *testing.T) {
	for _, c := range []struct {
		env    string
		ok     bool
		detail string
	}{
		{"false", true, "refused by the init's seccomp filter"},
		{"true", false, "allowed (sandbox.unix_sockets)"},
	} {
		t.Setenv("DSH_SANDBOX_UNIX_SOCKETS", c.env)
		out, _ := runDsh(t, "doctor", "--json")
		var rep doctorReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("dsh doctor --json is not JSON: %v\n%s", err, out)
		}
		for _, d := range rep.Drivers {
			if !d.Confines {
				continue
			}
			var found bool
			for _, ch := range d.Checks {
				if ch.Name == "unix sockets" {
					found = true
					if ch.OK != c.ok || !strings.Contains(ch.Detail, c.detail) {
						t.Errorf("unix_sockets=%s: %s: unix sockets check %v %q, want %v and %q", c.env, d.Name, ch.OK, ch.Detail, c.ok, c.detail)
					}
				}
			}
			if !found {
				t.Errorf("unix_sockets=%s: %s reports no unix sockets check", c.env, d.Name)
			}
		}
	}
}

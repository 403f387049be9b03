package docker

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-dev/dsh/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestContainerConfigGolden pins the whole Spec → Engine API conversion
// of the default Spec with egress: any change to what the daemon is asked
// for shows up as a diff here (go test -run Golden -update to accept it).
func TestContainerConfigGolden(t *testing.T) {
	spec := sandbox.DefaultSpec("/work/project")
	plan := &containerPlan{
		Name: "dsh-0123456789ab", Image: spec.Image, User: "dsh", InitPath: "/usr/local/bin/dsh",
		Entrypoint: []string{initMountPath, initArg},
		Env:        spec.Env,
		EgressDir:  "/tmp/dsh-world-x/egress", ResolvConf: "/tmp/dsh-world-x/resolv.conf",
		Labels: map[string]string{sandbox.LabelManaged: "true", sandbox.LabelWorld: "0123456789ab"},
	}
	cfg, host, err := containerConfig(spec, plan)
	if err != nil {
		t.Fatal(err)
	}
	// Host-dependent values: the default seccomp profile is pinned by its
	// own test; rlimits are clamped to this host's hard limits.
	for i, o := range host.SecurityOpt {
		if strings.HasPrefix(o, "seccomp=") {
			host.SecurityOpt[i] = "seccomp=<default profile>"
		}
	}
	for _, u := range host.Ulimits {
		u.Soft, u.Hard = -1, -1
	}
	got, err := json.MarshalIndent(map[string]any{"Config": cfg, "HostConfig": host}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "containerconfig.golden.json")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if d := cmp.Diff(strings.TrimSpace(string(want)), strings.TrimSpace(string(got))); d != "" {
		t.Errorf("container config differs from %s (-want +got):\n%s", golden, d)
	}
}

// The default seccomp profile denies what the Spec's contract names and
// docker's default allows.
func TestDefaultProfileDeniesContractSyscalls(t *testing.T) {
	p, err := defaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	var prof struct {
		DefaultAction string `json:"defaultAction"`
		Syscalls      []struct {
			Names    []string `json:"names"`
			Action   string   `json:"action"`
			Includes *struct {
				Caps []string `json:"caps"`
			} `json:"includes"`
		} `json:"syscalls"`
	}
	if err := json.Unmarshal([]byte(p), &prof); err != nil {
		t.Fatal(err)
	}
	if prof.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("defaultAction = %q, want SCMP_ACT_ERRNO (an allowlist)", prof.DefaultAction)
	}
	allowed := map[string]bool{}
	for _, sc := range prof.Syscalls {
		// Rules that apply only with a capability do not apply in a
		// world: it keeps none.
		if sc.Action == "SCMP_ACT_ALLOW" && (sc.Includes == nil || len(sc.Includes.Caps) == 0) {
			for _, n := range sc.Names {
				allowed[n] = true
			}
		}
	}
	for _, n := range append(sandbox.DeniedSyscalls, "unshare") {
		if allowed[n] {
			t.Errorf("%s is allowed by the default profile", n)
		}
	}
	if !allowed["read"] || !allowed["clone"] {
		t.Error("the default profile does not allow read and clone; it would break every program")
	}
}

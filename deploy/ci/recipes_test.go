package ci

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-dev/dsh/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveStaticDsh()
	os.Exit(code)
}

// recipe is one CI recipe: the commands it runs, in order, each with the
// name of its step (GitHub) or section (GitLab).
type recipe struct {
	file  string
	steps []step
}

type step struct{ name, run string }

func githubRecipe(t *testing.T) recipe {
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string
				Uses string
				Run  string
			}
		}
	}
	file := "github/dsh-agent.yml"
	readYAML(t, file, &wf)
	r := recipe{file: file}
	for _, s := range wf.Jobs["agent"].Steps {
		if s.Run != "" {
			r.steps = append(r.steps, step{s.Name, s.Run})
		}
	}
	return r
}

func gitlabRecipe(t *testing.T) recipe {
	var jobs map[string]struct {
		BeforeScript []string `yaml:"before_script"`
		Script       []string
	}
	file := "gitlab/dsh-agent.gitlab-ci.yml"
	readYAML(t, file, &jobs)
	r := recipe{file: file}
	for _, l := range jobs["dsh-agent"].BeforeScript {
		r.steps = append(r.steps, step{"before_script", l})
	}
	for _, l := range jobs["dsh-agent"].Script {
		r.steps = append(r.steps, step{"script", l})
	}
	return r
}

func readYAML(t *testing.T, file string, v any) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// setUp are the commands of the recipes that prepare a runner and that
// this test cannot run: installing dsh from the module proxy (the test
// puts this checkout's dsh on PATH instead).
// Every other command of a recipe is run; a new one must be added here
// or run.
var setUp = []string{
	`CGO_ENABLED=0 go install "github.com/dsh-dev/dsh/cmd/dsh@$DSH_VERSION"`,
	`echo "$(go env GOPATH)/bin" >>"$GITHUB_PATH"`,
	`export PATH="$(go env GOPATH)/bin:$PATH"`,
}

// agentCommands are the commands of r the test runs: every line that is
// not a set-up line.
func agentCommands(t *testing.T, r recipe) []string {
	var out []string
	for _, s := range r.steps {
		for _, l := range strings.Split(strings.TrimSpace(s.run), "\n") {
			l = strings.TrimSpace(l)
			if l == "" || slices.Contains(setUp, l) {
				continue
			}
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s runs no command besides its set-up", r.file)
	}
	return out
}

// TestRecipesRunTheSameAgentCommand: both recipes run the agent with the
// one script, as root: the GitLab job is root, the GitHub job uses sudo,
// the fix for AppArmor's user namespace restriction that dsh doctor
// names first.
func TestRecipesRunTheSameAgentCommand(t *testing.T) {
	gh, gl := agentCommands(t, githubRecipe(t)), agentCommands(t, gitlabRecipe(t))
	if !slices.Equal(gh, []string{`sudo -E env "PATH=$PATH" ci/dsh-agent.sh`}) || !slices.Equal(gl, []string{"ci/dsh-agent.sh"}) {
		t.Errorf("agent commands: github %q, gitlab %q; want sudo ci/dsh-agent.sh and ci/dsh-agent.sh", gh, gl)
	}
	b, _ := os.ReadFile(filepath.Join("..", "..", "cmd", "dsh", "doctor_userns.go"))
	if !strings.Contains(string(b), `"run dsh as root (sudo dsh ..., the restriction is for unprivileged processes only); "`) {
		t.Error("dsh doctor's fix no longer names running dsh as root, the fix the GitHub job takes")
	}
}

// TestRecipeAgentRunsConfined runs each recipe's commands in a checkout
// laid out as the recipes say (ci/dsh-agent.sh, ci/egress.yaml,
// ci/agent.sh), with a policy that allows one loopback server only: the
// agent reaches it, is refused another loopback port, the audit file has
// both, and the job's status is the agent's. Then the dsh-side failure:
// a broken policy file makes the job fail with 125 before the agent runs.
func TestRecipeAgentRunsConfined(t *testing.T) {
	testenv.RequireRoot(t) // the native driver as root, as the GitLab job runs it
	testenv.RequireUserNS(t)
	testenv.RequireCgroups(t)
	curl := testenv.RequireCommand(t, "curl")
	dsh := testenv.StaticDsh(t)

	allowed := serve(t, "allowed")
	refused := serve(t, "refused")
	for _, r := range []recipe{githubRecipe(t), gitlabRecipe(t)} {
		t.Run(filepath.Dir(r.file), func(t *testing.T) {
			dir := checkout(t, fmt.Sprintf(`#!/bin/sh
set -e
# The servers are on the host's loopback: host.dsh.internal from a world.
%[1]s -fsS http://%[2]s/ >allowed.txt
if %[1]s -fsS http://%[3]s/ >refused.txt 2>&1; then echo "reached %[3]s" >&2; exit 3; fi
exit 42
`, curl, hostLoopback(allowed), hostLoopback(refused)), fmt.Sprintf("default: deny\nallow:\n  - %s\n", hostLoopback(allowed)))
			status, out := runCommands(t, dir, dsh, agentCommands(t, r))
			if status != 42 {
				t.Fatalf("status %d, want the agent's 42\n%s", status, out)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "allowed.txt")); string(b) != "allowed\n" {
				t.Errorf("the agent got %q from the allowed server\n%s", b, out)
			}
			audit := auditLines(t, filepath.Join(dir, "dsh-egress.jsonl"))
			if !hasVerdict(audit, hostLoopback(allowed), "allow") || !hasVerdict(audit, hostLoopback(refused), "deny") {
				t.Errorf("audit lacks an allow of %s and a deny of %s:\n%s", allowed, refused, out)
			}
			// Under sudo, the kept files are the job user's again.
			if fi, err := os.Stat(filepath.Join(dir, "dsh-egress.jsonl")); r.file == "github/dsh-agent.yml" && (err != nil || fi.Sys().(*syscall.Stat_t).Uid != 1000) {
				t.Errorf("the audit file after sudo: %v, want it owned by SUDO_UID 1000", err)
			}
			if !strings.Contains(out, "dsh-agent: the agent exited 42") {
				t.Errorf("output does not say the agent's status:\n%s", out)
			}

			// A dsh-side failure: the policy file is broken.
			os.WriteFile(filepath.Join(dir, "ci", "egress.yaml"), []byte("defualt: deny\n"), 0o644)
			os.Remove(filepath.Join(dir, "allowed.txt"))
			status, out = runCommands(t, dir, dsh, agentCommands(t, r))
			if status != 125 || !strings.Contains(out, "dsh itself failed (exit 125)") || !strings.Contains(out, "defualt") {
				t.Errorf("broken policy: status %d, want 125 with dsh's message naming the key\n%s", status, out)
			}
			if _, err := os.Stat(filepath.Join(dir, "allowed.txt")); err == nil {
				t.Error("the agent ran although dsh failed")
			}
		})
	}
}

// checkout makes a job's checkout: ci/dsh-agent.sh (this directory's),
// ci/agent.sh and ci/egress.yaml.
func checkout(t *testing.T, agent, policy string) string {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "ci"), 0o755)
	script, err := os.ReadFile("dsh-agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		body string
		mode os.FileMode
	}{
		"dsh-agent.sh": {string(script), 0o755},
		"agent.sh":     {agent, 0o755},
		"egress.yaml":  {policy, 0o644},
	} {
		if err := os.WriteFile(filepath.Join(dir, "ci", name), []byte(c.body), c.mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runCommands runs the recipe's commands in dir as a CI shell does (sh
// -e, stopping at the first failure), with dsh on PATH.
func runCommands(t *testing.T, dir, dsh string, commands []string) (int, string) {
	cmd := exec.Command("sh", "-ec", strings.Join(commands, "\n"))
	cmd.Dir = dir
	// The GitHub job's sudo, as root: the command itself, environment kept,
	// with the invoking user's ids in SUDO_UID and SUDO_GID as sudo sets them
	// (here the runner's user is 1000).
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "sudo"), []byte("#!/bin/sh\n[ \"$1\" = -E ] && shift\nSUDO_UID=1000 SUDO_GID=1000 exec \"$@\"\n"), 0o755)
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(dsh)+":"+bin+":"+os.Getenv("PATH"),
		"XDG_CONFIG_HOME="+t.TempDir(),
		"AGENT_SCRIPT=ci/agent.sh", "AGENT_POLICY=ci/egress.yaml", "AGENT_AUDIT=dsh-egress.jsonl")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatalf("running %q: %v", commands, err)
	}
	return 0, string(out)
}

// serve starts a loopback HTTP server answering body and returns its
// address.
func serve(t *testing.T, body string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, body) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// hostLoopback is addr (127.0.0.1:PORT) as a world names it.
func hostLoopback(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return "host.dsh.internal:" + port
}

func auditLines(t *testing.T, file string) []map[string]any {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the egress audit: %v", err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// hasVerdict reports whether an audit line records verdict for addr
// (host:port).
func hasVerdict(lines []map[string]any, addr, verdict string) bool {
	for _, m := range lines {
		dest := fmt.Sprintf("%v:%v", m["host"], m["port"])
		if m["verdict"] == verdict && dest == addr {
			return true
		}
	}
	return false
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/internal/testenv"
)

// TestSkillRootsReadOnly: in a native and a docker world, a command
// that tries to plant or edit a skill fails with a read-only error,
// and the catalog dsh skills list reads is unchanged.
func TestSkillRootsReadOnly(t *testing.T) {
	for _, tc := range []struct {
		driver  string
		require func(*testing.T)
	}{
		{"native", requireNativeServe},
		{"docker", func(t *testing.T) { testenv.RequireDocker(t) }},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			tc.require(t)
			bin := staticDsh(t)
			ws := t.TempDir()
			if err := os.Chmod(ws, 0o777); err != nil {
				t.Fatal(err)
			}
			skill := filepath.Join(ws, ".dsh/skills/deploy/SKILL.md")
			if err := os.MkdirAll(filepath.Dir(skill), 0o755); err != nil {
				t.Fatal(err)
			}
			orig := "---\nname: deploy\ndescription: Ship the app.\n---\nRun make deploy.\n"
			if err := os.WriteFile(skill, []byte(orig), 0o644); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "HOME="+t.TempDir())
			dsh := func(args ...string) (string, string, error) {
				cmd := exec.Command(bin, args...)
				cmd.Dir, cmd.Env = ws, env
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				err := cmd.Run()
				return out.String(), errOut.String(), err
			}
			digest := func() string {
				out, errOut, err := dsh("skills", "list", "--json")
				if err != nil {
					t.Fatalf("dsh skills list: %v\n%s", err, errOut)
				}
				var v struct{ Digest string }
				if err := json.Unmarshal([]byte(out), &v); err != nil || v.Digest == "" {
					t.Fatalf("dsh skills list --json: %v\n%s", err, out)
				}
				return v.Digest
			}
			before := digest()
			for _, script := range []string{
				"mkdir -p .dsh/skills/x && printf -- '---\\nname: x\\ndescription: planted\\n---\\n' > .dsh/skills/x/SKILL.md",
				"echo 'disable-model-invocation: yes' >> .dsh/skills/deploy/SKILL.md",
				"mkdir -p .agents/skills && echo planted > .agents/skills/y.md",
			} {
				_, errOut, err := dsh("run", "--driver", tc.driver, "--", "sh", "-c", script)
				if err == nil || !strings.Contains(errOut, "Read-only file system") {
					t.Errorf("%s in a %s world: err %v, stderr %q; want a read-only error", script, tc.driver, err, errOut)
				}
			}
			if b, err := os.ReadFile(skill); err != nil || string(b) != orig {
				t.Errorf("SKILL.md changed: %q, %v", b, err)
			}
			for _, p := range []string{".dsh/skills/x", ".agents/skills/y.md"} {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("the world created %s", p)
				}
			}
			if got := digest(); got != before {
				t.Errorf("the catalog changed: digest %s, was %s", got, before)
			}
		})
	}
}

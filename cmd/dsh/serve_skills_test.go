package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeSkillsInspector: through the built dsh serve and the MCP
// Inspector CLI, prompts/list shows a user-invocable skill and
// prompts/get returns its body; tools/call skill returns a model-invocable
// body and refuses a disable-model-invocation one; a command in the
// world cannot create or edit a skill (.dsh/ is read-only in every
// world), and the catalog is unchanged by its attempt; an edit on the
// host shows in the next tools/list.
func TestServeSkillsInspector(t *testing.T) {
	requireNativeServe(t)
	inspectorCLI(t)
	ws := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".dsh/skills/deploy/SKILL.md", "---\nname: deploy\ndescription: Ship the app.\n---\nRun make deploy.\n")
	write(".agents/skills/release.md", "---\nname: release\ndescription: Cut a release.\ndisable-model-invocation: true\n---\nTag and push.\n")
	target := []string{staticDsh(t), "serve", "--workspace", ws, "--audit", "off"}
	in := func(args ...string) map[string]any {
		return inspector(t, append(append([]string{}, target...), args...)...)
	}
	skillDesc := func() string {
		tools, _ := in("--method", "tools/list")["tools"].([]any)
		for _, tool := range tools {
			if m, _ := tool.(map[string]any); m["name"] == "skill" {
				s, _ := m["description"].(string)
				return s
			}
		}
		t.Fatal("tools/list has no skill tool")
		return ""
	}

	prompts, _ := in("--method", "prompts/list")["prompts"].([]any)
	var names []string
	for _, p := range prompts {
		m, _ := p.(map[string]any)
		n, _ := m["name"].(string)
		names = append(names, n)
	}
	if strings.Join(names, " ") != "deploy release" {
		t.Errorf("prompts/list: %v", names)
	}
	pr := in("--method", "prompts/get", "--prompt-name", "release")
	msgs, _ := pr["messages"].([]any)
	if len(msgs) != 1 || !strings.Contains(inspectorText(map[string]any{"content": []any{msgs[0].(map[string]any)["content"]}}), "<skill_content name=\"release\">\nTag and push.\n</skill_content>") {
		t.Errorf("prompts/get release: %v", pr)
	}

	ok := in("--method", "tools/call", "--tool-name", "skill", "--tool-arg", "name=deploy")
	if ok["isError"] == true || !strings.Contains(inspectorText(ok), "<skill_content name=\"deploy\">\n<resource_base>skill://deploy/</resource_base>\nRun make deploy.\n</skill_content>") {
		t.Errorf("tools/call skill deploy: %v", ok)
	}
	no := in("--method", "tools/call", "--tool-name", "skill", "--tool-arg", "name=release")
	if no["isError"] != true || !strings.Contains(inspectorText(no), "release has disable-model-invocation set") {
		t.Errorf("tools/call skill release: %v", no)
	}

	before := skillDesc()
	ex := in("--method", "tools/call", "--tool-name", "exec", "--tool-arg",
		"command=mkdir -p .dsh/skills/x; printf -- '---\\nname: x\\ndescription: planted\\n---\\n' > .dsh/skills/x/SKILL.md; echo edit >> .dsh/skills/deploy/SKILL.md; echo rc=$?")
	if out := inspectorText(ex); !strings.Contains(out, "Read-only file system") || !strings.Contains(out, "rc=1") {
		t.Errorf("a world wrote a skill root:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, ".dsh/skills/x")); err == nil {
		t.Errorf("the world created .dsh/skills/x")
	}
	if got := skillDesc(); got != before {
		t.Errorf("the catalog changed after the world's attempt:\n%s\nwas\n%s", got, before)
	}

	write(".dsh/skills/hostmade.md", "---\nname: hostmade\ndescription: Made on the host.\n---\n")
	if got := skillDesc(); !strings.Contains(got, "- hostmade: Made on the host.") {
		t.Errorf("a host edit is not in the next tools/list:\n%s", got)
	}
}

package gateway_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/mcp/gateway"
	"github.com/dsh-dev/dsh/skills"
)

func writeSkill(t *testing.T, ws, rel, content string) {
	t.Helper()
	p := filepath.Join(ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// skillsFixture serves the skills of a workspace of its own, read
// through execworld.OpenFS as dsh serve reads them; list_changed
// notifications arrive on the channels.
func skillsFixture(t *testing.T) (ws string, cs *mcp.ClientSession, toolsChanged, promptsChanged chan struct{}) {
	t.Helper()
	ws = t.TempDir()
	writeSkill(t, ws, ".dsh/skills/both/SKILL.md", "---\nname: both\ndescription: Both may invoke it.\n---\nDo both things; see refs/guide.md.\n")
	writeSkill(t, ws, ".dsh/skills/both/refs/guide.md", "the guide\n")
	writeSkill(t, ws, ".dsh/skills/model-only.md", "---\nname: model-only\ndescription: Only the model.\nuser-invocable: no\n---\nModel body.\n")
	writeSkill(t, ws, ".agents/skills/user-only/SKILL.md", "---\nname: user-only\ndescription: Only the user.\ndisable-model-invocation: on\n---\nUser body.\n")
	wfs, err := execworld.OpenFS(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wfs.Close() })
	d := skills.NewDiscoverer(skills.Config{Project: skills.WorldFS(wfs)})
	f := newFixture(t, func(o *gateway.Options) { o.Skills = d })
	toolsChanged, promptsChanged = make(chan struct{}, 10), make(chan struct{}, 10)
	cs = f.connect(t, &mcp.ClientOptions{
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { promptsChanged <- struct{}{} },
	})
	return ws, cs, toolsChanged, promptsChanged
}

func skillTool(t *testing.T, cs *mcp.ClientSession) *mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == gateway.SkillToolName {
			return tool
		}
	}
	t.Fatalf("no skill tool in tools/list")
	return nil
}

func promptNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	return strings.Join(names, " ")
}

func TestSkillToolAndPrompts(t *testing.T) {
	_, cs, _, _ := skillsFixture(t)
	ctx := context.Background()

	desc := skillTool(t, cs).Description
	if !strings.Contains(desc, "<available_skills>\n- both: Both may invoke it.\n- model-only: Only the model.\n</available_skills>") {
		t.Errorf("skill tool description lacks the sorted model catalog:\n%s", desc)
	}

	got := text(call(t, cs, gateway.SkillToolName, map[string]any{"name": "both"}))
	want := "<skill_content name=\"both\">\n<resource_base>skill://both/</resource_base>\nDo both things; see refs/guide.md.\n</skill_content>\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("skill both:\n%s\nwant it to start with\n%s", got, want)
	}
	res := call(t, cs, gateway.SkillToolName, map[string]any{"name": "user-only"})
	if !res.IsError || !strings.Contains(text(res), "user-only has disable-model-invocation set: only the user may invoke it") {
		t.Errorf("skill user-only: error %v %q; want a refusal", res.IsError, text(res))
	}
	res = call(t, cs, gateway.SkillToolName, map[string]any{"name": "nope"})
	if !res.IsError || !strings.Contains(text(res), `no skill "nope"`) {
		t.Errorf("skill nope: %q", text(res))
	}

	if got := promptNames(t, cs); got != "both user-only" {
		t.Errorf("prompts %q; want the user-invocable skills", got)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "user-only"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Messages) != 1 || pr.Messages[0].Role != "user" || !strings.Contains(pr.Messages[0].Content.(*mcp.TextContent).Text, "<skill_content name=\"user-only\">\n<resource_base>skill://user-only/</resource_base>\nUser body.\n") {
		t.Errorf("prompt user-only = %+v", pr.Messages)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "model-only"}); err == nil {
		t.Errorf("prompts/get model-only succeeded; it is not user-invocable")
	}

	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://both/refs/guide.md"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].Text != "the guide\n" {
		t.Errorf("resource = %+v", rr.Contents)
	}
}

// TestSkillsFollowHostEdits: an edit on the host shows in the next
// tools/list and prompts/list, with list_changed; a call re-checks the
// skill, so a skill made user-only is refused at once.
func TestSkillsFollowHostEdits(t *testing.T) {
	ws, cs, toolsChanged, promptsChanged := skillsFixture(t)
	ctx := context.Background()
	_ = skillTool(t, cs)
	drain := func(c chan struct{}) {
		for len(c) > 0 {
			<-c
		}
	}
	time.Sleep(50 * time.Millisecond)
	drain(toolsChanged)
	drain(promptsChanged)

	writeSkill(t, ws, ".dsh/skills/both/SKILL.md", "---\nname: both\ndescription: Both may invoke it.\ndisable-model-invocation: yes\n---\nNow user-only.\n")
	res := call(t, cs, gateway.SkillToolName, map[string]any{"name": "both"})
	if !res.IsError || !strings.Contains(text(res), "disable-model-invocation") {
		t.Errorf("call after the edit: %q; want the re-check's refusal", text(res))
	}

	writeSkill(t, ws, ".agents/skills/fresh.md", "---\nname: fresh\ndescription: Just added.\n---\nFresh body.\n")
	desc := skillTool(t, cs).Description
	if !strings.Contains(desc, "- fresh: Just added.\n- model-only: Only the model.\n</available_skills>") || strings.Contains(desc, "- both:") {
		t.Errorf("tools/list after the edit:\n%s", desc)
	}
	if got := promptNames(t, cs); got != "both fresh user-only" {
		t.Errorf("prompts %q after the edit", got)
	}
	for name, c := range map[string]chan struct{}{"tools": toolsChanged, "prompts": promptsChanged} {
		select {
		case <-c:
		case <-time.After(5 * time.Second):
			t.Errorf("no %s/list_changed after the edit", name)
		}
	}

	// A listing without a change sends nothing.
	_ = skillTool(t, cs)
	_ = promptNames(t, cs)
	select {
	case <-toolsChanged:
		t.Errorf("tools/list_changed without a change")
	case <-promptsChanged:
		t.Errorf("prompts/list_changed without a change")
	case <-time.After(300 * time.Millisecond):
	}
	_ = ctx
}

// flakyFS fails to list .agents/skills while fail is set.
type flakyFS struct {
	skills.FS
	fail atomic.Bool
}

func (f *flakyFS) ReadDir(dir string) ([]skills.Entry, error) {
	if f.fail.Load() && dir == ".agents/skills" {
		return nil, fs.ErrPermission
	}
	return f.FS.ReadDir(dir)
}

// TestSkillsIncompleteDiscoveryKeepsCatalog: while a root cannot be
// read, the served catalog stays the last complete one, nothing is
// announced, and status says why.
func TestSkillsIncompleteDiscoveryKeepsCatalog(t *testing.T) {
	ws := t.TempDir()
	writeSkill(t, ws, ".dsh/skills/one.md", "---\nname: one\ndescription: First.\n---\n")
	wfs, err := execworld.OpenFS(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer wfs.Close()
	flaky := &flakyFS{FS: skills.WorldFS(wfs)}
	f := newFixture(t, func(o *gateway.Options) { o.Skills = skills.NewDiscoverer(skills.Config{Project: flaky}) })
	changed := make(chan struct{}, 10)
	cs := f.connect(t, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	before := skillTool(t, cs).Description
	time.Sleep(50 * time.Millisecond)
	for len(changed) > 0 {
		<-changed
	}

	flaky.fail.Store(true)
	writeSkill(t, ws, ".dsh/skills/two.md", "---\nname: two\ndescription: Second.\n---\n")
	if got := skillTool(t, cs).Description; got != before {
		t.Errorf("incomplete discovery changed the catalog:\n%s", got)
	}
	if st := text(call(t, cs, "status", nil)); !strings.Contains(st, "incomplete discovery, the last complete catalog stays: skill root .agents/skills") {
		t.Errorf("status does not say the discovery is incomplete:\n%s", st)
	}
	select {
	case <-changed:
		t.Errorf("tools/list_changed for an incomplete discovery")
	case <-time.After(300 * time.Millisecond):
	}

	flaky.fail.Store(false)
	if got := skillTool(t, cs).Description; !strings.Contains(got, "- two: Second.") {
		t.Errorf("complete again, the catalog lacks two:\n%s", got)
	}
}

// TestSkillResourcesFollowFiles: a file added to a skill's directory on
// the host is a resource in the next resources/list, though the catalog
// (and its digest) did not change; a removed one goes.
func TestSkillResourcesFollowFiles(t *testing.T) {
	ws, cs, _, _ := skillsFixture(t)
	ctx := context.Background()
	uris := func() string {
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res.Resources {
			if strings.HasPrefix(r.URI, "skill://") {
				out = append(out, r.URI)
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	if got, want := uris(), "skill://both/SKILL.md skill://both/refs/guide.md skill://user-only/SKILL.md"; got != want {
		t.Errorf("resources %q; want %q", got, want)
	}
	writeSkill(t, ws, ".dsh/skills/both/scripts/run.sh", "echo hi\n")
	if err := os.Remove(filepath.Join(ws, ".dsh/skills/both/refs/guide.md")); err != nil {
		t.Fatal(err)
	}
	if got, want := uris(), "skill://both/SKILL.md skill://both/scripts/run.sh skill://user-only/SKILL.md"; got != want {
		t.Errorf("resources after the edit %q; want %q", got, want)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://both/scripts/run.sh"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "echo hi\n" {
		t.Errorf("read run.sh: %+v, %v", rr, err)
	}
}

package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/execworld"
)

// fakeFS is a tree of files; directories are implied by the paths. fail
// makes ReadDir of a directory (or ReadFile of a file) fail.
type fakeFS struct {
	files map[string]string
	fail  map[string]error
}

func (f *fakeFS) ReadDir(dir string) ([]Entry, error) {
	if err := f.fail[dir]; err != nil {
		return nil, err
	}
	seen := map[string]Entry{}
	for p := range f.files {
		rest, ok := strings.CutPrefix(p, dir+"/")
		if !ok {
			continue
		}
		name, deeper, _ := strings.Cut(rest, "/")
		if deeper != "" {
			seen[name] = Entry{Name: name, Dir: true}
		} else {
			seen[name] = Entry{Name: name, File: true}
		}
	}
	if len(seen) == 0 {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	var es []Entry
	for _, e := range seen {
		es = append(es, e)
	}
	return es, nil
}

func (f *fakeFS) ReadFile(name string, max int64) ([]byte, error) {
	if err := f.fail[name]; err != nil {
		return nil, err
	}
	s, ok := f.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if int64(len(s)) > max {
		return nil, ErrTooLarge
	}
	return []byte(s), nil
}

func skillFile(name, desc, extra string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n" + extra + "---\nbody of " + name + "\n"
}

func TestParseBooleans(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{{"true", true}, {"yes", true}, {"on", true}, {"1", true}, {"false", false}, {"no", false}, {"off", false}, {"0", false}} {
		h, _, err := parse([]byte(skillFile("a", "d", "user-invocable: "+tc.v+"\ndisable-model-invocation: "+tc.v+"\n")))
		if err != nil {
			t.Fatalf("%s: %v", tc.v, err)
		}
		if h.UserInvocable != tc.want || h.ModelInvocable != !tc.want {
			t.Errorf("%s: user-invocable %v, model-invocable %v; want %v, %v", tc.v, h.UserInvocable, h.ModelInvocable, tc.want, !tc.want)
		}
	}
	h, _, err := parse([]byte(skillFile("a", "d", "")))
	if err != nil || !h.UserInvocable || !h.ModelInvocable {
		t.Errorf("defaults: %+v, %v; want both invocable", h, err)
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"invalid user-invocable", skillFile("a", "d", "user-invocable: maybe\n"), `user-invocable: "maybe" is not a boolean`},
		{"invalid disable-model-invocation", skillFile("a", "d", "disable-model-invocation: TRUE\n"), `disable-model-invocation: "TRUE" is not a boolean`},
		{"empty boolean", skillFile("a", "d", "user-invocable: \"\"\n"), `user-invocable: "" is not a boolean`},
		{"list boolean", skillFile("a", "d", "user-invocable: [1]\n"), "user-invocable: must be a string"},
		{"missing name", "---\ndescription: d\n---\nbody", "name: missing"},
		{"missing description", "---\nname: a\n---\nbody", "description: missing"},
		{"blank description", "---\nname: a\ndescription: \"  \"\n---\n", "description: missing"},
		{"empty frontmatter", "---\n---\nbody", "name: missing"},
		{"camel name", skillFile("mySkill", "d", ""), `name: "mySkill" is not kebab-case`},
		{"double hyphen", skillFile("a--b", "d", ""), "is not kebab-case"},
		{"trailing hyphen", skillFile("a-", "d", ""), "is not kebab-case"},
		{"long name", skillFile(strings.Repeat("a", MaxNameLen+1), "d", ""), "is not kebab-case"},
		{"no frontmatter", "# just markdown\n", "no frontmatter"},
		{"unclosed", "---\nname: a\ndescription: d\n", "not closed"},
		{"not yaml", "---\nname: [\n---\n", "not YAML"},
		{"not a mapping", "---\n- a\n---\n", "not a mapping"},
		{"metadata scalar", skillFile("a", "d", "metadata: x\n"), "metadata: must be a mapping"},
		{"duplicate key", skillFile("a", "d", "name: b\n"), "name: given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parse([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	h, body, err := parse([]byte("\ufeff---\r\nname: pdf-tools\r\ndescription: Fill PDF forms.\r\nwhen_to_use: a PDF is given\r\nmetadata:\r\n  version: 2\r\nlicense: MIT\r\n---\r\nStep 1.\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "pdf-tools" || h.Description != "Fill PDF forms." || h.WhenToUse != "a PDF is given" || h.Metadata["version"] != 2 || body != "Step 1.\n" {
		t.Errorf("got %+v body %q", h, body)
	}
	h, _, err = parse([]byte(skillFile("a", "d", "whenToUse: later\n")))
	if err != nil || h.WhenToUse != "later" {
		t.Errorf("whenToUse: %+v, %v", h, err)
	}
}

func TestBoundedDescription(t *testing.T) {
	long := strings.Repeat("é", MaxDescriptionLen+10)
	project := &fakeFS{files: map[string]string{".dsh/skills/a/SKILL.md": skillFile("a", long, "")}}
	c := NewDiscoverer(Config{Project: project}).Discover().Catalog
	got := c.ModelCatalog()
	if len(got) != 1 || len([]rune(got[0].Description)) != MaxDescriptionLen {
		t.Fatalf("catalog %d runes; want %d", len([]rune(got[0].Description)), MaxDescriptionLen)
	}
	if s, _ := c.Lookup("a"); s.Description != long {
		t.Errorf("Lookup cut the description")
	}
}

func names(c *Catalog) string {
	var out []string
	for _, s := range c.Skills {
		out = append(out, fmt.Sprintf("%s@%s:%d", s.Name, s.Provenance, s.Rank))
	}
	return strings.Join(out, " ")
}

func TestRanks(t *testing.T) {
	project := &fakeFS{files: map[string]string{
		".dsh/skills/both/SKILL.md":      skillFile("both", "dsh", ""),
		".agents/skills/both/SKILL.md":   skillFile("both", "agents", ""),
		".agents/skills/agents.md":       skillFile("agents", "flat file", ""),
		".agents/skills/deep/x/SKILL.md": skillFile("deep", "two levels down", ""),
		".agents/skills/notes.txt":       "not a skill",
		".agents/skills/empty/README":    "a directory without SKILL.md",
	}}
	host := &fakeFS{files: map[string]string{
		"/home/u/.dsh/skills/both/SKILL.md":    skillFile("both", "user", ""),
		"/home/u/.dsh/skills/user/SKILL.md":    skillFile("user", "user dsh", ""),
		"/home/u/.agents/skills/user/SKILL.md": skillFile("user", "user agents", ""),
		"/home/u/.agents/skills/agent.md":      skillFile("agent", "user agents", ""),
		"/opt/custom/user.md":                  skillFile("user", "custom", ""),
		"/opt/bundled/agent.md":                skillFile("agent", "bundled", ""),
		"/opt/bundled/bundled/SKILL.md":        skillFile("bundled", "bundled", ""),
	}}
	cfg := Config{Project: project, Host: host, Home: "/home/u", Custom: []string{"/opt/custom"}, Bundled: "/opt/bundled",
		Runtime: []RuntimeSkill{{Origin: "test", Data: []byte(skillFile("user", "runtime", ""))}}}
	r := NewDiscoverer(cfg).Discover()
	if len(r.Problems) != 0 || r.Stale {
		t.Fatalf("problems %v", r.Problems)
	}
	want := "agent@user:500 agents@project:200 both@project:100 bundled@bundled:600 user@runtime:250"
	if got := names(r.Catalog); got != want {
		t.Errorf("catalog\n got %s\nwant %s", got, want)
	}
	s, _ := r.Catalog.Lookup("both")
	if s.Description != "dsh" || s.Base != ".dsh/skills/both" || s.Path != ".dsh/skills/both/SKILL.md" || s.Layer != LayerName {
		t.Errorf("both = %+v", s)
	}
	if s, _ := r.Catalog.Lookup("agents"); s.Base != "" || s.Path != ".agents/skills/agents.md" {
		t.Errorf("flat skill = %+v", s)
	}
	var shadowed []string
	for _, d := range r.Catalog.Dropped {
		shadowed = append(shadowed, d.Path+" <- "+d.Reason)
	}
	sort.Strings(shadowed)
	wantShadowed := []string{
		"/home/u/.agents/skills/user/SKILL.md <- shadowed by runtime:test (layer workspace, rank 250)",
		"/home/u/.dsh/skills/both/SKILL.md <- shadowed by .dsh/skills/both/SKILL.md (layer workspace, rank 100)",
		"/home/u/.dsh/skills/user/SKILL.md <- shadowed by runtime:test (layer workspace, rank 250)",
		"/opt/bundled/agent.md <- shadowed by /home/u/.agents/skills/agent.md (layer workspace, rank 500)",
		"/opt/custom/user.md <- shadowed by runtime:test (layer workspace, rank 250)",
		".agents/skills/both/SKILL.md <- shadowed by .dsh/skills/both/SKILL.md (layer workspace, rank 100)",
	}
	sort.Strings(wantShadowed)
	if strings.Join(shadowed, "\n") != strings.Join(wantShadowed, "\n") {
		t.Errorf("dropped\n got %s\nwant %s", strings.Join(shadowed, "\n"), strings.Join(wantShadowed, "\n"))
	}
}

func TestLayersNearerReplaces(t *testing.T) {
	sk := func(name, path string, rank int) Skill { return Skill{Name: name, Path: path, Rank: rank} }
	c := Resolve(
		Layer{"global", []Skill{sk("a", "g/a-600", 600), sk("a", "g/a-100", 100), sk("b", "g/b", 100), sk("c", "g/c-1", 300), sk("c", "g/c-2", 300)}},
		Layer{"agent", []Skill{sk("a", "n/a-600", 600), sk("d", "n/d", 400)}},
	)
	got := map[string]string{}
	for _, s := range c.Skills {
		got[s.Name] = s.Layer + ":" + s.Path
	}
	want := map[string]string{"a": "agent:n/a-600", "b": "global:g/b", "c": "global:g/c-1", "d": "agent:n/d"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if len(c.Dropped) != 3 {
		t.Errorf("dropped %+v; want g/a-600 (rank), g/c-2 (registration order), g/a-100 (nearer layer)", c.Dropped)
	}
}

func TestDroppedWithReason(t *testing.T) {
	project := &fakeFS{files: map[string]string{
		".dsh/skills/bad/SKILL.md":  skillFile("bad", "d", "user-invocable: perhaps\n"),
		".dsh/skills/big/SKILL.md":  skillFile("big", strings.Repeat("x", MaxFileBytes), ""),
		".dsh/skills/noname.md":     "---\ndescription: d\n---\n",
		".dsh/skills/good/SKILL.md": skillFile("good", "d", "disable-model-invocation: yes\n"),
	}}
	c := NewDiscoverer(Config{Project: project}).Discover().Catalog
	if names(c) != "good@project:100" {
		t.Errorf("catalog %s", names(c))
	}
	if len(c.ModelCatalog()) != 0 {
		t.Errorf("a disable-model-invocation skill is in the model catalog")
	}
	reasons := map[string]string{}
	for _, d := range c.Dropped {
		reasons[d.Path] = d.Reason
	}
	for p, want := range map[string]string{".dsh/skills/bad/SKILL.md": "perhaps", ".dsh/skills/big/SKILL.md": "larger than", ".dsh/skills/noname.md": "name: missing"} {
		if !strings.Contains(reasons[p], want) {
			t.Errorf("%s: reason %q; want %q", p, reasons[p], want)
		}
	}
}

func TestIncompleteKeepsLastGood(t *testing.T) {
	project := &fakeFS{files: map[string]string{".dsh/skills/a/SKILL.md": skillFile("a", "one", "")}, fail: map[string]error{}}
	d := NewDiscoverer(Config{Project: project})

	project.fail[".agents/skills"] = fs.ErrPermission
	r := d.Discover()
	if r.Stale || len(r.Problems) != 1 || names(r.Catalog) != "a@project:100" {
		t.Fatalf("first, incomplete: %+v; want the partial catalog with one problem", r)
	}

	delete(project.fail, ".agents/skills")
	r = d.Discover()
	if r.Stale || len(r.Problems) != 0 {
		t.Fatalf("complete: %+v", r)
	}
	good := r.Catalog.Digest

	project.files[".dsh/skills/b/SKILL.md"] = skillFile("b", "two", "")
	project.fail[".dsh/skills/a/SKILL.md"] = errors.New("input/output error")
	r = d.Discover()
	if !r.Stale || r.Catalog.Digest != good || names(r.Catalog) != "a@project:100" {
		t.Errorf("incomplete after complete: stale %v catalog %s; want the last good one", r.Stale, names(r.Catalog))
	}
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], ".dsh/skills/a/SKILL.md cannot be read: input/output error") {
		t.Errorf("problems %q", r.Problems)
	}

	delete(project.fail, ".dsh/skills/a/SKILL.md")
	r = d.Discover()
	if r.Stale || names(r.Catalog) != "a@project:100 b@project:100" || r.Catalog.Digest == good {
		t.Errorf("complete again: %s stale %v", names(r.Catalog), r.Stale)
	}
}

func TestDigest(t *testing.T) {
	project := &fakeFS{files: map[string]string{".dsh/skills/a/SKILL.md": skillFile("a", "one", "")}}
	d := NewDiscoverer(Config{Project: project})
	first := d.Discover().Catalog.Digest
	project.files[".dsh/skills/a/SKILL.md"] = skillFile("a", "one", "") + "more body\n"
	if got := d.Discover().Catalog.Digest; got != first {
		t.Errorf("a body-only edit changed the digest")
	}
	project.files[".dsh/skills/a/SKILL.md"] = skillFile("a", "one", "user-invocable: no\n")
	if got := d.Discover().Catalog.Digest; got == first {
		t.Errorf("user-invocable: no kept the digest")
	}
}

// TestWorldFSStaysInTheWorkspace: project roots are read through the
// world's FS, so a skill symlinked to a host file is not read.
func TestWorldFSStaysInTheWorkspace(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, ".dsh/skills/ok/SKILL.md"), skillFile("ok", "inside", ""))
	write(filepath.Join(outside, "evil/SKILL.md"), skillFile("evil", "outside", ""))
	if err := os.Symlink(filepath.Join(outside, "evil"), filepath.Join(ws, ".dsh/skills/evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, ".agents/skills/link"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "evil/SKILL.md"), filepath.Join(ws, ".agents/skills/link/SKILL.md")); err != nil {
		t.Fatal(err)
	}
	wfs, err := execworld.OpenFS(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer wfs.Close()
	r := NewDiscoverer(Config{Project: WorldFS(wfs)}).Discover()
	if names(r.Catalog) != "ok@project:100" {
		t.Errorf("catalog %s; want only ok", names(r.Catalog))
	}
	// The symlinked directory is dropped; the symlinked SKILL.md escapes
	// the workspace, which the kernel refuses: dropped too, with the
	// reason, and the discovery stays complete.
	var dropped []string
	for _, d := range r.Catalog.Dropped {
		dropped = append(dropped, d.Path+": "+d.Reason)
	}
	sort.Strings(dropped)
	if len(dropped) != 2 || !strings.HasPrefix(dropped[0], ".agents/skills/link/SKILL.md: refused: ") || !strings.Contains(dropped[0], "outside the workspace") ||
		!strings.HasPrefix(dropped[1], ".dsh/skills/evil: not a directory or regular file") {
		t.Errorf("dropped %q; want the symlinked SKILL.md and directory", dropped)
	}
	if len(r.Problems) != 0 {
		t.Errorf("problems %q; want none", r.Problems)
	}
}

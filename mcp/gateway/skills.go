package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/skills"
)

// SkillToolName is the tool that loads a skill for the model.
const SkillToolName = "skill"

// maxSkillResourceBytes caps one skill file served as a resource.
const maxSkillResourceBytes = 1 << 20

// servedSkills offers the skill catalog: the skill tool (its description
// the sorted model-invocable catalog), the user-invocable skills as
// prompts and the skills' files as skill://NAME/PATH resources. It looks
// again before every tools/list, prompts/list and resources/list, and
// changes what is served only when a complete discovery has a new digest
// (the go-sdk then sends list_changed).
type servedSkills struct {
	g *Gateway
	d *skills.Discoverer

	mu        sync.Mutex
	digest    string
	problems  []string
	prompts   map[string]bool
	resources map[string]bool
}

func (g *Gateway) startSkills() {
	ss := &servedSkills{g: g, d: g.opts.Skills, prompts: map[string]bool{}, resources: map[string]bool{}}
	g.skills = ss
	ss.refresh()
	g.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list", "prompts/list", "resources/list":
				ss.refresh()
			}
			return next(ctx, method, req)
		}
	})
}

// refresh discovers again and serves the catalog if it changed. An
// incomplete discovery changes nothing.
//
// Refreshes are serialized (held across the discovery), so an older
// discovery never replaces a newer one. The digest covers the catalog, not
// a skill directory's file set, which is compared on its own.
func (ss *servedSkills) refresh() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	r := ss.d.Discover()
	ss.problems = r.Problems
	if len(r.Problems) > 0 {
		ss.g.log.Warn("skill discovery was incomplete; the last complete catalog stays", "problems", strings.Join(r.Problems, "; "))
		if ss.digest != "" || r.Stale {
			return
		}
	}
	ss.syncResources(r.Catalog)
	if r.Catalog.Digest == ss.digest {
		return
	}
	ss.digest = r.Catalog.Digest
	ss.g.server.AddTool(skillTool(r.Catalog), ss.call)

	next := map[string]bool{}
	for _, s := range r.Catalog.Skills {
		if s.UserInvocable {
			next[s.Name] = true
		}
	}
	gone := goneKeys(ss.prompts, next)
	if len(gone) > 0 {
		ss.g.server.RemovePrompts(gone...)
	}
	for _, s := range r.Catalog.Skills {
		if s.UserInvocable {
			ss.g.server.AddPrompt(&mcp.Prompt{Name: s.Name, Description: s.Description}, ss.prompt(s.Name))
		}
	}
	ss.prompts = next
}

// syncResources serves the files of c's skills as skill://NAME/PATH: new
// ones added, gone ones removed, the others left alone.
func (ss *servedSkills) syncResources(c *skills.Catalog) {
	nextRes := map[string]bool{}
	for _, s := range c.Skills {
		files, err := s.Files()
		if err != nil {
			ss.g.log.Warn("a skill's files are not served", "skill", s.Name, "err", err)
			continue
		}
		for _, f := range files {
			uri := skills.ResourceBase(s.Name) + f
			nextRes[uri] = true
			if ss.resources[uri] {
				continue
			}
			ss.g.server.AddResource(&mcp.Resource{URI: uri, Name: s.Name + "/" + f, MIMEType: mimeOf(f)}, ss.read(s.Name, f))
		}
	}
	var goneRes []string
	for uri := range ss.resources {
		if !nextRes[uri] {
			goneRes = append(goneRes, uri)
		}
	}
	if len(goneRes) > 0 {
		ss.g.server.RemoveResources(goneRes...)
	}
	ss.resources = nextRes
}

func mimeOf(name string) string {
	if strings.HasSuffix(name, ".md") {
		return "text/markdown"
	}
	return ""
}

// skillTool is the skill tool, its description carrying the catalog.
func skillTool(c *skills.Catalog) *mcp.Tool {
	var b strings.Builder
	b.WriteString("Load a skill: trusted instructions for a kind of task. Call it with the name of the skill that fits the task before doing the task, then follow the instructions it returns.\n<available_skills>\n")
	cat := c.ModelCatalog()
	for _, s := range cat {
		fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Description)
	}
	if len(cat) == 0 {
		b.WriteString("(none)\n")
	}
	b.WriteString("</available_skills>")
	return &mcp.Tool{
		Name:        SkillToolName,
		Description: b.String(),
		InputSchema: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"name": map[string]any{"type": "string", "description": "the skill's name, as listed in available_skills"}},
			"required":             []string{"name"},
			"additionalProperties": false,
		},
	}
}

// current discovers again for a call: the skill must still exist.
func (ss *servedSkills) current(name string) (*skills.Skill, error) {
	r := ss.d.Discover()
	s, ok := r.Catalog.Lookup(name)
	if !ok {
		for _, d := range r.Catalog.Dropped {
			if d.Name == name && !strings.HasPrefix(d.Reason, "shadowed") {
				return nil, fmt.Errorf("skill %s is not available: %s: %s", name, d.Path, d.Reason)
			}
		}
		return nil, fmt.Errorf("no skill %q; the skill tool's description lists the available ones", name)
	}
	return s, nil
}

func (ss *servedSkills) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.Name == "" {
		return errorResult(fmt.Errorf("skill: give the name of a skill, as {\"name\": \"NAME\"}")), nil
	}
	s, err := ss.current(in.Name)
	if err != nil {
		return errorResult(fmt.Errorf("skill: %w", err)), nil
	}
	if !s.ModelInvocable {
		return errorResult(fmt.Errorf("skill: %s has disable-model-invocation set: only the user may invoke it (the prompt %s)", s.Name, s.Name)), nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: skills.Render(s)}}}, nil
}

func (ss *servedSkills) prompt(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		s, err := ss.current(name)
		if err != nil {
			return nil, err
		}
		if !s.UserInvocable {
			return nil, fmt.Errorf("skill %s has user-invocable set to false: only the model may load it (the skill tool)", name)
		}
		return &mcp.GetPromptResult{
			Description: s.Description,
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: skills.Render(s)}}},
		}, nil
	}
}

func (ss *servedSkills) read(name, rel string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		s, err := ss.current(name)
		if err != nil {
			return nil, err
		}
		data, err := s.ReadFile(rel, maxSkillResourceBytes)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", req.Params.URI, err)
		}
		rc := &mcp.ResourceContents{URI: req.Params.URI, MIMEType: mimeOf(rel)}
		if utf8.Valid(data) {
			rc.Text = string(data)
		} else {
			rc.Blob = data
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
	}
}

// skillsStatus is the skills capability of status.
func (g *Gateway) skillsStatus() Capability {
	if g.skills == nil {
		return Capability{Name: "skills", Exists: true, Reason: "dsh serve was started without skill discovery"}
	}
	ss := g.skills
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c := Capability{Name: "skills", Exists: true, Configured: true, Visible: true, Ready: len(ss.problems) == 0}
	if !c.Ready {
		c.Reason = "incomplete discovery, the last complete catalog stays: " + strings.Join(ss.problems, "; ")
	}
	return c
}

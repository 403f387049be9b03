package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"path"
	"slices"
	"strings"
	"sync"
)

// Layer is one scope of skills, its skills in registration order.
type Layer struct {
	Name   string
	Skills []Skill
}

// Catalog is the merged set of skills, sorted by name.
type Catalog struct {
	Skills  []Skill   `json:"skills"`
	Dropped []Dropped `json:"dropped,omitempty"`
	// Digest changes when a name, description, invocation flag or path
	// changes, not when only a body does.
	Digest string `json:"digest"`
}

// Resolve merges layers, farthest first: inside one layer the lowest
// rank wins a name (registration order breaks equal ranks); a later
// (nearer) layer replaces a same-name entry outright, whatever its rank.
// The losers are Dropped, saying who shadows them.
func Resolve(layers ...Layer) *Catalog {
	won := map[string]Skill{}
	var dropped []Dropped
	shadow := func(s, by Skill) {
		dropped = append(dropped, Dropped{Name: s.Name, Path: s.Path, Layer: s.Layer, Rank: s.Rank, Root: s.Root, Provenance: s.Provenance,
			Reason: fmt.Sprintf("shadowed by %s (layer %s, rank %d)", by.Path, by.Layer, by.Rank)})
	}
	for _, l := range layers {
		in := slices.Clone(l.Skills)
		for i := range in {
			in[i].Layer = l.Name
		}
		slices.SortStableFunc(in, func(a, b Skill) int { return a.Rank - b.Rank })
		best := map[string]Skill{}
		var order []string
		for _, s := range in {
			if b, ok := best[s.Name]; ok {
				shadow(s, b)
				continue
			}
			best[s.Name] = s
			order = append(order, s.Name)
		}
		for _, name := range order {
			if old, ok := won[name]; ok {
				shadow(old, best[name])
			}
			won[name] = best[name]
		}
	}
	c := &Catalog{Dropped: dropped}
	for _, s := range won {
		c.Skills = append(c.Skills, s)
	}
	slices.SortFunc(c.Skills, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	c.Digest = digest(c.Skills)
	return c
}

func digest(ss []Skill) string {
	h := sha256.New()
	for _, s := range ss {
		b, _ := json.Marshal([]any{s.Name, s.Description, s.WhenToUse, s.ModelInvocable, s.UserInvocable, s.Path, s.Provenance})
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Lookup returns the skill called name.
func (c *Catalog) Lookup(name string) (*Skill, bool) {
	i, ok := slices.BinarySearchFunc(c.Skills, name, func(s Skill, n string) int { return strings.Compare(s.Name, n) })
	if !ok {
		return nil, false
	}
	return &c.Skills[i], true
}

// Summary is one catalog line: a name and its bounded description.
type Summary struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// ModelCatalog lists the model-invocable skills, sorted by name, with
// descriptions cut to MaxDescriptionLen.
func (c *Catalog) ModelCatalog() []Summary {
	var out []Summary
	for _, s := range c.Skills {
		if s.ModelInvocable {
			out = append(out, Summary{s.Name, bounded(s.Description)})
		}
	}
	return out
}

// LayerName is the layer of the filesystem and runtime skills.
const LayerName = "workspace"

// Discoverer keeps the last complete catalog of a Config.
type Discoverer struct {
	cfg  Config
	mu   sync.Mutex
	last *Catalog
}

// NewDiscoverer returns a Discoverer of c.
func NewDiscoverer(c Config) *Discoverer { return &Discoverer{cfg: c} }

// Result is one look at the skills.
type Result struct {
	Catalog *Catalog
	// Problems say why the discovery was incomplete; empty if complete.
	Problems []string
	// Stale reports that Catalog is the last complete one, kept because
	// this discovery was incomplete.
	Stale bool
}

// Discover looks again. A complete discovery becomes the catalog; an
// incomplete one keeps the last complete catalog (Stale) and reports the
// problems — there is no last one before the first complete discovery, so
// then the partial catalog is returned, with its problems.
func (d *Discoverer) Discover() Result {
	o := Discover(d.cfg)
	c := Resolve(Layer{Name: LayerName, Skills: o.Skills})
	c.Dropped = append(o.Dropped, c.Dropped...)
	d.mu.Lock()
	defer d.mu.Unlock()
	if o.Complete() {
		d.last = c
		return Result{Catalog: c}
	}
	if d.last != nil {
		return Result{Catalog: d.last, Problems: o.Problems, Stale: true}
	}
	return Result{Catalog: c, Problems: o.Problems}
}

// ResourceBase is the URI under which a skill's files are served.
func ResourceBase(name string) string { return "skill://" + name + "/" }

// Render frames a skill's body for the model or the user, the same on
// both paths: the framing metadata is escaped, the body is embedded
// verbatim (a skill is trusted instructions: following it is its
// purpose).
func Render(s *Skill) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<skill_content name=\"%s\">\n", html.EscapeString(s.Name))
	if s.Base != "" {
		fmt.Fprintf(&b, "<resource_base>%s</resource_base>\n", html.EscapeString(ResourceBase(s.Name)))
	}
	b.WriteString(s.Body)
	if !strings.HasSuffix(s.Body, "\n") {
		b.WriteString("\n")
	}
	b.WriteString("</skill_content>\n")
	if s.Base != "" {
		fmt.Fprintf(&b, "Files this skill refers to are resources under %s (relative paths in the body are relative to it); read one only when the task needs it.\n", ResourceBase(s.Name))
	}
	return b.String()
}

// MaxResources caps the files of one skill served as resources, and
// maxResourceDepth how deep below its directory they are looked for.
const (
	MaxResources     = 100
	maxResourceDepth = 3
)

// Files lists the regular files of a <name>/SKILL.md skill's directory,
// relative to it, sorted, at most MaxResources and maxResourceDepth
// levels deep. Hidden entries are left out.
func (s *Skill) Files() ([]string, error) {
	if s.Base == "" || s.fs == nil {
		return nil, nil
	}
	var out []string
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		es, err := s.fs.ReadDir(path.Join(s.Base, rel))
		if err != nil {
			return err
		}
		slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
		for _, e := range es {
			if strings.HasPrefix(e.Name, ".") || len(out) >= MaxResources {
				continue
			}
			p := path.Join(rel, e.Name)
			switch {
			case e.File:
				out = append(out, p)
			case e.Dir && depth < maxResourceDepth:
				if err := walk(p, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("", 1); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadFile reads the file rel (as listed by Files) of the skill.
func (s *Skill) ReadFile(rel string, max int64) ([]byte, error) {
	if s.Base == "" || s.fs == nil {
		return nil, fmt.Errorf("skill %s has no files beside its body", s.Name)
	}
	clean := path.Clean(rel)
	if clean != rel || path.IsAbs(rel) || clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, fmt.Errorf("%q is not a path inside skill %s", rel, s.Name)
	}
	return s.fs.ReadFile(path.Join(s.Base, rel), max)
}

package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
)

// Provenance says where a skill comes from.
type Provenance string

const (
	Project Provenance = "project"
	Runtime Provenance = "runtime"
	Custom  Provenance = "custom"
	User    Provenance = "user"
	Bundled Provenance = "bundled"
)

// The ranks of the roots: lower wins inside one layer.
const (
	RankProjectDsh    = 100
	RankProjectAgents = 200
	RankRuntime       = 250
	RankCustom        = 300
	RankUserDsh       = 400
	RankUserAgents    = 500
	RankBundled       = 600
)

// Root is one directory of skills.
type Root struct {
	// Path is relative to the workspace for project roots, absolute
	// otherwise.
	Path       string
	Rank       int
	Provenance Provenance
	FS         FS
}

// RuntimeSkill is a skill registered by code rather than found in a root;
// Origin names it in reports.
type RuntimeSkill struct {
	Origin string
	Data   []byte
}

// Config says where to look.
type Config struct {
	// Project reads the workspace (the world's FS); nil: no project roots.
	Project FS
	// Home is the user's home directory; "" leaves out the user roots.
	Home string
	// Custom are operator-configured roots, absolute host paths.
	Custom []string
	// Bundled is the root shipped with dsh; "" for none.
	Bundled string
	// Runtime are skills registered by code.
	Runtime []RuntimeSkill
	// Host reads user, custom and bundled roots; nil means HostFS().
	Host FS
}

// Roots lists the roots of c in rank order.
func (c Config) Roots() []Root {
	host := c.Host
	if host == nil {
		host = HostFS()
	}
	var rs []Root
	if c.Project != nil {
		rs = append(rs,
			Root{".dsh/skills", RankProjectDsh, Project, c.Project},
			Root{".agents/skills", RankProjectAgents, Project, c.Project})
	}
	for _, p := range c.Custom {
		rs = append(rs, Root{p, RankCustom, Custom, host})
	}
	if c.Home != "" {
		rs = append(rs,
			Root{path.Join(c.Home, ".dsh/skills"), RankUserDsh, User, host},
			Root{path.Join(c.Home, ".agents/skills"), RankUserAgents, User, host})
	}
	if c.Bundled != "" {
		rs = append(rs, Root{c.Bundled, RankBundled, Bundled, host})
	}
	return rs
}

// Skill is one valid skill.
type Skill struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	WhenToUse   string         `json:"when_to_use,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	// ModelInvocable is false when disable-model-invocation is set: only
	// a user may invoke the skill.
	ModelInvocable bool       `json:"model_invocable"`
	UserInvocable  bool       `json:"user_invocable"`
	Layer          string     `json:"layer"`
	Rank           int        `json:"rank"`
	Root           string     `json:"root"`
	Provenance     Provenance `json:"provenance"`
	// Path is the skill file; Base the directory of a <name>/SKILL.md
	// skill, where its other files live ("" for a <name>.md skill).
	Path string `json:"path"`
	Base string `json:"base,omitempty"`
	Body string `json:"-"`

	fs FS
}

// FS is where the skill's files are read from.
func (s *Skill) FS() FS { return s.fs }

// Dropped is a skill file that is not in the catalog, and why.
type Dropped struct {
	Name       string     `json:"name,omitempty"`
	Path       string     `json:"path"`
	Layer      string     `json:"layer,omitempty"`
	Rank       int        `json:"rank"`
	Root       string     `json:"root"`
	Provenance Provenance `json:"provenance"`
	Reason     string     `json:"reason"`
}

// Observation is what one discovery saw: the valid skills in registration
// order, the dropped files, and the problems that made it incomplete.
type Observation struct {
	Skills   []Skill
	Dropped  []Dropped
	Problems []string
}

// Complete reports whether every root could be read.
func (o *Observation) Complete() bool { return len(o.Problems) == 0 }

// ErrTooLarge is a skill file over MaxFileBytes.
var ErrTooLarge = errors.New("skill file is too large")

// Discover reads every root of c. A missing root is empty; a root that
// cannot be listed, or a skill file that cannot be read for another
// reason than its content, makes the observation incomplete.
func Discover(c Config) *Observation {
	o := &Observation{}
	for _, r := range c.Roots() {
		discoverRoot(o, r)
	}
	for _, rt := range c.Runtime {
		o.add(Root{Path: "runtime:" + rt.Origin, Rank: RankRuntime, Provenance: Runtime}, "runtime:"+rt.Origin, "", rt.Data, nil)
	}
	return o
}

func discoverRoot(o *Observation, r Root) {
	es, err := r.FS.ReadDir(r.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		o.Problems = append(o.Problems, fmt.Sprintf("skill root %s (%s, rank %d) cannot be read: %v; fix its permissions or remove it", r.Path, r.Provenance, r.Rank, err))
		return
	}
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range es {
		if strings.HasPrefix(e.Name, ".") {
			continue
		}
		var file, base string
		switch {
		case e.Dir:
			file, base = path.Join(r.Path, e.Name, "SKILL.md"), path.Join(r.Path, e.Name)
		case e.File && strings.HasSuffix(e.Name, ".md"):
			file = path.Join(r.Path, e.Name)
		case e.File:
			continue // not a skill: a README.txt, a script
		default:
			o.Dropped = append(o.Dropped, Dropped{Path: path.Join(r.Path, e.Name), Rank: r.Rank, Root: r.Path, Provenance: r.Provenance,
				Reason: "not a directory or regular file (symlinks are not followed in project roots); replace it by a directory with a SKILL.md"})
			continue
		}
		data, err := r.FS.ReadFile(file, MaxFileBytes)
		var tooLarge *execworld.TooLargeError
		switch {
		case e.Dir && errors.Is(err, fs.ErrNotExist):
			continue // a directory without SKILL.md is no skill
		case errors.Is(err, ErrTooLarge) || errors.As(err, &tooLarge):
			o.Dropped = append(o.Dropped, Dropped{Path: file, Rank: r.Rank, Root: r.Path, Provenance: r.Provenance,
				Reason: fmt.Sprintf("larger than %d bytes; move long material into files beside SKILL.md", MaxFileBytes)})
			continue
		case errors.Is(err, execworld.ErrEscape):
			o.Dropped = append(o.Dropped, Dropped{Path: file, Rank: r.Rank, Root: r.Path, Provenance: r.Provenance, Reason: "refused: " + err.Error()})
			continue
		case errors.Is(err, execworld.ErrNotRegular):
			o.Dropped = append(o.Dropped, Dropped{Path: file, Rank: r.Rank, Root: r.Path, Provenance: r.Provenance, Reason: "not a regular file"})
			continue
		case err != nil:
			o.Problems = append(o.Problems, fmt.Sprintf("skill file %s cannot be read: %v; fix its permissions or remove it", file, err))
			continue
		}
		o.add(r, file, base, data, r.FS)
	}
}

func (o *Observation) add(r Root, file, base string, data []byte, fsys FS) {
	h, body, err := parse(data)
	if err != nil {
		// The name the file is found under, for "why is X missing".
		name := strings.TrimSuffix(path.Base(file), ".md")
		if base != "" {
			name = path.Base(base)
		}
		o.Dropped = append(o.Dropped, Dropped{Name: name, Path: file, Rank: r.Rank, Root: r.Path, Provenance: r.Provenance, Reason: err.Error()})
		return
	}
	o.Skills = append(o.Skills, Skill{
		Name: h.Name, Description: h.Description, WhenToUse: h.WhenToUse, Metadata: h.Metadata,
		ModelInvocable: h.ModelInvocable, UserInvocable: h.UserInvocable,
		Rank: r.Rank, Root: r.Path, Provenance: r.Provenance, Path: file, Base: base, Body: body, fs: fsys,
	})
}

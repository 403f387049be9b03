package skills

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dsh-dev/dsh/internal/lazyre"
)

// MaxNameLen and MaxDescriptionLen bound a skill's name and the
// description published in the catalog (longer descriptions are cut
// there, never in Show).
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
)

var kebab = lazyre.New(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// header is a parsed frontmatter.
type header struct {
	Name           string
	Description    string
	WhenToUse      string
	Metadata       map[string]any
	ModelInvocable bool
	UserInvocable  bool
}

// parseBool accepts exactly the spellings true/false, yes/no, on/off and
// 1/0.
func parseBool(key, v string) (bool, error) {
	switch v {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("%s: %q is not a boolean; use true/false, yes/no, on/off or 1/0", key, v)
}

// parse splits a skill file into its frontmatter and body and validates
// the frontmatter. The error says which field is wrong and how to fix it.
func parse(data []byte) (*header, string, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	text = strings.TrimPrefix(text, "\ufeff")
	if !strings.HasPrefix(text, "---\n") {
		return nil, "", fmt.Errorf("no frontmatter: the file must start with a line \"---\", then name: and description:, then \"---\"")
	}
	rest := text[len("---\n"):]
	var fm, body string
	if strings.HasPrefix(rest, "---\n") || rest == "---" {
		fm, body = "", strings.TrimPrefix(strings.TrimPrefix(rest, "---"), "\n")
	} else if i := strings.Index(rest, "\n---\n"); i >= 0 {
		fm, body = rest[:i], rest[i+len("\n---\n"):]
	} else if strings.HasSuffix(rest, "\n---") {
		fm, body = strings.TrimSuffix(rest, "\n---"), ""
	} else {
		return nil, "", fmt.Errorf("frontmatter is not closed: add a line \"---\" after it")
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader([]byte(fm))).Decode(&doc); err != nil && fm != "" && strings.TrimSpace(fm) != "" {
		return nil, "", fmt.Errorf("frontmatter is not YAML: %v", err)
	}
	h := &header{ModelInvocable: true, UserInvocable: true}
	seen := map[string]bool{}
	if len(doc.Content) == 1 {
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode {
			return nil, "", fmt.Errorf("frontmatter is not a mapping of keys to values")
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i].Value, m.Content[i+1]
			if seen[k] {
				return nil, "", fmt.Errorf("%s: given twice", k)
			}
			seen[k] = true
			scalar := func() (string, error) {
				if v.Kind != yaml.ScalarNode {
					return "", fmt.Errorf("%s: must be a string", k)
				}
				return v.Value, nil
			}
			var err error
			switch k {
			case "name":
				h.Name, err = scalar()
			case "description":
				h.Description, err = scalar()
			case "when_to_use", "whenToUse":
				if seen["when_to_use"] && seen["whenToUse"] {
					return nil, "", fmt.Errorf("when_to_use and whenToUse both given; keep one")
				}
				h.WhenToUse, err = scalar()
			case "metadata":
				if v.Kind != yaml.MappingNode {
					return nil, "", fmt.Errorf("metadata: must be a mapping")
				}
				err = v.Decode(&h.Metadata)
			case "disable-model-invocation", "user-invocable":
				var s string
				if s, err = scalar(); err == nil {
					var b bool
					if b, err = parseBool(k, s); err == nil {
						if k == "user-invocable" {
							h.UserInvocable = b
						} else {
							h.ModelInvocable = !b
						}
					}
				}
			}
			if err != nil {
				return nil, "", err
			}
		}
	}
	switch {
	case h.Name == "":
		return nil, "", fmt.Errorf("name: missing; add a kebab-case name such as \"name: my-skill\"")
	case len(h.Name) > MaxNameLen || !kebab().MatchString(h.Name):
		return nil, "", fmt.Errorf("name: %q is not kebab-case (lowercase letters and digits joined by single hyphens, at most %d characters)", h.Name, MaxNameLen)
	case strings.TrimSpace(h.Description) == "":
		return nil, "", fmt.Errorf("description: missing; add one line saying what the skill does and when to use it")
	}
	return h, body, nil
}

// bounded cuts s to MaxDescriptionLen runes.
func bounded(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= MaxDescriptionLen {
		return s
	}
	return string(r[:MaxDescriptionLen-1]) + "…"
}

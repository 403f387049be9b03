package config

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-dev/dsh/internal/lazyre"
)

// importedServer is one server entry of an agent's configuration, in
// the union of the shapes Claude Desktop, Claude Code, Cursor (JSON
// mcpServers) and Codex (TOML mcp_servers) use.
type importedServer struct {
	Type      string            `json:"type" toml:"type"`
	Transport string            `json:"transport" toml:"transport"`
	Command   string            `json:"command" toml:"command"`
	Args      []string          `json:"args" toml:"args"`
	Env       map[string]string `json:"env" toml:"env"`
	Cwd       string            `json:"cwd" toml:"cwd"`
	URL       string            `json:"url" toml:"url"`
	Headers   map[string]string `json:"headers" toml:"http_headers"`
	Disabled  bool              `json:"disabled" toml:"disabled"`
	Enabled   *bool             `json:"enabled" toml:"enabled"`
}

var badNameChars = lazyre.New(`[^A-Za-z0-9_-]`)

// ImportMCP turns the MCP servers of an agent's configuration file into
// mcp.servers entries: Claude Desktop's claude_desktop_config.json,
// Claude Code's .mcp.json or ~/.claude.json and Cursor's mcp.json (a
// JSON object with mcpServers), or Codex's config.toml
// ([mcp_servers.NAME]); name is the file's name, which picks the format
// (.toml is Codex). Environment and header values are never copied: a
// literal becomes a ${NAME} reference to the host variable of the same
// name (a note says so), so no secret lands in dsh.yaml. Every entry gets
// the narrowest world (workspace none, no egress); the notes say what
// to widen.
func ImportMCP(name string, data []byte) ([]MCPServer, []string, error) {
	var servers map[string]importedServer
	if strings.EqualFold(filepath.Ext(name), ".toml") {
		var doc struct {
			MCPServers map[string]importedServer `toml:"mcp_servers"`
		}
		if err := toml.Unmarshal(data, &doc); err != nil {
			return nil, nil, fmt.Errorf("%s is not valid TOML: %w", name, err)
		}
		servers = doc.MCPServers
	} else {
		var doc struct {
			MCPServers map[string]importedServer `json:"mcpServers"`
			Servers    map[string]importedServer `json:"servers"` // VS Code's mcp.json
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, nil, fmt.Errorf("%s is not valid JSON: %w", name, err)
		}
		servers = doc.MCPServers
		if servers == nil {
			servers = doc.Servers
		}
	}
	if len(servers) == 0 {
		return nil, nil, fmt.Errorf("%s has no MCP servers (no mcpServers object, or no [mcp_servers.NAME] table)", name)
	}
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []MCPServer
	var notes []string
	used := map[string]bool{}
	for _, orig := range names {
		in := servers[orig]
		if in.Disabled || in.Enabled != nil && !*in.Enabled {
			notes = append(notes, fmt.Sprintf("%s: disabled in %s; not imported", orig, name))
			continue
		}
		n := badNameChars().ReplaceAllString(orig, "-")
		if len(n) > 32 {
			n = n[:32]
		}
		for base, i := n, 2; used[n] || n == ""; i++ {
			suffix := fmt.Sprintf("-%d", i)
			n = base[:min(len(base), 32-len(suffix))] + suffix
		}
		used[n] = true
		if n != orig {
			notes = append(notes, fmt.Sprintf("%s: renamed %s (server names are 1-32 of A-Z a-z 0-9 _ -); its tools are mcp__%s__<tool>", orig, n, n))
		}
		s := MCPServer{Name: n, Command: in.Command, Args: in.Args, Cwd: in.Cwd}
		kind := strings.ToLower(in.Type + in.Transport)
		switch {
		case in.URL != "" || strings.Contains(kind, "http") || strings.Contains(kind, "sse"):
			s.Transport, s.URL = "http", in.URL
			s.Command, s.Args = "", nil
			if len(in.Headers) > 0 {
				s.Headers = SecretHeaders{}
				for _, h := range sortedMapKeys(in.Headers) {
					v := in.Headers[h]
					if refRE().MatchString(v) {
						s.Headers[h] = v
						continue
					}
					env := strings.ToUpper(badNameChars().ReplaceAllString(n+"_"+h, "_"))
					s.Headers[h] = "${" + env + "}"
					notes = append(notes, fmt.Sprintf("%s: header %s now reads ${%s}; export %s with its value (it was not copied)", n, h, env, env))
				}
			}
		default:
			s.Transport = "stdio"
		}
		for _, k := range sortedMapKeys(in.Env) {
			v := in.Env[k]
			if refRE().MatchString(v) {
				s.Env = append(s.Env, k+"="+v)
				continue
			}
			s.Env = append(s.Env, k+"=${"+k+"}")
			notes = append(notes, fmt.Sprintf("%s: env %s now reads ${%s} from the host; export it (its value was not copied)", n, k, k))
		}
		s.World.Workspace = "none"
		notes = append(notes, fmt.Sprintf("%s: runs with workspace none and no egress; set world.workspace: rw and world.allow: [host:port] if it needs them", n))
		out = append(out, s)
	}
	return out, notes, nil
}

func sortedMapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ImportYAML renders imported servers as a dsh.yaml fragment (mcp:
// servers: ...). Env and header values are written as they are: an
// import holds only ${...} references, never a secret.
func ImportYAML(servers []MCPServer) ([]byte, error) {
	type world struct {
		Workspace string `yaml:"workspace"`
	}
	type entry struct {
		Name      string            `yaml:"name"`
		Transport string            `yaml:"transport"`
		Command   string            `yaml:"command,omitempty"`
		Args      []string          `yaml:"args,omitempty"`
		Cwd       string            `yaml:"cwd,omitempty"`
		Env       []string          `yaml:"env,omitempty"`
		URL       string            `yaml:"url,omitempty"`
		Headers   map[string]string `yaml:"headers,omitempty"`
		World     world             `yaml:"world"`
	}
	list := make([]entry, 0, len(servers))
	for _, s := range servers {
		list = append(list, entry{
			Name: s.Name, Transport: s.Transport, Command: s.Command, Args: s.Args, Cwd: s.Cwd,
			Env: []string(s.Env), URL: s.URL, Headers: map[string]string(s.Headers), World: world{s.World.Workspace},
		})
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	doc := map[string]any{"mcp": map[string]any{"servers": list}}
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	enc.Close()
	return []byte(b.String()), nil
}

package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/internal/lazyre"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/dsh-dev/dsh/sandbox"
)

// MCP configures the MCP bridge: the third-party MCP servers dsh runs,
// each in its own world, and offers under mcp__<server>__<tool> names.
type MCP struct {
	// Servers are the upstream servers, in the order dsh mcp list shows
	// them.
	Servers []MCPServer `mapstructure:"servers"`
}

// MCPServer is one upstream MCP server (mcp.servers[]).
type MCPServer struct {
	// Name is the server's local identity, ^[A-Za-z0-9_-]{1,32}$, unique:
	// it namespaces its tools' public names. Required.
	Name string `mapstructure:"name" json:"name" yaml:"name"`
	// Transport is stdio (the default; dsh starts Command in the
	// server's world) or http (Streamable HTTP at URL).
	Transport string `mapstructure:"transport" json:"transport,omitempty" yaml:"transport,omitempty"`
	// Command, Args and Cwd start a stdio server inside its world: no
	// shell; Cwd relative to the world's workspace.
	Command string   `mapstructure:"command" json:"command,omitempty" yaml:"command,omitempty"`
	Args    []string `mapstructure:"args" json:"args,omitempty" yaml:"args,omitempty"`
	Cwd     string   `mapstructure:"cwd" json:"cwd,omitempty" yaml:"cwd,omitempty"`
	// Env are KEY=VALUE entries of the server's environment. A value may
	// reference the host environment, ${NAME}, or a file, ${file:/path}:
	// they are read when the server starts and reach only its world.
	// Values are printed as ***.
	Env SecretEnv `mapstructure:"env" json:"env,omitempty" yaml:"env,omitempty"`
	// URL is an http server's endpoint; Headers are sent with every
	// request (values may reference ${NAME} and are printed as ***).
	URL     string        `mapstructure:"url" json:"url,omitempty" yaml:"url,omitempty"`
	Headers SecretHeaders `mapstructure:"headers" json:"headers,omitempty" yaml:"headers,omitempty"`
	// World is the server's own world.
	World MCPWorld `mapstructure:"world" json:"world" yaml:"world"`
	// Tools filters the server's tools by raw name.
	Tools MCPTools `mapstructure:"tools" json:"tools" yaml:"tools"`
	// CallTimeout bounds one tool call: a duration. If empty, 60s.
	CallTimeout string `mapstructure:"call_timeout" json:"call_timeout,omitempty" yaml:"call_timeout,omitempty"`
	// StartupTimeout bounds starting the server, the MCP handshake and
	// the first listing. If empty, 30s.
	StartupTimeout string `mapstructure:"startup_timeout" json:"startup_timeout,omitempty" yaml:"startup_timeout,omitempty"`
	// ProtocolVersion is the MCP version offered. If empty, 2025-11-25
	// for stdio servers, the newest for http.
	ProtocolVersion string `mapstructure:"protocol_version" json:"protocol_version,omitempty" yaml:"protocol_version,omitempty"`
	// Required makes a command that needs the bridge fail when the server
	// is not ready at start-up.
	Required bool `mapstructure:"required" json:"required,omitempty" yaml:"required,omitempty"`
	// Start is eager (the default: started with the bridge) or lazy
	// (started on its first call).
	Start string `mapstructure:"start" json:"start,omitempty" yaml:"start,omitempty"`
	// Reconnect is the reconnect supervisor's budget.
	Reconnect MCPReconnect `mapstructure:"reconnect" json:"reconnect" yaml:"reconnect"`
}

// MCPWorld is an MCP server's world. Unset fields take the sandbox
// section's values, except the egress and the workspace, which default
// to nothing at all.
type MCPWorld struct {
	// Driver is native or docker. If empty, sandbox.driver.
	Driver string `mapstructure:"driver" json:"driver,omitempty" yaml:"driver,omitempty"`
	// Image is the docker driver's image. If empty, sandbox.image.
	Image string `mapstructure:"image" json:"image,omitempty" yaml:"image,omitempty"`
	// Workspace is what the server sees of the workspace (the current
	// directory): none (the default: an empty directory of its own), ro
	// (read-only) or rw.
	Workspace string `mapstructure:"workspace" json:"workspace,omitempty" yaml:"workspace,omitempty"`
	// Allow are the egress allow entries (network.allow's forms); the
	// default denies every destination.
	Allow []string `mapstructure:"allow" json:"allow,omitempty" yaml:"allow,omitempty"`
	// Limits override sandbox.limits where set.
	Limits MCPLimits `mapstructure:"limits" json:"limits" yaml:"limits"`
}

// MCPLimits are an MCP server world's limits; zero values take
// sandbox.limits'.
type MCPLimits struct {
	Memory string  `mapstructure:"memory" json:"memory,omitempty" yaml:"memory,omitempty"`
	Pids   int     `mapstructure:"pids" json:"pids,omitempty" yaml:"pids,omitempty"`
	CPUs   float64 `mapstructure:"cpus" json:"cpus,omitempty" yaml:"cpus,omitempty"`
}

// MCPTools filters a server's tools by raw name, with path.Match
// patterns: only those matching Allow (if any), less those matching
// Deny.
type MCPTools struct {
	Allow []string `mapstructure:"allow" json:"allow,omitempty" yaml:"allow,omitempty"`
	Deny  []string `mapstructure:"deny" json:"deny,omitempty" yaml:"deny,omitempty"`
}

// MCPReconnect is the reconnect supervisor's budget.
type MCPReconnect struct {
	// Enabled reconnects after a lost connection. If unset, true.
	Enabled *bool `mapstructure:"enabled" json:"enabled,omitempty" yaml:"enabled,omitempty"`
	// InitialDelay is the first delay (doubling per attempt). If empty,
	// 500ms.
	InitialDelay string `mapstructure:"initial_delay" json:"initial_delay,omitempty" yaml:"initial_delay,omitempty"`
	// MaxDelay caps the delay; a connection up this long resets the
	// budget. If empty, 30s.
	MaxDelay string `mapstructure:"max_delay" json:"max_delay,omitempty" yaml:"max_delay,omitempty"`
	// MaxAttempts are the attempts of one outage. If zero, 10.
	MaxAttempts int `mapstructure:"max_attempts" json:"max_attempts,omitempty" yaml:"max_attempts,omitempty"`
}

// Redacted is how a secret value is printed.
const Redacted = "***"

// SecretEnv are KEY=VALUE entries whose values are never printed: JSON
// and YAML show KEY=***.
type SecretEnv []string

func (e SecretEnv) redacted() []string {
	out := make([]string, len(e))
	for i, kv := range e {
		k, _, _ := strings.Cut(kv, "=")
		out[i] = k + "=" + Redacted
	}
	return out
}

// MarshalJSON prints the keys only.
func (e SecretEnv) MarshalJSON() ([]byte, error) { return json.Marshal(e.redacted()) }

// MarshalYAML prints the keys only.
func (e SecretEnv) MarshalYAML() (any, error) { return e.redacted(), nil }

// SecretHeaders are HTTP headers whose values are never printed.
type SecretHeaders map[string]string

func (h SecretHeaders) redacted() map[string]string {
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = Redacted
	}
	return out
}

// MarshalJSON prints the names only.
func (h SecretHeaders) MarshalJSON() ([]byte, error) { return json.Marshal(h.redacted()) }

// MarshalYAML prints the names only.
func (h SecretHeaders) MarshalYAML() (any, error) { return h.redacted(), nil }

var (
	mcpNameRE = lazyre.New(`^[A-Za-z0-9_-]{1,32}$`)
	envKeyRE  = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// refRE finds ${NAME} and ${file:PATH} references.
	refRE = lazyre.New(`\$\{([^}]*)\}`)
)

// validateMCP checks mcp.servers, every problem with its key path.
func validateMCP(m MCP, drivers []string, bad func(key, format string, args ...any)) {
	seen := map[string]int{}
	for i, s := range m.Servers {
		p := fmt.Sprintf("mcp.servers[%d].", i)
		if !mcpNameRE().MatchString(s.Name) {
			bad(p+"name", "%q must be 1 to 32 characters of A-Z, a-z, 0-9, _ and -", s.Name)
		} else if j, dup := seen[s.Name]; dup {
			bad(p+"name", "%q is already the name of mcp.servers[%d]; server names must be unique", s.Name, j)
		} else {
			seen[s.Name] = i
		}
		switch s.Transport {
		case "", "stdio":
			if s.Command == "" {
				bad(p+"command", "a stdio server needs the program to start (command: and args:)")
			}
			if s.URL != "" {
				bad(p+"url", "is for transport: http; a stdio server is started with command:")
			}
			if len(s.Headers) > 0 {
				bad(p+"headers", "are for transport: http")
			}
		case "http":
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(p+"url", "%q is not an http(s) URL", s.URL)
			}
			if s.Command != "" || len(s.Args) > 0 {
				bad(p+"command", "is for transport: stdio; an http server is reached at url:")
			}
		default:
			bad(p+"transport", "%q is not a transport; use stdio or http", s.Transport)
		}
		for j, kv := range s.Env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !envKeyRE().MatchString(k) {
				bad(fmt.Sprintf("%senv[%d]", p, j), "is not KEY=VALUE with KEY of letters, digits and _ (the value is not shown)")
				continue
			}
			if err := checkRefs(v); err != nil {
				bad(fmt.Sprintf("%senv[%d]", p, j), "%s: %v", k, err)
			}
		}
		for _, k := range sortedHeaderNames(s.Headers) {
			if err := checkRefs(s.Headers[k]); err != nil {
				bad(p+"headers."+k, "%v", err)
			}
		}
		w := s.World
		if w.Driver != "" && !contains(drivers, w.Driver) {
			bad(p+"world.driver", "%q is not a sandbox driver of this build; use one of: %s", w.Driver, strings.Join(drivers, ", "))
		}
		switch w.Workspace {
		case "", "none", "ro", "rw":
		default:
			bad(p+"world.workspace", "%q is not a workspace mode; use none, ro or rw", w.Workspace)
		}
		validatePolicy(p+"world", netpolicy.Config{Default: "deny", Allow: w.Allow}, bad)
		if w.Limits.Memory != "" {
			if n, err := ParseSize(w.Limits.Memory); err != nil {
				bad(p+"world.limits.memory", "%v", err)
			} else if err := sandbox.CheckMemory(n); err != nil {
				bad(p+"world.limits.memory", "%q: %v", w.Limits.Memory, err)
			}
		}
		if w.Limits.Pids != 0 {
			if err := sandbox.CheckPids(int64(w.Limits.Pids)); err != nil {
				bad(p+"world.limits.pids", "%v", err)
			}
		}
		if w.Limits.CPUs != 0 {
			if err := sandbox.CheckCPUs(w.Limits.CPUs); err != nil {
				bad(p+"world.limits.cpus", "%v", err)
			}
		}
		for j, pat := range s.Tools.Allow {
			if _, err := path.Match(pat, ""); err != nil {
				bad(fmt.Sprintf("%stools.allow[%d]", p, j), "%q is not a valid pattern (path.Match syntax: *, ?, [...])", pat)
			}
		}
		for j, pat := range s.Tools.Deny {
			if _, err := path.Match(pat, ""); err != nil {
				bad(fmt.Sprintf("%stools.deny[%d]", p, j), "%q is not a valid pattern (path.Match syntax: *, ?, [...])", pat)
			}
		}
		for _, kd := range [][2]string{
			{"call_timeout", s.CallTimeout}, {"startup_timeout", s.StartupTimeout},
			{"reconnect.initial_delay", s.Reconnect.InitialDelay}, {"reconnect.max_delay", s.Reconnect.MaxDelay},
		} {
			key, d := kd[0], kd[1]
			if d == "" {
				continue
			}
			if v, err := time.ParseDuration(d); err != nil || v <= 0 {
				bad(p+key, "%q is not a positive duration (use 500ms, 30s, 2m)", d)
			}
		}
		if s.Reconnect.MaxAttempts < 0 {
			bad(p+"reconnect.max_attempts", "%d is negative", s.Reconnect.MaxAttempts)
		}
		switch s.Start {
		case "", "eager", "lazy":
		default:
			bad(p+"start", "%q is not a start mode; use eager or lazy", s.Start)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedHeaderNames(h SecretHeaders) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// checkRefs checks the ${...} references of a secret value.
func checkRefs(v string) error {
	for _, m := range refRE().FindAllStringSubmatch(v, -1) {
		ref := m[1]
		if f, ok := strings.CutPrefix(ref, "file:"); ok {
			if !strings.HasPrefix(f, "/") {
				return fmt.Errorf("${file:%s}: the file must be an absolute path", f)
			}
			continue
		}
		if !envKeyRE().MatchString(ref) {
			return fmt.Errorf("${%s} is not a reference; use ${NAME} (a host variable) or ${file:/path}", ref)
		}
	}
	return nil
}

// ExpandSecret resolves the references of a secret value: ${NAME} from
// getenv, ${file:/path} from the file (one trailing newline dropped). A
// missing variable or an unreadable file is an error naming it, never
// the value.
func ExpandSecret(v string, getenv func(string) (string, bool), readFile func(string) ([]byte, error)) (string, error) {
	if readFile == nil {
		readFile = os.ReadFile
	}
	var err error
	out := refRE().ReplaceAllStringFunc(v, func(m string) string {
		ref := m[2 : len(m)-1]
		if f, ok := strings.CutPrefix(ref, "file:"); ok {
			b, rerr := readFile(f)
			if rerr != nil && err == nil {
				err = fmt.Errorf("reading the secret file %s: %w", f, rerr)
			}
			return strings.TrimSuffix(string(b), "\n")
		}
		val, ok := getenv(ref)
		if !ok && err == nil {
			err = fmt.Errorf("the host variable %s is not set; export it, or drop the reference", ref)
		}
		return val
	})
	return out, err
}

// checkEntries reports the unknown keys of a list of sections (such as
// mcp.servers), which CheckKeys sees as one key: every entry must be a
// mapping of the element type's keys, each path with its index.
func checkEntries(key string, v any) []error {
	t := fieldType(reflect.TypeFor[Config](), strings.Split(key, "."))
	if t == nil || t.Kind() != reflect.Slice || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		if v == nil {
			return nil
		}
		return []error{&KeyError{Key: key, Msg: "is a list of sections; expected a list of mappings"}}
	}
	var errs []error
	for i, e := range list {
		p := fmt.Sprintf("%s[%d]", key, i)
		m, ok := e.(map[string]any)
		if !ok {
			errs = append(errs, &KeyError{Key: p, Msg: "is not a mapping of keys"})
			continue
		}
		errs = append(errs, checkStruct(t.Elem(), m, p)...)
	}
	return errs
}

func checkStruct(t reflect.Type, m map[string]any, prefix string) []error {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		if name := keyName(t.Field(i)); name != "" {
			fields[name] = t.Field(i).Type
		}
	}
	var errs []error
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ft, ok := fields[strings.ToLower(k)]
		key := prefix + "." + strings.ToLower(k)
		if !ok {
			known := map[string]bool{}
			for f := range fields {
				known[prefix+"."+f] = true
			}
			errs = append(errs, &KeyError{Key: key, Msg: "is not a known setting" + suggest(key, known, nil)})
			continue
		}
		if ft.Kind() == reflect.Struct {
			if sub, ok := m[k].(map[string]any); ok {
				errs = append(errs, checkStruct(ft, sub, key)...)
			} else if m[k] != nil {
				errs = append(errs, &KeyError{Key: key, Msg: "is a section; expected a mapping of keys"})
			}
		}
	}
	return errs
}

// fieldType is the type of the field at the key path parts of t.
func fieldType(t reflect.Type, parts []string) reflect.Type {
	for _, p := range parts {
		if t.Kind() != reflect.Struct {
			return nil
		}
		var next reflect.Type
		for i := range t.NumField() {
			if keyName(t.Field(i)) == p {
				next = t.Field(i).Type
			}
		}
		if next == nil {
			return nil
		}
		t = next
	}
	return t
}

// mcpServersDoc describes mcp.servers in the example configuration.
const mcpServersDoc = `MCP servers dsh runs, each in its own world, offering their tools as
mcp__<name>__<tool>. Each entry:
  - name: github                  # ^[A-Za-z0-9_-]{1,32}$, unique
    transport: stdio              # or http (then url:, headers:)
    command: github-mcp-server    # no shell; args: [...], cwd: DIR
    env: ["GITHUB_TOKEN=${GITHUB_TOKEN}"]  # ${NAME}, ${file:/path}; shown as ***
    world: {driver: native, image: dsh/node:latest, workspace: none,
            allow: [api.github.com:443], limits: {memory: 512MiB}}
    tools: {allow: ["*"], deny: [delete_*]}
    call_timeout: 60s
    startup_timeout: 30s
    start: eager                  # or lazy
    required: false
    reconnect: {enabled: true, initial_delay: 500ms, max_delay: 30s, max_attempts: 10}
An untrusted project file may not change this list.`

package lsp

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/internal/lazyre"
)

// Defaults of a server, as the reference stdio provider has them, and
// the caps dsh adds.
const (
	DefaultMaxStderrBytes   = 1_000_000
	DefaultMaxDocumentBytes = 4_000_000
	DefaultShutdownTimeout  = 5 * time.Second
	DefaultKillGrace        = 2 * time.Second
	DefaultStartupTimeout   = 60 * time.Second
	DefaultRequestTimeout   = 30 * time.Second
	DefaultReadinessTimeout = 15 * time.Second
)

// ReadyKind is how a server tells that it has indexed enough to answer.
type ReadyKind int

const (
	// ReadyNone: ready once initialize is answered (gopls).
	ReadyNone ReadyKind = iota
	// ReadyProgress: ready when no work-done progress it began is open
	// (typescript-language-server, clangd). A server that begins none
	// within a short settle time after the file is opened is ready.
	ReadyProgress
	// ReadyLog: ready once a window/logMessage matches Readiness.Pattern
	// (pyright's "Found N source files").
	ReadyLog
	// ReadyQuiescent: ready while rust-analyzer's experimental/serverStatus
	// says quiescent.
	ReadyQuiescent
)

var readyNames = []string{"none", "progress", "log", "quiescent"}

func (k ReadyKind) String() string {
	if int(k) < len(readyNames) {
		return readyNames[k]
	}
	return fmt.Sprintf("ReadyKind(%d)", int(k))
}

// ParseReadyKind parses none, progress, log or quiescent ("" is none).
func ParseReadyKind(s string) (ReadyKind, error) {
	if s == "" {
		return ReadyNone, nil
	}
	if i := slices.Index(readyNames, s); i >= 0 {
		return ReadyKind(i), nil
	}
	return 0, fmt.Errorf("readiness %q is not one of %s", s, strings.Join(readyNames, ", "))
}

// Readiness is a server's readiness gate.
type Readiness struct {
	Kind ReadyKind
	// Pattern is the regular expression of ReadyLog.
	Pattern string
	// Timeout caps the wait; past it the query is CodeIndexing. If zero,
	// DefaultReadinessTimeout.
	Timeout time.Duration
}

// ServerConfig is one language server.
type ServerConfig struct {
	// ID names the server: [A-Za-z0-9_-], 1 to 32 characters, unique.
	ID string
	// Command is the program, run inside the world without a shell: a
	// bare name searched on the world's PATH, or an absolute path.
	Command string
	Args    []string
	// Env entries KEY=VALUE added to the world's environment.
	Env []string
	// Extensions map file extensions (".go", lowercase, one dot) to LSP
	// language ids ("go"). Each extension belongs to one server.
	Extensions map[string]string
	// InitializationOptions is sent in initialize as it is.
	InitializationOptions json.RawMessage
	// Settings answer workspace/configuration: an item's section is a
	// dotted path into it ("" is the whole); a missing section is null.
	Settings map[string]any
	// Readiness is the server's readiness gate.
	Readiness Readiness
	// StartupTimeout bounds start + initialize. If zero, DefaultStartupTimeout.
	StartupTimeout time.Duration
	// RequestTimeout bounds one request. If zero, DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxMessageBytes bounds a message body. If zero, DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxStderrBytes is the stderr tail kept. If zero, DefaultMaxStderrBytes.
	MaxStderrBytes int
	// MaxDocumentBytes bounds a source file. If zero, DefaultMaxDocumentBytes.
	MaxDocumentBytes int64
	// ShutdownTimeout bounds shutdown + exit. If zero, DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// KillGrace is the wait after $/cancelRequest, and between the
	// signals of a teardown. If zero, DefaultKillGrace.
	KillGrace time.Duration
	// Image is the docker driver's image for this server's language
	// (dsh lsp --driver docker picks it when --image is not given).
	Image string

	// prepare, of a preset, is a command run in the world (with Env)
	// before each start of the server.
	prepare []string
}

func (c *ServerConfig) withDefaults() *ServerConfig {
	d := *c
	set := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	set(&d.StartupTimeout, DefaultStartupTimeout)
	set(&d.RequestTimeout, DefaultRequestTimeout)
	set(&d.ShutdownTimeout, DefaultShutdownTimeout)
	set(&d.KillGrace, DefaultKillGrace)
	set(&d.Readiness.Timeout, DefaultReadinessTimeout)
	if d.MaxMessageBytes == 0 {
		d.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if d.MaxStderrBytes == 0 {
		d.MaxStderrBytes = DefaultMaxStderrBytes
	}
	if d.MaxDocumentBytes == 0 {
		d.MaxDocumentBytes = DefaultMaxDocumentBytes
	}
	return &d
}

var (
	idRE  = lazyre.New(`^[A-Za-z0-9_-]{1,32}$`)
	extRE = lazyre.New(`^\.[^./\\]+$`)
)

// validate checks one server and returns its normalised extensions.
func (c *ServerConfig) validate() error {
	bad := func(format string, args ...any) error {
		return errorf(CodeInvalidProvider, nil, "server %q: %s", c.ID, fmt.Sprintf(format, args...))
	}
	if !idRE().MatchString(c.ID) {
		return bad("the id must be 1 to 32 characters of A-Z a-z 0-9 _ -")
	}
	if c.Command == "" {
		return bad("no command; give the server's program (for example gopls)")
	}
	if strings.ContainsRune(c.Command, '/') && !strings.HasPrefix(c.Command, "/") {
		return bad("command %q is a relative path; give a bare name searched on the world's PATH or an absolute path", c.Command)
	}
	if len(c.Extensions) == 0 {
		return bad("no extensions; map at least one (\".go\": \"go\")")
	}
	for ext, lang := range c.Extensions {
		if !extRE().MatchString(ext) || ext != strings.ToLower(ext) {
			return bad("extension %q must be one lowercase dot and a name without dots or slashes (\".go\")", ext)
		}
		if lang == "" {
			return bad("extension %q has no language id", ext)
		}
	}
	for _, e := range c.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return bad("env entry %q is not KEY=VALUE", e)
		}
	}
	if c.Readiness.Kind == ReadyLog {
		if _, err := regexp.Compile(c.Readiness.Pattern); err != nil || c.Readiness.Pattern == "" {
			return bad("readiness log needs a valid pattern: %v", err)
		}
	}
	for _, d := range []time.Duration{c.StartupTimeout, c.RequestTimeout, c.ShutdownTimeout, c.KillGrace, c.Readiness.Timeout} {
		if d < 0 {
			return bad("a timeout is negative (%v)", d)
		}
	}
	if c.MaxMessageBytes < 0 || c.MaxStderrBytes < 0 || c.MaxDocumentBytes < 0 {
		return bad("a byte limit is negative")
	}
	return nil
}

// routes validates servers together and maps every extension to its
// server: all or nothing, so a conflict or an invalid server publishes
// no route at all.
func routes(servers []ServerConfig) (map[string]*ServerConfig, error) {
	ids := map[string]bool{}
	out := map[string]*ServerConfig{}
	for i := range servers {
		s := &servers[i]
		if err := s.validate(); err != nil {
			return nil, err
		}
		if ids[s.ID] {
			return nil, errorf(CodeInvalidProvider, nil, "server id %q is configured twice; give each server its own id", s.ID)
		}
		ids[s.ID] = true
		d := s.withDefaults()
		for ext := range s.Extensions {
			if prev, ok := out[ext]; ok {
				return nil, errorf(CodeConflict, nil, "extension %s is claimed by both %q and %q; remove it from one of them", ext, prev.ID, s.ID)
			}
			out[ext] = d
		}
	}
	return out, nil
}

// Route returns the extension a file routes by: its final extension,
// lowercased, from the last dot of the base name (after the last / or
// \). A name without a dot, or whose only dot leads it (".bashrc"), has
// none and routes nowhere.
func Route(file string) string {
	base := file
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	i := strings.LastIndexByte(base, '.')
	if i <= 0 || i == len(base)-1 {
		return ""
	}
	return strings.ToLower(base[i:])
}

// Presets are the servers dsh knows without configuration. Each is
// used when its command resolves in the world; a configured server with
// the same id replaces it, and one claiming any of its extensions
// displaces it (Merge).
func Presets() []ServerConfig {
	return []ServerConfig{
		{
			ID: "gopls", Command: "gopls",
			Extensions: map[string]string{".go": "go"},
			// Offline by default: the world's egress denies the module
			// proxy, so gopls must not try it, nor let GOFLAGS=-mod=mod or
			// a toolchain switch send it there. Caches live in the world's
			// private, writable /tmp.
			// The go command gopls runs is looked up on PATH, and Go
			// installs in /usr/local/go (the Go images, the host's tree
			// a native world sees).
			Env: []string{
				"PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOTELEMETRY=off",
				"GOCACHE=/tmp/dsh-gopls/cache", "GOPATH=/tmp/dsh-gopls/gopath",
				"XDG_CONFIG_HOME=/tmp/dsh-gopls/config",
			},
			// gopls starts a copy of itself that watches it for crashes
			// to report (Go telemetry, which GOTELEMETRY does not turn
			// off), in a process group of its own that outlives the
			// server's Close. The mode file "off" keeps it from starting.
			prepare: []string{"sh", "-c", `mkdir -p "$XDG_CONFIG_HOME/go/telemetry" && echo off >"$XDG_CONFIG_HOME/go/telemetry/mode"`},
			Image:   "dsh/go:latest",
		},
		{
			ID: "typescript", Command: "typescript-language-server", Args: []string{"--stdio"},
			Extensions: map[string]string{
				".ts": "typescript", ".tsx": "typescriptreact", ".mts": "typescript", ".cts": "typescript",
				".js": "javascript", ".jsx": "javascriptreact", ".mjs": "javascript", ".cjs": "javascript",
			},
			Readiness: Readiness{Kind: ReadyProgress},
			Image:     "dsh/node:latest",
		},
		{
			ID: "pyright", Command: "pyright-langserver", Args: []string{"--stdio"},
			Extensions: map[string]string{".py": "python", ".pyi": "python"},
			Readiness:  Readiness{Kind: ReadyLog, Pattern: `Found \d+ source files?`},
			Image:      "dsh/node:latest",
		},
		{
			ID: "clangd", Command: "clangd",
			Extensions: map[string]string{
				".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
			},
			Readiness: Readiness{Kind: ReadyProgress},
		},
		{
			ID: "rust-analyzer", Command: "rust-analyzer",
			Extensions: map[string]string{".rs": "rust"},
			Readiness:  Readiness{Kind: ReadyQuiescent},
		},
	}
}

// Merge returns configured servers after the presets they leave: a
// preset goes when a configured server has its id or any of its
// extensions.
func Merge(presets, configured []ServerConfig) []ServerConfig {
	ids, exts := map[string]bool{}, map[string]bool{}
	for _, c := range configured {
		ids[c.ID] = true
		for e := range c.Extensions {
			exts[strings.ToLower(e)] = true
		}
	}
	var out []ServerConfig
	for _, p := range presets {
		if ids[p.ID] || slices.ContainsFunc(sortedKeys(p.Extensions), func(e string) bool { return exts[e] }) {
			continue
		}
		out = append(out, p)
	}
	return append(out, configured...)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// section answers one workspace/configuration item from settings.
func section(settings map[string]any, name string) any {
	if name == "" {
		if settings == nil {
			return nil
		}
		return settings
	}
	var cur any = settings
	for _, part := range strings.Split(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[part]; !ok {
			return nil
		}
	}
	return cur
}

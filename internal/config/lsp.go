package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/internal/lazyre"
)

// LSP configures the language-server surface (dsh lsp, the lsp tool).
type LSP struct {
	// Servers are language servers beside the presets (gopls,
	// typescript-language-server, pyright-langserver, clangd,
	// rust-analyzer): one with a preset's id replaces it, one claiming a
	// preset's extension displaces it. Default none.
	Servers []LSPServer `mapstructure:"servers"`
}

// LSPServer is one entry of lsp.servers.
type LSPServer struct {
	// ID names the server: [A-Za-z0-9_-], 1 to 32 characters.
	ID string `mapstructure:"id"`
	// Command is run inside the world without a shell: a bare name on the
	// world's PATH or an absolute path inside the world.
	Command string   `mapstructure:"command"`
	Args    []string `mapstructure:"args"`
	// Env entries KEY=VALUE are added to the world's environment for the
	// server. (A list, not a mapping: the loader lowercases mapping keys.)
	Env []string `mapstructure:"env"`
	// Extensions map ".ext" to an LSP language id.
	Extensions map[string]string `mapstructure:"extensions"`
	// InitializationOptions is JSON text sent in initialize, and
	// Settings JSON text (an object) answering workspace/configuration.
	// JSON text, not YAML mappings: the loader lowercases mapping keys,
	// and servers' settings are camelCase.
	InitializationOptions string `mapstructure:"initialization_options"`
	Settings              string `mapstructure:"settings"`
	// Readiness is none, progress, log or quiescent; log needs
	// ReadinessPattern. Default none.
	Readiness        string `mapstructure:"readiness"`
	ReadinessPattern string `mapstructure:"readiness_pattern"`
	// Durations; empty is the default (readiness 15s, startup 60s,
	// request 30s).
	ReadinessTimeout string `mapstructure:"readiness_timeout"`
	StartupTimeout   string `mapstructure:"startup_timeout"`
	RequestTimeout   string `mapstructure:"request_timeout"`
	// Image is the docker driver's image for this server.
	Image string `mapstructure:"image"`
}

var (
	lspIDRE  = lazyre.New(`^[A-Za-z0-9_-]{1,32}$`)
	lspExtRE = lazyre.New(`^\.[^./\\]+$`)
)

// validateLSP checks lsp.servers; package lsp checks them again, together
// with the presets, when a client is made.
func validateLSP(l LSP, bad func(key, format string, args ...any)) {
	ids := map[string]bool{}
	exts := map[string]string{}
	for i, s := range l.Servers {
		key := fmt.Sprintf("lsp.servers[%d]", i)
		if !lspIDRE().MatchString(s.ID) {
			bad(key+".id", "%q must be 1 to 32 characters of A-Z a-z 0-9 _ -", s.ID)
		} else if ids[s.ID] {
			bad(key+".id", "%q is configured twice", s.ID)
		}
		ids[s.ID] = true
		if s.Command == "" {
			bad(key+".command", "is required: the server's program, such as gopls")
		} else if strings.Contains(s.Command, "/") && !strings.HasPrefix(s.Command, "/") {
			bad(key+".command", "%q is a relative path; give a bare name or an absolute path inside the world", s.Command)
		}
		if len(s.Extensions) == 0 {
			bad(key+".extensions", "is required: map each extension to a language id (\".go\": go)")
		}
		for ext, lang := range s.Extensions {
			switch {
			case !lspExtRE().MatchString(ext) || ext != strings.ToLower(ext):
				bad(key+".extensions", "%q must be one lowercase dot and a name (\".go\")", ext)
			case lang == "":
				bad(key+".extensions", "%q has no language id", ext)
			case exts[ext] != "":
				bad(key+".extensions", "%q is claimed by both %s and %s; remove it from one", ext, exts[ext], s.ID)
			}
			exts[ext] = s.ID
		}
		for _, e := range s.Env {
			if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
				bad(key+".env", "%q is not KEY=VALUE", e)
			}
		}
		if s.InitializationOptions != "" && !json.Valid([]byte(s.InitializationOptions)) {
			bad(key+".initialization_options", "is not valid JSON text")
		}
		if s.Settings != "" {
			var m map[string]any
			if err := json.Unmarshal([]byte(s.Settings), &m); err != nil {
				bad(key+".settings", "is not a JSON object: %v", err)
			}
		}
		switch s.Readiness {
		case "", "none", "progress", "quiescent":
		case "log":
			if _, err := regexp.Compile(s.ReadinessPattern); err != nil || s.ReadinessPattern == "" {
				bad(key+".readiness_pattern", "readiness log needs a valid regular expression (%v)", err)
			}
		default:
			bad(key+".readiness", "%q is not one of none, progress, log, quiescent", s.Readiness)
		}
		for name, v := range map[string]string{"readiness_timeout": s.ReadinessTimeout, "startup_timeout": s.StartupTimeout, "request_timeout": s.RequestTimeout} {
			if d, err := time.ParseDuration(v); v != "" && (err != nil || d <= 0) {
				bad(key+"."+name, "%q is not a positive duration (use 30s, 2m)", v)
			}
		}
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/lsp"
)

// lspServers are the language servers of a configuration: the presets
// and lsp.servers (config.Validate has checked them), merged.
func lspServers(c config.LSP) ([]lsp.ServerConfig, error) {
	var configured []lsp.ServerConfig
	for i, s := range c.Servers {
		key := fmt.Sprintf("lsp.servers[%d]", i)
		sc := lsp.ServerConfig{ID: s.ID, Command: s.Command, Args: s.Args, Env: s.Env, Image: s.Image,
			Extensions: s.Extensions}
		if s.InitializationOptions != "" {
			sc.InitializationOptions = json.RawMessage(s.InitializationOptions)
		}
		if s.Settings != "" {
			if err := json.Unmarshal([]byte(s.Settings), &sc.Settings); err != nil {
				return nil, fmt.Errorf("%s.settings: %w", key, err)
			}
		}
		kind, err := lsp.ParseReadyKind(s.Readiness)
		if err != nil {
			return nil, fmt.Errorf("%s.readiness: %w", key, err)
		}
		sc.Readiness = lsp.Readiness{Kind: kind, Pattern: s.ReadinessPattern}
		for _, d := range []struct {
			name, v string
			dst     *time.Duration
		}{
			{"readiness_timeout", s.ReadinessTimeout, &sc.Readiness.Timeout},
			{"startup_timeout", s.StartupTimeout, &sc.StartupTimeout},
			{"request_timeout", s.RequestTimeout, &sc.RequestTimeout},
		} {
			if d.v == "" {
				continue
			}
			if *d.dst, err = time.ParseDuration(d.v); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", key, d.name, err)
			}
		}
		configured = append(configured, sc)
	}
	return lsp.Merge(lsp.Presets(), configured), nil
}

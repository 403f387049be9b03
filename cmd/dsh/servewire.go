package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/lsp"
	"github.com/dsh-dev/dsh/mcp/bridge"
	"github.com/dsh-dev/dsh/mcp/gateway"
)

// serveLSP is the lsp tool's client factory: the presets and
// lsp.servers, asked in each session's world.
func serveLSP(cfg *config.Config) (gateway.LSPFactory, error) {
	servers, err := lspServers(cfg.LSP)
	if err != nil {
		return nil, &configError{err}
	}
	return func(w *execworld.World) (gateway.LSPClient, error) {
		return lsp.New(w, &lsp.Options{Servers: servers})
	}, nil
}

// serveBridge starts the bridge of mcp.servers, shared by every session
// of dsh serve: each server in its own world (as dsh mcp runs it, with
// workspace as the directory of world.workspace ro and rw), the eager
// ones waited for (each at most its startup_timeout) so that the first
// tools/list has their tools, the lazy ones listed from the catalog
// cache. Without servers it returns a nil bridge. The closer stops the
// servers and removes what their worlds needed.
func serveBridge(ctx context.Context, cfg *config.Config, workspace string, stderr, audit io.Writer) (*bridge.Bridge, func(), error) {
	if len(cfg.MCP.Servers) == 0 {
		return nil, func() {}, nil
	}
	servers, cleanup, err := mcpServersIn(cfg, workspace, nil, stderr, audit)
	if err != nil {
		return nil, nil, &configError{err}
	}
	b, err := bridge.New(servers, &bridge.Options{
		Version:  version,
		CacheDir: mcpCacheDir(),
		Logger:   slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		cleanup()
		return nil, nil, &configError{err}
	}
	closeAll := func() {
		b.Close()
		cleanup()
	}
	if err := b.Start(ctx); err != nil {
		closeAll()
		return nil, nil, exitf(statusFailed, "dsh serve: %v", err)
	}
	return b, closeAll, nil
}

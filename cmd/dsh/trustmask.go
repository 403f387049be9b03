package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-dev/dsh/internal/trust"
	"github.com/dsh-dev/dsh/sandbox"
)

// hideConfigDir masks dsh's own configuration directory
// ($XDG_CONFIG_HOME/dsh: the trust store and the user's config, both
// trusted) in the world of spec, so no world can read or write them even
// where they lie inside its workspace (a workspace holding
// $XDG_CONFIG_HOME, or the home itself with --workspace-home); the
// directories between the workspace and a mask are pinned, so it cannot
// be moved aside for the world's own (sandbox.PrepareProtected). Drivers
// skip masks of paths that do not exist, so the directory is created
// (0700) first; when it cannot be and it lies in the workspace, the world
// is not opened, nor is one whose workspace lies inside the directory.
func hideConfigDir(spec *sandbox.Spec) error {
	dir, err := trust.Dir()
	if err != nil {
		return nil // no home and no XDG_CONFIG_HOME: there is no such directory to protect
	}
	if inside(spec.Workspace, dir) {
		return fmt.Errorf("the workspace %s is inside dsh's config directory %s, which holds the trust store and no world may write; run dsh from a project directory or pass --workspace DIR", spec.Workspace, dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil && inside(dir, spec.Workspace) {
		return fmt.Errorf("dsh's config directory %s is inside the workspace %s and cannot be created to hide it from the world: %w; create it, or set XDG_CONFIG_HOME outside the workspace", dir, spec.Workspace, err)
	}
	spec.Masks = append(spec.Masks, dir)
	return nil
}

// inside reports whether p is dir or below it.
func inside(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

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
	if err := noLinkBetween(spec.Workspace, dir); err != nil {
		return err
	}
	spec.Masks = append(spec.Masks, dir)
	return nil
}

// noLinkBetween refuses a symbolic link on the way from the workspace ws
// down to dir. The directories there are pinned in place for the world's
// life (sandbox.PrepareProtected) and dir is masked, but a link is no
// directory: the world could re-point it to one of its own, which the
// next dsh would read as its configuration.
func noLinkBetween(ws, dir string) error {
	for _, w := range []string{ws, realOr(ws)} {
		rel, ok := strings.CutPrefix(filepath.Clean(dir), filepath.Clean(w)+string(filepath.Separator))
		if !ok {
			continue
		}
		p := filepath.Clean(w)
		for _, c := range strings.Split(rel, string(filepath.Separator)) {
			p = filepath.Join(p, c)
			if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				return fmt.Errorf("dsh's config directory %s is reached through the symbolic link %s inside the workspace %s: a world could re-point it to a directory of its own, which the next dsh would read; replace the link with the directory it names, or set XDG_CONFIG_HOME outside the workspace", dir, p, w)
			}
		}
	}
	return nil
}

// realOr is p with its links resolved, or p.
func realOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// inside reports whether p is dir or below it.
func inside(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

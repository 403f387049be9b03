package execworld

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNotInWorld means a path lies outside everything the world shares
// with the host: its workspace and its bind mounts.
var ErrNotInWorld = errors.New("execworld: path is outside the world's workspace and mounts")

// PathInside maps an absolute host path to the path the world's processes
// see for the same file: the one mapping LSP URIs and MCP roots use. The
// workspace is mounted at its own path, so a path below it maps to
// itself; a path below a bind mount's source maps below its destination.
// Any other host path is ErrNotInWorld: the world cannot see it.
//
// The mapping is lexical (the path is cleaned, not resolved): give the
// canonical path, as FS.Root is. Whether a file may be touched is still
// decided when it is opened, beneath the root.
func (w *World) PathInside(host string) (string, error) {
	return w.mapPath(host, "host", func(s share) (string, string) { return s.host, s.world })
}

// PathOutside maps an absolute path inside the world to the host path of
// the same file, the inverse of PathInside. A world path outside the
// workspace and the bind mounts (/tmp, /usr, …) has no host path and is
// ErrNotInWorld.
func (w *World) PathOutside(world string) (string, error) {
	return w.mapPath(world, "world", func(s share) (string, string) { return s.world, s.host })
}

// share is a host directory the world sees, and where it sees it.
type share struct{ host, world string }

// shares are the workspace and the bind mounts.
func (w *World) shares() []share {
	out := []share{{w.FS.Root(), w.FS.Root()}}
	for _, m := range w.spec.Mounts {
		if m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind") {
			out = append(out, share{filepath.Clean(m.Source), filepath.Clean(m.Destination)})
		}
	}
	return out
}

func (w *World) mapPath(p, side string, from func(share) (string, string)) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %s path %q is not absolute", ErrNotInWorld, side, p)
	}
	p = filepath.Clean(p)
	// The deepest share holding p wins: a mount inside another mount, or
	// inside the workspace, hides what is beneath it.
	best, found := "", -1
	for _, s := range w.shares() {
		src, dst := from(s)
		if rest, ok := below(p, src); ok && len(src) > found {
			best, found = filepath.Join(dst, rest), len(src)
		}
	}
	if found >= 0 {
		return best, nil
	}
	return "", fmt.Errorf("%w: %s path %s is not below the workspace %s or a bind mount", ErrNotInWorld, side, p, w.FS.Root())
}

// below reports whether p is dir or inside it, and the rest of p.
func below(p, dir string) (string, bool) {
	if p == dir {
		return "", true
	}
	if dir == "/" {
		return p[1:], true
	}
	rest, ok := strings.CutPrefix(p, dir+"/")
	return rest, ok
}

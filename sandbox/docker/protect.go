package docker

import (
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/mount"

	"github.com/dsh-dev/dsh/sandbox"
)

// protectedMounts are the binds over the workspace's protected paths:
// each path bound over itself, read-only or as a read-write pin. The
// daemon mounts them after the workspace (it orders mounts by the depth
// of their targets, parents first). Each comes from what is bound at the
// workspace (src, the overlay's mount point in overlay mode), so a
// pinned .git is the world's view of it, never the real one behind an
// overlay.
func protectedMounts(ms []sandbox.ProtectedMount, ws, src string) []mount.Mount {
	out := make([]mount.Mount, 0, len(ms))
	for _, m := range ms {
		source := m.Path
		if rel, ok := strings.CutPrefix(m.Path, ws+"/"); ok && src != "" {
			source = filepath.Join(src, rel)
		}
		out = append(out, mount.Mount{Type: mount.TypeBind, Source: source, Target: m.Path, ReadOnly: m.ReadOnly})
	}
	return out
}

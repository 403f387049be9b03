package docker

import (
	"github.com/docker/docker/api/types/mount"

	"github.com/dsh-dev/dsh/sandbox"
)

// protectedMounts are the binds over the workspace's protected paths:
// each path bound over itself, read-only or as a read-write pin. The
// daemon mounts them after the workspace (it orders mounts by the depth
// of their targets, parents first).
func protectedMounts(ms []sandbox.ProtectedMount) []mount.Mount {
	out := make([]mount.Mount, 0, len(ms))
	for _, m := range ms {
		out = append(out, mount.Mount{Type: mount.TypeBind, Source: m.Path, Target: m.Path, ReadOnly: m.ReadOnly})
	}
	return out
}

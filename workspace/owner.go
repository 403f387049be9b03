package workspace

import (
	"fmt"
	"os"
)

// FileOwner is the host user and group that own the files of the
// workspaces a Manager makes (Options.Owner).
//
// The docker driver runs a world as its workspace's owner, and a world
// is never the host's root: a root-owned workspace is shown to an
// unprivileged id through an idmapped mount that dsh makes on the host.
// A dsh in a container (compose) cannot make one (it has no
// CAP_SYS_ADMIN over the host's mounts), so there the workspaces must
// belong to an unprivileged user from the start. Only files/ is the
// owner's: the workspace's directory, its workspace.json and the state
// root stay dsh's (0700, 0600), so the owner can neither read a token's
// hash nor swap files/ for a link to a directory of someone else's,
// which the engine would bind for the world to run as that one.
type FileOwner struct {
	UID, GID int
}

func (o *FileOwner) check() error {
	if o == nil {
		return nil
	}
	if o.UID <= 0 || o.GID <= 0 {
		return invalid("Options.Owner %d:%d: the workspaces' files need an unprivileged owner (a docker world runs as it, and uid or gid 0 there is the host's root); give a uid and gid above 0, or no Owner (files owned by this process)", o.UID, o.GID)
	}
	return nil
}

// makeFiles makes dir's files/ directory (0755), owned by owner if set.
func makeFiles(dir string, owner *FileOwner) error {
	files := dir + "/" + filesDir
	if err := os.Mkdir(files, 0o755); err != nil {
		return err
	}
	if owner == nil {
		return nil
	}
	if err := os.Lchown(files, owner.UID, owner.GID); err != nil {
		return fmt.Errorf("giving %s to its owner %d:%d (Options.Owner, --workspace-owner): %w; run dsh as root or with CAP_CHOWN, or drop the owner", files, owner.UID, owner.GID, err)
	}
	return nil
}

package nsinit

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
	"golang.org/x/sys/unix"
)

// UpperMsg is the byte the init sends on FDSync with the descriptor of
// an overlay workspace's upper tmpfs (a detached mount), before it
// reports readiness: dsh holds it, so the upper layer outlives the
// world's mount namespace until dsh has read it (the change set).
const UpperMsg = 2

// mountWorkspaceMode gives the attached workspace at ws (in root) its
// mode: read-only, or covered by an overlay whose lower layer it is.
func mountWorkspaceMode(c *Config, ws string) error {
	switch sandbox.WorkspaceMode(c.WorkspaceMode) {
	case sandbox.WorkspaceRO:
		if err := unix.MountSetattr(unix.AT_FDCWD, ws, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("making the workspace read-only: %w", err)
		}
	case sandbox.WorkspaceOverlay:
		return mountOverlay(c, ws)
	}
	return nil
}

// mountOverlay mounts an overlay over the workspace at ws: the attached
// workspace is its lower layer (never written), and the upper and work
// directories are on a fresh tmpfs of c.OverlaySize bytes, mounted
// nowhere: it is reached only through its descriptor, which dsh gets
// (UpperMsg), so nothing in the world's view leads to it. Inside the
// user namespace the overlay keeps its whiteouts and opaque marks in
// user. xattrs (userxattr, Linux 5.11 and newer); redirect_dir and
// metacopy stay off, so a renamed directory is a copy and a delete.
func mountOverlay(c *Config, ws string) error {
	var st unix.Stat_t
	if err := unix.Stat(ws, &st); err != nil {
		return fmt.Errorf("overlay workspace: %w", err)
	}
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return unavailable("create the overlay workspace's upper tmpfs (fsopen)", err, "the overlay workspace needs Linux 5.11 or newer; use --workspace-mode rw or ro")
	}
	defer unix.Close(fsfd)
	mfd, err := fsmountTmpfs(fsfd, sandbox.OverlayTmpfsData(c.OverlaySize), false, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("the overlay's upper tmpfs: %w", err)
	}
	c.upperFD = mfd
	// The merged root takes the upper root's owner and mode: the
	// workspace's, as this namespace sees it.
	if err := unix.Mkdirat(mfd, "upper", 0o700); err != nil {
		return fmt.Errorf("overlay upper directory: %w", err)
	}
	if err := unix.Fchownat(mfd, "upper", int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("overlay workspace: giving the upper directory the workspace's owner (uid %d gid %d as the world sees them): %w; the workspace's owner must be an id the world maps (your own, unprivileged)", st.Uid, st.Gid, err)
	}
	if err := unix.Fchmodat(mfd, "upper", st.Mode&0o7777, 0); err != nil {
		return fmt.Errorf("overlay upper directory mode: %w", err)
	}
	if err := unix.Mkdirat(mfd, "work", 0o700); err != nil {
		return fmt.Errorf("overlay work directory: %w", err)
	}
	self := fmt.Sprintf("/proc/self/fd/%d", mfd)
	ofd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return unavailable("create the overlay workspace (fsopen overlay)", err, "the overlay workspace needs overlayfs (modprobe overlay) and Linux 5.11 or newer; use --workspace-mode rw or ro")
	}
	defer unix.Close(ofd)
	for _, o := range [][2]string{
		{"lowerdir", escapeLayer(ws)},
		{"upperdir", filepath.Join(self, "upper")},
		{"workdir", filepath.Join(self, "work")},
	} {
		if err := unix.FsconfigSetString(ofd, o[0], o[1]); err != nil {
			return fmt.Errorf("overlay workspace option %s=%s: %w", o[0], o[1], err)
		}
	}
	if err := unix.FsconfigSetFlag(ofd, "userxattr"); err != nil {
		return unavailable("mount the overlay workspace in a user namespace (userxattr)", err, "the overlay workspace needs Linux 5.11 or newer; use --workspace-mode rw or ro")
	}
	if err := unix.FsconfigCreate(ofd); err != nil {
		return unavailable("mount the overlay workspace", fmt.Errorf("%w (%s)", err, fsLog(ofd)), "the workspace's file system must be one overlayfs takes as a lower layer inside a user namespace (ext4, xfs, btrfs, tmpfs; idmapped for a root dsh, Linux 5.19 or newer); use --workspace-mode rw or ro")
	}
	ovl, err := unix.Fsmount(ofd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return fmt.Errorf("mounting the overlay workspace: %w", err)
	}
	defer unix.Close(ovl)
	if err := unix.MoveMount(ovl, "", unix.AT_FDCWD, ws, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attaching the overlay workspace: %w", err)
	}
	return nil
}

// escapeLayer escapes a path for overlayfs's lowerdir, where ':'
// separates layers and '\' escapes (fsconfig splits nothing at ',').
func escapeLayer(p string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(p)
}

// fsLog reads what the kernel logged on the fs context (why a create
// failed), "" if nothing.
func fsLog(fd int) string {
	var msgs []string
	buf := make([]byte, 256)
	for range 8 {
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		msgs = append(msgs, strings.TrimSpace(string(buf[:n])))
	}
	return strings.Join(msgs, "; ")
}

// sendUpper hands dsh the upper tmpfs (UpperMsg) and closes the sync
// channel: nothing more goes over it.
func sendUpper(c *Config) error {
	defer unix.Close(FDSync)
	if c.upperFD < 0 {
		return nil
	}
	defer unix.Close(c.upperFD)
	if err := unix.Sendmsg(FDSync, []byte{UpperMsg}, unix.UnixRights(c.upperFD), nil, 0); err != nil {
		return fmt.Errorf("handing dsh the overlay's upper layer: %w", err)
	}
	return nil
}

package nsinit

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// protectPaths binds each protected path of the workspace (mounted on
// root) over itself, read-only or as a read-write pin, in the order the
// driver decided (sandbox.PrepareProtected). Each path is opened beneath
// the workspace without following a symbolic link, and the bind is
// cloned from and moved onto that descriptor (open_tree, move_mount), so
// no path is looked up twice.
func protectPaths(root string, c *Config) error {
	if len(c.Protected) == 0 {
		return nil
	}
	ws, err := unix.Open(filepath.Join(root, c.Workspace), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the workspace for its protected paths: %w", err)
	}
	defer unix.Close(ws)
	for _, m := range c.Protected {
		rel, ok := strings.CutPrefix(m.Path, strings.TrimSuffix(c.Workspace, "/")+"/")
		if !ok {
			return fmt.Errorf("protected path %s is not in the workspace %s", m.Path, c.Workspace)
		}
		if err := protectOne(ws, rel, m.ReadOnly); err != nil {
			return fmt.Errorf("protecting %s: %w", m.Path, err)
		}
	}
	return nil
}

func protectOne(ws int, rel string, readonly bool) error {
	fd, err := unix.Openat2(ws, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("opening it beneath the workspace: %w", err)
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("cloning its mount: %w", err)
	}
	defer unix.Close(tree)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if readonly {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("setting its flags: %w", err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("binding it over itself: %w", err)
	}
	return nil
}

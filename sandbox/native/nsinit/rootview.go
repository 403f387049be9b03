package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
)

// RootView is a minimal root (Spec.Root minimal), as the driver decided
// it on the host side: the init builds exactly this on an empty tmpfs
// and makes no choice of its own. Paths are absolute paths in the world,
// which are the host's paths.
type RootView struct {
	// Binds are host directories and files bound read-only, nosuid and
	// nodev at the same path.
	Binds []string
	// Links are symlinks made as the host has them (/bin -> usr/bin).
	Links []Link
	// Files are files written with this content, mode 0644.
	Files []File
	// Dirs are empty directories made (mount points: /tmp, /proc, /dev).
	Dirs []string
}

// Link is a symlink of a RootView.
type Link struct{ Path, Target string }

// File is a file of a RootView.
type File struct{ Path, Data string }

// mountMinimalRoot mounts a tmpfs on root and builds v on it. The tmpfs
// stays writable until sealRoot, so that mount points of the workspace
// and of the Spec's mounts can be made.
func mountMinimalRoot(root string, v *RootView) error {
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return fmt.Errorf("mounting the minimal root: %w", err)
	}
	for _, d := range v.Dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return fmt.Errorf("minimal root: %w", err)
		}
	}
	for _, l := range v.Links {
		p := filepath.Join(root, l.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("minimal root: %w", err)
		}
		if err := os.Symlink(l.Target, p); err != nil {
			return fmt.Errorf("minimal root: %w", err)
		}
	}
	for _, f := range v.Files {
		p := filepath.Join(root, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("minimal root: %w", err)
		}
		if err := os.WriteFile(p, []byte(f.Data), 0o644); err != nil {
			return fmt.Errorf("minimal root: %w", err)
		}
	}
	for _, b := range v.Binds {
		fi, err := os.Stat(b)
		if err != nil {
			continue // gone since the driver looked
		}
		target := filepath.Join(root, b)
		if err := makeMountPoint(target, fi.IsDir()); err != nil {
			return fmt.Errorf("minimal root: %w", err)
		}
		if err := unix.Mount(b, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("minimal root: binding %s: %w", b, err)
		}
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(unix.AT_FDCWD, target, unix.AT_RECURSIVE, attr); err != nil {
			return fmt.Errorf("minimal root: making %s read-only: %w", b, err)
		}
	}
	return nil
}

// sealRoot makes a minimal root's tmpfs read-only, once everything is
// mounted on it.
func sealRoot(c *Config) error {
	if c.RootView == nil {
		return nil
	}
	if err := unix.Mount("", c.Root, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("making the minimal root read-only: %w", err)
	}
	return nil
}

// makeMountPoint creates an empty directory, or an empty file, at target.
func makeMountPoint(target string, dir bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if dir {
		return os.MkdirAll(target, 0o755)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// specMountPoint makes the mount point of Spec mount m when it does not
// exist, where that writes nothing of the host: on the minimal root's
// tmpfs or below a tmpfs of the Spec, never below a bind of a host
// directory. On the host's read-only root it says what to do instead.
// tree is the detached mount of a bind's source, or -1.
func specMountPoint(c *Config, m specs.Mount, tree int) error {
	target := filepath.Join(c.Root, m.Destination)
	if _, err := os.Lstat(target); err == nil || !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	onTmpfs := c.RootView != nil
	for _, o := range c.Mounts {
		if o.Destination == m.Destination {
			break // the mounts before m are those it lies on
		}
		if IsBelow(m.Destination, o.Destination) {
			onTmpfs = o.Type == "tmpfs"
		}
	}
	if !onTmpfs {
		return fmt.Errorf("mount %s: the destination does not exist in the world's root, which is the host's, read-only; choose a destination that exists on this host (such as /mnt), one below /tmp, or use --root minimal, where dsh makes mount points", m.Destination)
	}
	dir := true
	if m.Type != "tmpfs" {
		var st unix.Stat_t
		var err error
		if tree >= 0 {
			err = unix.Fstat(tree, &st)
		} else {
			err = unix.Stat(m.Source, &st)
		}
		if err != nil {
			return fmt.Errorf("bind source for %s: %w", m.Destination, err)
		}
		dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
	}
	if err := makeMountPoint(target, dir); err != nil {
		return fmt.Errorf("mount %s: making its mount point: %w", m.Destination, err)
	}
	return nil
}

// bindTree returns the detached mount a root dsh made of the source of
// c.Mounts[i], a bind, or -1: the trees are the workspace's, the allowed
// home locations', then one per bind of c.Mounts in order.
func (c *Config) bindTree(i int) int {
	if !c.Trees || !sandbox.IsBind(c.Mounts[i]) {
		return -1
	}
	n := 1 + len(c.Allow)
	for _, m := range c.Mounts[:i] {
		if sandbox.IsBind(m) {
			n++
		}
	}
	if n >= len(c.trees) {
		return -1
	}
	return c.trees[n]
}

// wantTrees is how many detached mounts a root dsh sends: the
// workspace's, one per allowed home location and one per bind.
func (c *Config) wantTrees() int {
	n := 1 + len(c.Allow)
	for _, m := range c.Mounts {
		if sandbox.IsBind(m) {
			n++
		}
	}
	return n
}

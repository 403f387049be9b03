package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
)

// A root dsh passes the init detached mounts (open_tree) of the workspace,
// idmapped through the world's user namespace, and of each allowed home
// location, with the configuration that releases it; the init attaches
// them in its own mount namespace. An unprivileged caller's init binds
// the paths.

// maxTrees bounds the mounts the init accepts with its release; one
// descriptor more may follow them (Config.ForkGroup).
const maxTrees = 64

// awaitRelease is the init's side of release: it blocks until its
// configuration arrives and returns it with the descriptors that came
// with it.
func awaitRelease() ([]byte, []int, error) {
	buf := make([]byte, MaxConfig)
	oob := make([]byte, unix.CmsgSpace(4*(maxTrees+1)))
	n, oobn, flags, _, err := unix.Recvmsg(FDSync, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		return nil, nil, errors.New("native init: dsh went away before it released the sandbox's init")
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return nil, nil, fmt.Errorf("native init: the release was cut short (over %d bytes, or %d mounts)", MaxConfig, maxTrees)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, nil, fmt.Errorf("native init: reading the mounts dsh passed: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		f, err := unix.ParseUnixRights(&m)
		if err != nil {
			return nil, nil, fmt.Errorf("native init: reading the mounts dsh passed: %w", err)
		}
		fds = append(fds, f...)
	}
	// FDSync stays open: sendUpper closes it.
	return buf[:n], fds, nil
}

// awaitIDs waits until dsh has written the init's id maps, and takes
// the ids it names (BecomeRoot, KeepIDs) on every thread: nothing of the
// setup may run before, as it would with an unmapped uid (no file it
// creates could be owned) or, for a root dsh, with host uid 0. Changing
// the ids clears the parent-death signal: the caller sets it after.
func awaitIDs() error {
	var b [1]byte
	n, err := unix.Read(FDSync, b[:])
	switch {
	case err != nil || n == 0:
		return errors.New("native init: dsh went away before it mapped the init's ids")
	case b[0] == KeepIDs:
		return nil
	case b[0] != BecomeRoot:
		return fmt.Errorf("native init: dsh sent %q where it names the init's ids", b[0])
	}
	// The maps allow setgroups for a root dsh: drop its groups too. The
	// syscall package's calls change every thread.
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("native init: dropping host groups: %w", err)
	}
	if err := syscall.Setresgid(0, 0, 0); err != nil {
		return fmt.Errorf("native init: taking gid 0 of the world: %w", err)
	}
	if err := syscall.Setresuid(0, 0, 0); err != nil {
		return fmt.Errorf("native init: taking uid 0 of the world: %w", err)
	}
	return nil
}

// attachTree puts the detached mount fd at target (in the init's own
// mount namespace) or, with fd < 0, binds the host path src there (an
// unprivileged caller, whose init may read everything the caller may).
func attachTree(fd int, src, target string, attr *unix.MountAttr) error {
	if fd < 0 {
		var err error
		if fd, err = CloneExact(src); err != nil {
			return fmt.Errorf("binding %w", err)
		}
	}
	err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("attaching %s: %w", src, err)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, target, unix.AT_RECURSIVE, attr); err != nil {
		return fmt.Errorf("setting the flags of %s: %w", src, err)
	}
	return nil
}

// CloneExact is a detached recursive bind (open_tree) of the tree at
// exactly path p (sandbox.OpenExact): a part of it a world swapped for a
// link since dsh checked it is refused, not followed.
func CloneExact(p string) (int, error) {
	fd, err := sandbox.OpenExact(p)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, fmt.Errorf("%s: open_tree: %w", p, err)
	}
	return tree, nil
}

// coversAny reports whether mask m is an ancestor of (or equal to) one
// of paths: such a mask must stay writable until their mount points are
// made.
func coversAny(paths []string, m string) bool {
	for _, p := range paths {
		if IsBelow(p, m) {
			return true
		}
	}
	return false
}

// attachAllowed binds the allowed home locations back into root,
// read-only, each on a mount point made in the (still writable) tmpfs
// over its home: the trees dsh made (a root dsh) or, for an unprivileged
// caller, binds of the paths.
func attachAllowed(root string, c *Config) error {
	for i, p := range c.Allow {
		target := filepath.Join(root, p)
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("creating the mount point of %s: %w", p, err)
		}
		fd := -1
		if c.Trees {
			fd = c.trees[1+i]
		}
		if err := attachTree(fd, p, target, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}); err != nil {
			return err
		}
	}
	return nil
}

package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/sandbox"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// procReadonly are bound read-only over the private /proc: writing them
// as (host) uid 0 needs no capability, only the owner's mode bits.
var procReadonly = []string{"sys", "sysrq-trigger", "irq", "bus", "fs"}

// procMasks hide kernel state that leaks host information.
var procMasks = []string{"kcore", "keys", "timer_list", "sched_debug", "latency_stats", "acpi", "scsi"}

// devNodes are bound from the host into the sandbox's /dev. tty (5:0)
// names the opener's controlling terminal, not a device of the host: no
// world process has one unless it runs on a terminal of the world
// (ProcessSpec.TTY), so it opens that one or fails with ENXIO.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// hostView is the part of a world's root that needs nothing of its
// Config: the host's root, read-only, with the world's own /proc and
// /dev, on the state directory (the mount point of every world's root,
// in the init's own mount namespace). The init makes it before its
// release, while dsh still plans the world.
type hostView struct {
	root string
	err  error
}

// prepareHostView makes the host view on root ("": none).
func prepareHostView(root string) *hostView {
	if root == "" {
		return nil
	}
	v := &hostView{root: root}
	if v.err = privateMounts(); v.err == nil {
		if v.err = bindHostRoot(root); v.err == nil {
			if v.err = mountProc(root); v.err == nil {
				v.err = mountDev(root)
			}
		}
	}
	return v
}

// privateMounts makes every mount of the init's namespace private:
// nothing it mounts may propagate back to the host.
func privateMounts() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	return nil
}

// bindHostRoot binds the host's root on root, read-only, nosuid and nodev.
func bindHostRoot(root string) error {
	if err := unix.Mount("/", root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding the host root: %w", err)
	}
	return setRootAttr(root, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV})
}

// setRootAttr sets attr on root and every mount below it at once (the
// older MS_REMOUNT route would have to walk mountinfo).
func setRootAttr(root string, attr *unix.MountAttr) error {
	if err := unix.MountSetattr(unix.AT_FDCWD, root, unix.AT_RECURSIVE, attr); err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return unavailable("make the root read-only (mount_setattr)", err, "the native driver needs Linux 5.12 or newer; use --driver docker")
		}
		return fmt.Errorf("making the root read-only: %w", err)
	}
	return nil
}

// buildRoot assembles the sandbox's root on c.Root and pivots into it.
// It runs in stage 1, in the new mount namespace, before any credential
// is dropped. view is the host view made before the release, if any: a
// world of that root and the host's view takes it; any other drops it.
func buildRoot(c *Config, view *hostView) error {
	root := c.Root
	if view != nil && view.root == root && c.RootView == nil {
		if view.err != nil {
			return view.err
		}
	} else {
		if view != nil && view.err == nil {
			if err := unix.Unmount(view.root, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("dropping the host view: %w", err)
			}
		}
		if err := privateMounts(); err != nil {
			return err
		}
		if c.RootView == nil {
			if err := bindHostRoot(root); err != nil {
				return err
			}
		} else if err := mountMinimalRoot(root, c.RootView); err != nil {
			return err
		} else if err := setRootAttr(root, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}); err != nil { // read-only at sealRoot
			return err
		}
		if err := mountProc(root); err != nil {
			return err
		}
		if err := mountDev(root); err != nil {
			return err
		}
	}

	// Spec mounts (tmpfs /tmp, …) come before the workspace, which may
	// live below one of them (a workspace in /tmp is common).
	for i, m := range c.Mounts {
		if err := specMountPoint(c, m, c.bindTree(i)); err != nil {
			return err
		}
		if err := specMount(root, m, c.bindTree(i)); err != nil {
			return err
		}
	}
	// Masks above the workspace or an allowed home location are writable
	// long enough to create their mount points, then read-only.
	var above []string
	for _, m := range c.Masks {
		if IsBelow(c.Workspace, m) || coversAny(c.Allow, m) {
			mounted, err := mountMask(root, m, false, nil)
			if err != nil {
				return err
			}
			if mounted {
				above = append(above, m)
			}
		}
	}
	// Before the workspace, which may lie inside an allowed location.
	if err := attachAllowed(root, c); err != nil {
		return err
	}
	ws := filepath.Join(root, c.Workspace)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return fmt.Errorf("creating the workspace mount point %s: %w (a root dsh's world must be able to search every directory above the workspace: chmod o+x them)", c.Workspace, err)
	}
	fd := -1
	if c.Trees {
		fd = c.trees[0]
	}
	if err := attachTree(fd, c.Workspace, ws, &unix.MountAttr{
		Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Attr_clr: unix.MOUNT_ATTR_RDONLY,
	}); err != nil {
		return fmt.Errorf("mounting the workspace: %w", err)
	}
	if err := mountWorkspaceMode(c, ws); err != nil {
		return err
	}
	if err := protectPaths(root, c); err != nil {
		return err
	}
	empty := &emptyDir{fd: -1}
	defer empty.close()
	for _, m := range c.Masks {
		if IsBelow(c.Workspace, m) || coversAny(c.Allow, m) {
			continue
		}
		if _, err := mountMask(root, m, true, empty); err != nil {
			return err
		}
	}
	for _, m := range above {
		if err := unix.Mount("", filepath.Join(root, m), "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("making mask %s read-only: %w", m, err)
		}
	}
	if err := mountShm(root, c.Shm); err != nil {
		return err
	}
	if err := sealRoot(c); err != nil {
		return err
	}
	return pivot(root)
}

// IsBelow reports whether path is dir or inside it.
func IsBelow(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// maskTmpfs is the data of a mask's tmpfs.
const maskTmpfs = "mode=0755,size=64k"

// mountMask hides host path p: an empty tmpfs over a directory, /dev/null
// over anything else. p is a real path (no symlinks), so the mount cannot
// be redirected outside the new root. A read-only mask over a directory
// shows empty, when there is one, rather than a tmpfs of its own.
func mountMask(root, p string, readonly bool, empty *emptyDir) (mounted bool, err error) {
	target := filepath.Join(root, p)
	fi, err := os.Lstat(target)
	if err != nil {
		// Vanished since the driver looked, or already shadowed by a
		// tmpfs of the Spec: nothing left to hide.
		return false, nil
	}
	if fi.IsDir() {
		if readonly && empty != nil {
			if err := empty.attach(target); err != nil {
				return false, fmt.Errorf("masking %s: %w", p, err)
			}
			return true, nil
		}
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		if readonly {
			flags |= unix.MS_RDONLY
		}
		if err := unix.Mount("tmpfs", target, "tmpfs", flags, maskTmpfs); err != nil {
			return false, fmt.Errorf("masking %s: %w", p, err)
		}
		return true, nil
	}
	if err := bindReadonly("/dev/null", target); err != nil {
		return false, fmt.Errorf("masking %s: %w", p, err)
	}
	return true, nil
}

// emptyDir is one empty tmpfs, read-only from its creation, that the
// read-only directory masks of a root show: the first mask is its mount
// (fsmount), each other one a bind of that mount. A bind shares the
// superblock, which nothing can ever write, and copies the mount's flags
// (ro, nosuid, nodev, noexec), so every mask is what a tmpfs of its own
// was. But a tmpfs is a superblock, set up after the world's release and
// torn down as it ends, both on the critical path of a world's start and
// close; a bind is a mount.
type emptyDir struct {
	fd int // the first mask's mount, -1 until it is made
}

// attach mounts the empty directory on target.
func (e *emptyDir) attach(target string) error {
	if e.fd >= 0 {
		// Through the descriptor's link in /proc, which names the first
		// mask's mount itself, not its path: nothing can redirect it.
		return unix.Mount("/proc/self/fd/"+strconv.Itoa(e.fd), target, "", unix.MS_BIND, "")
	}
	fd, err := newEmptyTmpfs()
	if err != nil {
		return err
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		unix.Close(fd)
		return err
	}
	e.fd = fd
	return nil
}

func (e *emptyDir) close() {
	if e.fd >= 0 {
		unix.Close(e.fd)
		e.fd = -1
	}
}

// newEmptyTmpfs is a detached mount of a new tmpfs whose superblock is
// read-only, and the mount too, nosuid, nodev and noexec.
func newEmptyTmpfs() (int, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen: %w", err)
	}
	defer unix.Close(fsfd)
	return fsmountTmpfs(fsfd, "source=tmpfs,"+maskTmpfs, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
}

// fsmountTmpfs configures fsfd, a tmpfs context from fsopen, with data
// (k=v options, comma-separated, as mount(2) takes them) and, with
// readonly, a read-only superblock; creates the tmpfs and returns its
// detached mount (fsmount) with the mount attributes attr.
func fsmountTmpfs(fsfd int, data string, readonly bool, attr int) (int, error) {
	for _, kv := range strings.Split(data, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if err := unix.FsconfigSetString(fsfd, k, v); err != nil {
			return -1, fmt.Errorf("tmpfs option %s: %w", kv, err)
		}
	}
	if readonly {
		if err := unix.FsconfigSetFlag(fsfd, "ro"); err != nil {
			return -1, fmt.Errorf("tmpfs option ro: %w", err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("creating a tmpfs: %w", err)
	}
	fd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, attr)
	if err != nil {
		return -1, fmt.Errorf("mounting a tmpfs: %w", err)
	}
	return fd, nil
}

// bindReadonly binds the host inode src (a device node, /dev/null over a
// masked file) on target, read-only: its mode, owner, times and xattrs
// cannot change from inside. Data is unaffected: the kernel applies a
// read-only mount to regular files, not to I/O on device nodes, so
// /dev/null still swallows writes.
func bindReadonly(src, target string) error {
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return unix.MountSetattr(unix.AT_FDCWD, target, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC})
}

// specMount adds one Spec mount (tmpfs or bind) under root. A bind
// attaches tree, the detached mount of its source a root dsh made, or
// with tree < 0 binds the source at exactly its path (the real path dsh
// checked, CloneExact).
func specMount(root string, m specs.Mount, tree int) error {
	target := filepath.Join(root, m.Destination)
	opts, err := sandbox.ParseMountOptions(m.Options) // checked by sandbox.Validate
	if err != nil {
		return fmt.Errorf("mount %s: %w", m.Destination, err)
	}
	switch m.Type {
	case "tmpfs":
		if err := unix.Mount("tmpfs", target, "tmpfs", opts.Flags(), strings.Join(opts.Data, ",")); err != nil {
			return fmt.Errorf("mounting tmpfs on %s: %w", m.Destination, err)
		}
	default:
		if tree < 0 {
			if tree, err = CloneExact(m.Source); err != nil {
				return fmt.Errorf("bind source for %s: %w", m.Destination, err)
			}
		}
		err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(tree)
		if err != nil {
			return fmt.Errorf("attaching %s on %s: %w", m.Source, m.Destination, err)
		}
		// Binds are always nosuid and nodev: a host file in a world
		// neither raises privileges nor opens a device.
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if opts.ReadOnly {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if opts.NoExec {
			attr.Attr_set |= unix.MOUNT_ATTR_NOEXEC
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, target, unix.AT_RECURSIVE, attr); err != nil {
			return fmt.Errorf("setting flags of %s: %w", m.Destination, err)
		}
	}
	return nil
}

// mountProc mounts a /proc of the new pid namespace.
func mountProc(root string) error {
	proc := filepath.Join(root, "proc")
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return unavailable("mount a private /proc", err, "the kernel refuses proc mounts in user namespaces when /proc is partly hidden (e.g. inside some containers); run dsh on the host or use --driver docker")
	}
	for _, p := range procReadonly {
		t := filepath.Join(proc, p)
		if _, err := os.Lstat(t); err != nil {
			continue
		}
		if err := unix.Mount(t, t, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding /proc/%s: %w", p, err)
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, t, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}); err != nil {
			return fmt.Errorf("making /proc/%s read-only: %w", p, err)
		}
	}
	for _, p := range procMasks {
		if _, err := mountMask(proc, "/"+p, true, nil); err != nil {
			return err
		}
	}
	return nil
}

// mountDev builds a minimal /dev: a few host device nodes, a private
// devpts, the mount point of /dev/shm (mountShm) and the standard
// symlinks. The tmpfs is read-only afterwards.
func mountDev(root string) error {
	dev := filepath.Join(root, "dev")
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("mounting /dev: %w", err)
	}
	for _, n := range devNodes {
		t := filepath.Join(dev, n)
		if err := os.WriteFile(t, nil, 0o666); err != nil {
			return fmt.Errorf("creating /dev/%s: %w", n, err)
		}
		if err := bindReadonly("/dev/"+n, t); err != nil {
			return fmt.Errorf("binding /dev/%s: %w", n, err)
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return fmt.Errorf("creating /dev/%s: %w", d, err)
		}
	}
	if err := unix.Mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mounting /dev/pts: %w", err)
	}
	for name, to := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(to, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("creating /dev/%s: %w", name, err)
		}
	}
	if err := unix.Mount("", dev, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("making /dev read-only: %w", err)
	}
	return nil
}

// mountShm mounts the world's /dev/shm, sized as the driver fitted it
// into the write budget.
func mountShm(root string, shm specs.Mount) error {
	so, err := sandbox.ParseMountOptions(shm.Options)
	if err != nil || len(so.Data) == 0 {
		return fmt.Errorf("mounting /dev/shm: the driver sized no /dev/shm (options %q, %v)", shm.Options, err)
	}
	if err := unix.Mount("tmpfs", filepath.Join(root, "dev/shm"), "tmpfs", so.Flags()|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, strings.Join(so.Data, ",")); err != nil {
		return fmt.Errorf("mounting /dev/shm: %w", err)
	}
	return nil
}

// pivot makes root the root of the mount namespace and detaches the host
// root. pivot_root(".", ".") stacks the old root on the new one, so no
// put-old directory (which a read-only root could not provide) is needed.
func pivot(root string) error {
	if err := unix.Chdir(root); err != nil {
		return fmt.Errorf("entering the new root: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return unavailable("pivot_root into the sandbox root", err, "the host root must not be on a rootfs/initramfs mount; run dsh from a normal root filesystem or use --driver docker")
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host root: %w", err)
	}
	return unix.Chdir("/")
}

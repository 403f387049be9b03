package docker

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

	"github.com/dsh-dev/dsh/sandbox"
)

// A docker world has no user namespace: the uid its processes run as is
// a host uid, so who it is decides which workspace files it may write
// and who owns what it creates. With no Spec.User the world runs as the
// workspace's owner, as the native driver's worlds do, so a workspace is
// writable whoever owns it and new files keep that owner. A root-owned
// workspace (CI) is the exception: a world is never the host's root. It
// runs as MappedUID, an unprivileged id no host user has, and its
// workspace is an idmapped mount (made by dsh on the host, bound by the
// daemon) in which on-disk id k shows as MappedUID+k: the workspace is
// the world's own, and what it writes lands on disk as root's. The
// Engine API of docker 20.10 cannot idmap a bind, and userns-remap is the
// whole daemon's, so dsh makes the mount itself.

// MappedUID is the host uid (and gid) a docker world runs as when its
// workspace belongs to root. It is the first id after the native
// driver's default range (0x70000000 + 65536), so no host user and no
// native world has it.
const MappedUID = 0x70000000 + idmapSize

// idmapSize is how many on-disk ids the idmapped workspace maps (0-65535,
// like a native world); files of other ids show as the overflow id.
const idmapSize = 1 << 16

// worldID is who a world's processes are, and how its workspace is
// mounted.
type worldID struct {
	user   string   // "uid:gid", or the image's user
	groups []string // additional gids
	// idmap is set when the workspace must be an idmapped mount that
	// shows on-disk id k as MappedUID+k.
	idmap bool
}

// worldIdentity decides who the world is: the Spec's User when it names
// one; else the workspace's owner; else (a root-owned workspace)
// MappedUID with an idmapped workspace. The image's user is no longer
// the default: it owns nothing on the host.
func worldIdentity(spec *sandbox.Spec) (worldID, error) {
	if u := spec.User; u != nil {
		if u.UID == 0 || u.GID == 0 || slices.Contains(u.AdditionalGids, 0) {
			return worldID{}, &specError{field: "User", msg: fmt.Sprintf("uid %d gid %d groups %v: a docker world has no user namespace, so id 0 there is the host's root (it would own every root-owned file in the workspace and the binds); leave User nil (the workspace's owner) or name another id", u.UID, u.GID, u.AdditionalGids)}
		}
		user, groups := specUser(spec.User)
		return worldID{user: user, groups: groups}, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(spec.Workspace, &st); err != nil {
		return worldID{}, &specError{field: "Workspace", msg: err.Error()}
	}
	if st.Uid != 0 {
		return worldID{user: fmt.Sprintf("%d:%d", st.Uid, st.Gid)}, nil
	}
	if os.Geteuid() != 0 {
		return worldID{}, &specError{field: "Workspace", msg: fmt.Sprintf(
			"%s belongs to root, and a docker world never runs as the host's root; showing it to an unprivileged id needs an idmapped mount, which only a root dsh can make: run dsh as root, chown the workspace to your user, or pass --user UID:GID of a user who may write it", spec.Workspace)}
	}
	if st.Gid >= idmapSize {
		return worldID{}, &specError{field: "Workspace", msg: fmt.Sprintf("%s belongs to gid %d; an idmapped workspace maps gids 0-%d only: chgrp it, or pass --user", spec.Workspace, st.Gid, idmapSize-1)}
	}
	return worldID{user: fmt.Sprintf("%d:%d", MappedUID, MappedUID+st.Gid), idmap: true}, nil
}

// mapSources makes the host side of a MappedUID world's binds: the
// workspace and every bind of the Spec become idmapped mounts (on-disk
// id k shows as MappedUID+k), nosuid and nodev, each on a new directory
// in MappedDir, which the daemon binds instead of the source. So the world sees every bind as a native world of the
// workspace's owner does. Once the container runs, detachMapped detaches
// them from the host (the container's binds keep them); a directory is
// never removed with what is below it.
func (w *world) mapSources(spec *sandbox.Spec, host *container.HostConfig) error {
	// The workspace and the protected paths' binds, which show parts of
	// it. An overlay's mount point is not among them: overlayfs cannot be
	// idmapped, its lower layer is (mapOne).
	sources := map[string]bool{spec.Workspace: true}
	for _, m := range host.Mounts {
		if strings.HasPrefix(m.Target, spec.Workspace+"/") && strings.HasPrefix(m.Source, spec.Workspace+"/") {
			sources[m.Source] = true
		}
	}
	for _, m := range spec.Mounts {
		if sandbox.IsBind(m) {
			sources[m.Source] = true
		}
	}
	ns, err := mappingNS(MappedUID, idmapSize)
	if err != nil {
		return err
	}
	defer unix.Close(ns)
	for i, m := range host.Mounts {
		if m.Type != mount.TypeBind || !sources[m.Source] {
			continue
		}
		dir, err := idmapped(w.id, m.Source, ns)
		if err != nil {
			return err
		}
		w.mapped = append(w.mapped, dir)
		host.Mounts[i].Source = dir
	}
	return nil
}

// idmapped attaches an idmapped copy of the mounts at path, through the
// user namespace ns, on a new directory, and returns the directory.
func idmapped(id, path string, ns int) (dir string, err error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return "", fmt.Errorf("docker: cloning %s for an idmapped mount: %w", path, err)
	}
	defer unix.Close(fd)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(ns)}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
		return "", &idmapError{path: path, err: err}
	}
	// The time in the name tells Reap how old it is: a mount point's own
	// times are hidden under the mount.
	name := fmt.Sprintf("%s%s-%d-", mappedPrefix, id, time.Now().Unix())
	if err := os.MkdirAll(MappedDir, 0o700); err != nil {
		return "", fmt.Errorf("docker: making %s for idmapped mounts: %w", MappedDir, err)
	}
	if fi, serr := os.Stat(path); serr == nil && !fi.IsDir() {
		// A file is mounted on a file.
		var f *os.File
		if f, err = os.CreateTemp(MappedDir, name); err == nil {
			dir = f.Name()
			f.Close()
		}
	} else {
		dir, err = os.MkdirTemp(MappedDir, name)
	}
	if err != nil {
		return "", fmt.Errorf("docker: making the mount point of an idmapped mount: %w", err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("docker: attaching the idmapped copy of %s at %s: %w", path, dir, err)
	}
	return dir, nil
}

// MappedDir holds the mount points of idmapped binds while a world's
// container is made: root's own directory in /run, which no cleaner of
// temporary files sweeps (one that walked into a mount would delete the
// workspace's files). Reap detaches what a crashed dsh left there.
const MappedDir = "/run/dsh-docker"

// mappedPrefix names the mount points in MappedDir.
const mappedPrefix = "map-"

// detachMapped detaches the idmapped mount from dir and removes the
// then empty directory. It never removes anything below dir: if the
// mount cannot be detached, the directory (the workspace!) stays.
func detachMapped(dir string) error {
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("docker: detaching the idmapped mount at %s: %w", dir, err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("docker: removing the mount point %s: %w", dir, err)
	}
	return nil
}

// reapMapped detaches the idmapped workspaces a crashed dsh left in dir:
// those of worlds with no live container, made before cutoff (a world
// another dsh is opening right now has no container yet). A live world's
// mount point is detached as soon as its container runs.
func reapMapped(dir string, live map[string]bool, cutoff time.Time) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), mappedPrefix)
		if !ok {
			continue
		}
		id, rest, _ := strings.Cut(rest, "-")
		stamp, _, _ := strings.Cut(rest, "-")
		made, err := strconv.ParseInt(stamp, 10, 64)
		if live[id] || err != nil || time.Unix(made, 0).After(cutoff) {
			continue
		}
		if err := detachMapped(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// idmapError is a workspace or bind source the kernel would not idmap.
type idmapError struct {
	path string
	err  error
}

func (e *idmapError) Error() string {
	return fmt.Sprintf("docker: the workspace belongs to root, and a docker world never runs as the host's root; dsh shows the workspace and every bind (here %s) to the world's unprivileged id through idmapped mounts, which the kernel refused (%v): they need Linux 5.12 or newer and a file system that supports idmapping (ext4, xfs, btrfs; tmpfs from 6.3); move the workspace or the bind source to such a file system, chown the workspace to a user, or pass --user UID:GID of a user who may write it", e.path, e.err)
}

func (e *idmapError) Unwrap() error { return e.err }

// mappingNS returns a descriptor of a new user namespace whose ids 0 to
// size-1 are host ids base to base+size-1: the mapping of an idmapped
// mount. A process holds the namespace while the descriptor is opened;
// it is stopped by ptrace at its execve, so nothing of it ever runs, and
// then killed. A multithreaded Go program cannot unshare a user
// namespace itself.
func mappingNS(base, size int) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return -1, fmt.Errorf("docker: finding a program to hold a user namespace: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: base, Size: size}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: base, Size: size}},
		Ptrace:      true,
		Pdeathsig:   syscall.SIGKILL,
	}
	// The tracer is the thread that forks; it must not change until the
	// child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("docker: making the user namespace of an idmapped mount, which shows a root-owned workspace to the world's unprivileged id: %w; it takes a root dsh on the host (in a container, dsh has no CAP_SYS_ADMIN): chown the workspace to an unprivileged user (for hosted workspaces, dsh serve --workspace-owner UID:GID), or pass --user UID:GID", err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("docker: opening the user namespace of an idmapped mount: %w", err)
	}
	return fd, nil
}

// detachMapped detaches the world's idmapped binds from the host, if it
// has any there.
func (w *world) detachMapped() error {
	var errs []error
	for _, dir := range w.mapped {
		if err := detachMapped(dir); err != nil {
			errs = append(errs, err)
		}
	}
	w.mapped = nil
	return errors.Join(errs...)
}

// specUser is the Spec's User as the Engine API takes it: "uid:gid"
// and the additional gids.
func specUser(u *specs.User) (string, []string) {
	var groups []string
	for _, g := range u.AdditionalGids {
		groups = append(groups, fmt.Sprint(g))
	}
	return fmt.Sprintf("%d:%d", u.UID, u.GID), groups
}

// mapOne attaches an idmapped copy of path (as mapSources does for the
// binds) and returns where: an overlay's lower layer, which overlayfs
// takes idmapped although the overlay itself cannot be.
func (w *world) mapOne(path string) (string, error) {
	ns, err := mappingNS(MappedUID, idmapSize)
	if err != nil {
		return "", err
	}
	defer unix.Close(ns)
	dir, err := idmapped(w.id, path, ns)
	if err != nil {
		return "", err
	}
	w.mapped = append(w.mapped, dir)
	return dir, nil
}

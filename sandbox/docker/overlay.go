package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
)

// An overlay workspace of a docker world is mounted by dsh on the host
// and bound into the container: the engine's own overlay volumes
// (local driver, type=overlay) would put the upper layer on the
// engine's disk with no bound. The upper and work directories are on a
// size-limited tmpfs that is attached nowhere (fsopen/fsmount): dsh
// reads the upper layer through its descriptor, and the only host mount
// is the overlay itself, at dsh-world-ID-overlay-*/merged in the temp
// directory, removed by Close and, after a crash, by Reap. Mounting
// needs CAP_SYS_ADMIN on the host: a dsh that is not root is refused
// with the fix (the native driver mounts its overlay inside the world's
// user namespace and needs no privilege).

// overlayMerged is the overlay's mount point in a world's overlay
// directory.
const overlayMerged = "merged"

// openOverlay mounts the overlay workspace of spec over lower (the
// workspace, or its idmapped copy for a world that runs as
// MappedUID+owner: then shift is MappedUID, and the upper root is owned
// like the lower's) and returns the host path to bind at the workspace.
func (w *world) openOverlay(spec *sandbox.Spec, lower string, shift uint32) (string, error) {
	if os.Geteuid() != 0 {
		return "", &specError{field: "WorkspaceMode", msg: fmt.Sprintf("%s: the docker driver mounts the overlay on the host, which needs root; run dsh as root, use --driver native (which needs no privilege for it), or --workspace-mode rw or ro", sandbox.WorkspaceOverlay)}
	}
	var st unix.Stat_t
	if err := unix.Stat(spec.Workspace, &st); err != nil {
		return "", fmt.Errorf("docker: overlay workspace: %w", err)
	}
	dir, err := os.MkdirTemp("", "dsh-world-"+w.id+"-overlay-")
	if err != nil {
		return "", fmt.Errorf("docker: overlay workspace: %w", err)
	}
	w.overlayDir = dir
	merged := filepath.Join(dir, overlayMerged)
	if err := os.Mkdir(merged, 0o755); err != nil {
		return "", fmt.Errorf("docker: overlay workspace: %w", err)
	}
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return "", fmt.Errorf("docker: overlay workspace: the upper tmpfs (fsopen, Linux 5.2 or newer): %w", err)
	}
	defer unix.Close(fsfd)
	for _, kv := range strings.Split(sandbox.OverlayTmpfsData(spec.UpperSize()), ",") {
		k, v, _ := strings.Cut(kv, "=")
		if err := unix.FsconfigSetString(fsfd, k, v); err != nil {
			return "", fmt.Errorf("docker: overlay upper tmpfs option %s: %w", kv, err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return "", fmt.Errorf("docker: creating the overlay upper tmpfs: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return "", fmt.Errorf("docker: mounting the overlay upper tmpfs: %w", err)
	}
	w.upper = os.NewFile(uintptr(mfd), "overlay-upper")
	// The merged root takes the upper root's owner and mode.
	if err := unix.Mkdirat(mfd, "upper", 0o700); err != nil {
		return "", fmt.Errorf("docker: overlay upper directory: %w", err)
	}
	if err := unix.Fchownat(mfd, "upper", int(st.Uid+shift), int(st.Gid+shift), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", fmt.Errorf("docker: overlay upper directory: %w", err)
	}
	if err := unix.Fchmodat(mfd, "upper", st.Mode&0o7777, 0); err != nil {
		return "", fmt.Errorf("docker: overlay upper directory: %w", err)
	}
	if err := unix.Mkdirat(mfd, "work", 0o700); err != nil {
		return "", fmt.Errorf("docker: overlay work directory: %w", err)
	}
	self := "/proc/self/fd/" + strconv.Itoa(mfd)
	ofd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return "", fmt.Errorf("docker: overlay workspace (modprobe overlay): %w", err)
	}
	defer unix.Close(ofd)
	for _, o := range [][2]string{
		{"lowerdir", strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(lower)},
		{"upperdir", self + "/upper"},
		{"workdir", self + "/work"},
		// What package workspace/changes reads: a renamed directory is a
		// copy and a delete, data is never elsewhere.
		{"redirect_dir", "off"},
		{"metacopy", "off"},
		{"index", "off"},
	} {
		if err := unix.FsconfigSetString(ofd, o[0], o[1]); err != nil {
			return "", fmt.Errorf("docker: overlay workspace option %s=%s: %w", o[0], o[1], err)
		}
	}
	if err := unix.FsconfigCreate(ofd); err != nil {
		return "", fmt.Errorf("docker: creating the overlay workspace over %s: %w", spec.Workspace, err)
	}
	ovl, err := unix.Fsmount(ofd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return "", fmt.Errorf("docker: mounting the overlay workspace: %w", err)
	}
	defer unix.Close(ovl)
	if err := unix.MoveMount(ovl, "", unix.AT_FDCWD, merged, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return "", fmt.Errorf("docker: attaching the overlay workspace: %w", err)
	}
	w.merged = merged
	return merged, nil
}

// closeOverlay detaches the overlay and releases the upper tmpfs.
func (w *world) closeOverlay() error {
	var errs []error
	if w.merged != "" {
		if err := unix.Unmount(w.merged, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("docker: unmounting the overlay workspace %s: %w", w.merged, err))
		}
	}
	if w.upper != nil {
		w.upper.Close()
	}
	if w.overlayDir != "" && len(errs) == 0 {
		if err := os.RemoveAll(w.overlayDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// FreezeUpper removes the world's container, and with it every process,
// and returns the upper layer, through dsh's descriptor of the upper
// tmpfs (sandbox.Overlay).
func (w *world) FreezeUpper() (string, error) {
	w.freezeOnce.Do(func() {
		if w.upper == nil {
			w.freezeErr = errors.New("docker: the world's workspace is not an overlay (Spec.WorkspaceMode " + string(sandbox.WorkspaceOverlay) + ")")
			return
		}
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if w.init != nil {
			w.init.Close()
		}
		if w.containerID != "" {
			if err := w.d.removeContainer(ctx, w.containerID); err != nil {
				w.freezeErr = err
				return
			}
		}
		w.frozen = "/proc/self/fd/" + strconv.Itoa(int(w.upper.Fd())) + "/upper"
	})
	return w.frozen, w.freezeErr
}

// unmountLeftOverlay detaches the overlay of a dead world's directory
// before Reap removes it: removing files through it would only write
// whiteouts, but the mount itself would stay.
func unmountLeftOverlay(dir string) error {
	err := unix.Unmount(filepath.Join(dir, overlayMerged), unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("docker: unmounting the overlay of a dead world in %s: %w", dir, err)
}

// checkOverlaySeen makes sure the container's workspace is dsh's
// overlay: an engine in another mount namespace (rootless, a VM) binds
// the empty mount point instead, and the world would write beside the
// overlay where no change set sees it.
func (w *world) checkOverlaySeen(ctx context.Context, ws string) error {
	ins, err := w.d.cli.ContainerInspect(ctx, w.containerID)
	if err != nil {
		return fmt.Errorf("docker: inspecting the world container: %w", err)
	}
	if ins.State == nil || ins.State.Pid == 0 {
		return errors.New("docker: the world container has no running init")
	}
	var inside, ours unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/root%s", ins.State.Pid, ws), &inside); err != nil {
		return fmt.Errorf("docker: checking the world's overlay workspace: %w", err)
	}
	if err := unix.Stat(w.merged, &ours); err != nil {
		return fmt.Errorf("docker: checking the world's overlay workspace: %w", err)
	}
	if inside.Dev != ours.Dev || inside.Ino != ours.Ino {
		return &specError{field: "WorkspaceMode", msg: fmt.Sprintf("%s: the docker engine does not see dsh's overlay mount at %s (it runs in another mount namespace: rootless docker, a VM); use --driver native, or --workspace-mode rw or ro", sandbox.WorkspaceOverlay, w.merged)}
	}
	return nil
}

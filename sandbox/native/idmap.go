package native

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
	"golang.org/x/sys/unix"
)

// A root dsh never gives a world the host's uid 0. The world's ids
// 0-65535 are mapped to an unprivileged host range: host files owned by
// ids outside it (root's, every user's) show as the overflow id inside
// and are protected by their permission bits, not by a list. The
// workspace is an idmapped mount through the world's user namespace, so
// on-disk owners look the same inside and files the world creates keep
// their on-disk owner.

// DefaultIDBase is the first host uid and gid of a root dsh's worlds when
// Options.IDBase is zero and /etc/subuid and /etc/subgid hold no range
// for user "dsh" or "root" (initspawn.DefaultIDBase).
const DefaultIDBase = initspawn.DefaultIDBase

// idRangeSize is how many ids a world has: 0-65535 inside.
const idRangeSize = initspawn.IDRangeSize

// idRange is where a root dsh's worlds live on the host.
type idRange struct {
	uid, gid uint32 // host ids of the world's uid 0 and gid 0
}

// worldIDRange picks the host range: Options.IDBase, else a subordinate
// range of "dsh" or "root", else DefaultIDBase. A range that contains
// host id 0 would hand the world host root, so it is refused.
func worldIDRange(base uint32) (idRange, error) {
	r := idRange{uid: base, gid: base}
	if base == 0 {
		r.uid = initspawn.Subordinate("/etc/subuid", DefaultIDBase)
		r.gid = initspawn.Subordinate("/etc/subgid", DefaultIDBase)
	}
	for _, b := range []uint32{r.uid, r.gid} {
		if !initspawn.UsableIDBase(b) {
			return idRange{}, &specError{Field: "IDBase", Msg: fmt.Sprintf("host id range %d-%d is not usable: it must not contain 0 and must end below 2^32-1; pick another base", b, uint64(b)+idRangeSize-1)}
		}
	}
	return r, nil
}

// usable explains why the range cannot be mapped (nil if it can): dsh
// itself runs in a user namespace (a container) whose maps lack it.
// Only consulted once creating the world failed, and only when user
// namespaces are allowed at all (that explanation comes first).
func (r idRange) usable() error {
	if ok, _ := userNSAllowed(); !ok {
		return nil
	}
	for _, m := range []struct {
		file string
		base uint32
	}{{"/proc/self/uid_map", r.uid}, {"/proc/self/gid_map", r.gid}} {
		b, err := os.ReadFile(m.file)
		if err != nil {
			return nil
		}
		covered := false
		for _, line := range strings.Split(string(b), "\n") {
			var in, out, n uint64
			if _, err := fmt.Sscan(line, &in, &out, &n); err == nil && in <= uint64(m.base) && uint64(m.base)+idRangeSize <= in+n {
				covered = true
			}
		}
		if !covered {
			return &unavailableError{Step: fmt.Sprintf("map the world to host ids %d-%d", m.base, uint64(m.base)+idRangeSize-1),
				Err: fmt.Errorf("%s does not contain them", m.file),
				Fix: "dsh runs in a user namespace without that range; give user dsh a subordinate range of 65536 ids that this namespace maps (/etc/subuid, /etc/subgid), or use --driver docker"}
		}
	}
	return nil
}

// IdentityView says, for `dsh doctor`, which host identity this caller's
// worlds hold (idBase as Options.IDBase).
func IdentityView(idBase uint32) string {
	if os.Geteuid() != 0 {
		return fmt.Sprintf("worlds run as your uid %d; per-uid kernel limits (inotify instances, processes) are shared with your own processes", os.Getuid())
	}
	r, err := worldIDRange(idBase)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("worlds run as host uids %d-%d, gids %d-%d (never host root); the workspace is an idmapped mount, so files keep their owners",
		r.uid, uint64(r.uid)+idRangeSize-1, r.gid, uint64(r.gid)+idRangeSize-1)
}

// workspaceOwner returns the on-disk owner of the workspace: a root
// dsh's world runs as that identity when Spec.User is nil, so it can
// write the owner's files and what it creates belongs to the owner.
func workspaceOwner(ws string) (uid, gid uint32, err error) {
	var st unix.Stat_t
	if err := unix.Stat(ws, &st); err != nil {
		return 0, 0, &specError{Field: "Workspace", Msg: err.Error()}
	}
	if st.Uid >= idRangeSize || st.Gid >= idRangeSize {
		return 0, 0, &specError{Field: "Workspace", Msg: fmt.Sprintf("%s is owned by uid %d gid %d; a world maps ids 0-65535 only; chown the workspace or set the Spec's User", ws, st.Uid, st.Gid)}
	}
	return st.Uid, st.Gid, nil
}

// detachedTrees makes, on the host side, the mounts the init attaches
// into its root: the workspace, idmapped through the world's user
// namespace (/proc/PID/ns/user), and each allowed home location,
// read-only. Creating them needs CAP_SYS_ADMIN in the initial user
// namespace, which the init lacks; the init cannot even look up paths
// below directories only host users may search. The caller closes fds.
func detachedTrees(pid int, ws string, allow []string) (fds []int, err error) {
	defer func() {
		if err != nil {
			closeFDs(fds)
			fds = nil
		}
	}()
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("native: opening the world's user namespace: %w", err)
	}
	defer unix.Close(ns)
	fd, err := cloneTree(ws, &unix.MountAttr{
		Attr_set:  unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Userns_fd: uint64(ns),
	})
	if err != nil {
		var unsupported bool
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EOPNOTSUPP) {
			unsupported = true
		}
		if unsupported {
			return nil, &unavailableError{Step: "idmap the workspace " + ws, Err: err,
				Fix: "a root dsh maps each world to an unprivileged id range and needs an idmapped workspace mount (Linux 5.12 or newer, a file system that supports idmapping: ext4, xfs, btrfs, tmpfs from 6.3); move the workspace to such a file system, run dsh as an unprivileged user, or use --driver docker"}
		}
		return nil, fmt.Errorf("native: idmapping the workspace %s: %w", ws, err)
	}
	fds = append(fds, fd)
	for _, p := range allow {
		fd, err := cloneTree(p, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV})
		if err != nil {
			return nil, fmt.Errorf("native: cloning the allowed home location %s: %w", p, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// cloneTree returns a detached recursive copy of the mounts at path with
// attr applied to all of them.
func cloneTree(path string, attr *unix.MountAttr) (int, error) {
	fd, err := nsinit.CloneExact(path)
	if err != nil {
		return -1, err
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("mount_setattr: %w", err)
	}
	return fd, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// release sends the init its configuration (nsinit.Config, encoded),
// which lets it proceed, with fds attached. Closing the socket instead
// aborts the init.
func release(sync *os.File, cfg []byte, fds []int) error {
	if len(cfg) == 0 || len(cfg) > nsinit.MaxConfig {
		return fmt.Errorf("the init's configuration is %d bytes, over the %d an init reads (fewer masks or mounts would fit)", len(cfg), nsinit.MaxConfig)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	return unix.Sendmsg(int(sync.Fd()), cfg, oob, nil, 0)
}

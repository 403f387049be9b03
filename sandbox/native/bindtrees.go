package native

import (
	"errors"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/sandbox"
)

// bindTrees makes, on the host side, a detached mount of the source of
// each bind mount of the Spec, in order, for a root dsh's init to attach
// (nsinit's bindTree): the init, an unprivileged id on the host, may not
// even look the source up. Each is idmapped through the world's user
// namespace like the workspace, so owners inside are the on-disk ones
// and a world writes an rw bind as the identity it has in the workspace;
// where the file system cannot be idmapped, the plain copy shows owners
// as the overflow id (the world may then read and write only what any
// user may). The caller closes fds.
func bindTrees(pid int, mounts []specs.Mount) (fds []int, err error) {
	defer func() {
		if err != nil {
			closeFDs(fds)
			fds = nil
		}
	}()
	ns := -1
	for _, m := range mounts {
		if !sandbox.IsBind(m) {
			continue
		}
		if ns < 0 {
			if ns, err = unix.Open(fmt.Sprintf("/proc/%d/ns/user", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
				return nil, fmt.Errorf("native: opening the world's user namespace: %w", err)
			}
			defer unix.Close(ns)
		}
		fd, err := cloneTree(m.Source, &unix.MountAttr{
			Attr_set:  unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
			Userns_fd: uint64(ns),
		})
		if err != nil && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EPERM)) {
			fd, err = cloneTree(m.Source, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV})
		}
		if err != nil {
			return nil, fmt.Errorf("native: cloning the bind source %s of %s: %w", m.Source, m.Destination, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

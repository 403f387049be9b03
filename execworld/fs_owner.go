package execworld

import (
	"os"

	"golang.org/x/sys/unix"
)

// What dsh writes on a world's behalf belongs to whom the world's own
// write would: a root dsh (dsh serve as root, a docker world running as
// the workspace's owner) would otherwise leave root-owned files and
// directories in a user's workspace, which the world can no longer
// change, and a replaced file would lose its owner. So, when this
// process is root, a new file or directory takes the owner of the
// directory it is made in, and a replaced file keeps its own. Only what
// this process has just made is changed, through its own descriptor
// (the temporary file) or after checking it is the directory it made,
// never a path a world could have swapped; a non-root dsh owns what it
// writes, as before.

// chownable reports whether this process gives what it writes away.
func chownable() bool { return os.Geteuid() == 0 }

// ownerOf is the owner of the open file or directory fd.
func ownerOf(fd int) (uid, gid int, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, err
	}
	return int(st.Uid), int(st.Gid), nil
}

// giveTemp gives the temporary file tfd, about to replace base in the
// directory dfd, the owner of the file it replaces (cur, if exists) or
// of the directory.
func giveTemp(dfd, tfd int, exists bool, cur *unix.Stat_t) error {
	if !chownable() {
		return nil
	}
	uid, gid := int(cur.Uid), int(cur.Gid)
	if !exists {
		var err error
		if uid, gid, err = ownerOf(dfd); err != nil {
			return err
		}
	}
	if uid == 0 && gid == 0 {
		return nil
	}
	return unix.Fchown(tfd, uid, gid)
}

// giveDir gives the directory name that this process has just made in
// pfd the owner of pfd. What is at name now is changed only if it is
// still a directory of this process's: one a world put there instead
// is left as it is.
func giveDir(pfd int, name string) error {
	if !chownable() {
		return nil
	}
	uid, gid, err := ownerOf(pfd)
	if err != nil || (uid == 0 && gid == 0) {
		return err
	}
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != os.Geteuid() {
		return nil
	}
	return unix.Fchown(fd, uid, gid)
}

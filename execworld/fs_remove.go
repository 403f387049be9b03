package execworld

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Remove removes the file name, or the directory name if it is empty. A
// final symlink is removed itself, never the file it names. The parent
// is opened beneath the root (openat2), so a path through "..", an
// absolute symlink or one that leads out fails with ErrEscape and
// nothing outside the workspace is touched; the root itself cannot be
// removed.
func (f *FS) Remove(name string) error {
	if err := f.remove(name); err != nil {
		return &PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

func (f *FS) remove(name string) error {
	if f.readOnly != "" {
		return fmt.Errorf("%w: %s", unix.EROFS, f.readOnly)
	}
	if r, err := f.rel(name); err == nil && r == "." {
		return errors.New("the workspace root cannot be removed; name a file or directory inside it")
	}
	dfd, base, err := f.openParent(name)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	flags := 0
	if typeOf(st.Mode) == TypeDir {
		flags = unix.AT_REMOVEDIR
	}
	return unix.Unlinkat(dfd, base, flags)
}

package changes

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Keep copies the upper layer the set was computed from to dir, for
// review: an overlayfs upper directory as the kernel left it (whiteouts
// as 0/0 character devices, opaque directories marked with
// user.overlay.opaque), so it can be inspected, diffed, or mounted again
// over the workspace. dir must not exist, or be an empty directory; it
// is created 0700. Setuid and setgid bits are dropped and no other
// extended attribute is copied.
func (s *Set) Keep(dir string) error {
	if s.upper == "" {
		return errors.New("changes: Keep needs a set made by Compute")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("changes: --keep %s: %w", dir, err)
		}
		entries, rerr := os.ReadDir(dir)
		if rerr != nil || len(entries) > 0 {
			return fmt.Errorf("changes: --keep %s: the directory exists and is not empty; give a new or empty directory", dir)
		}
	}
	up, err := os.OpenRoot(s.upper)
	if err != nil {
		return fmt.Errorf("changes: opening the upper layer: %w", err)
	}
	defer up.Close()
	dst, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("changes: --keep %s: %w", dir, err)
	}
	defer dst.Close()
	k := &keeper{up: up, dst: dst, upper: s.upper, dir: dir}
	return k.copyDir(".")
}

type keeper struct {
	up, dst    *os.Root
	upper, dir string
}

func (k *keeper) copyDir(rel string) error {
	names, err := readDir(k.up, rel)
	if err != nil {
		return err
	}
	w := &walker{up: k.up, upper: k.upper}
	for _, n := range names {
		p := join(rel, n)
		fi, err := k.up.Lstat(p)
		if err != nil {
			return fmt.Errorf("changes: %s in the upper layer: %w", p, err)
		}
		m := perm(fi) & (fs.ModePerm | fs.ModeSticky)
		white, err := w.isWhiteout(p, fi)
		if err != nil {
			return err
		}
		switch {
		case white:
			// Unprivileged since Linux 5.8: a whiteout needs no CAP_MKNOD.
			if err := unix.Mknod(filepath.Join(k.dir, p), unix.S_IFCHR|0o600, 0); err != nil {
				return fmt.Errorf("changes: keeping the whiteout %s: %w", p, err)
			}
		case fi.IsDir():
			if err := k.dst.Mkdir(p, 0o700); err != nil {
				return fmt.Errorf("changes: keeping %s: %w", p, err)
			}
			if opaque, err := w.hasXattr(p, opaqueXattrs, "y"); err != nil {
				return err
			} else if opaque {
				if err := unix.Lsetxattr(filepath.Join(k.dir, p), "user.overlay.opaque", []byte("y"), 0); err != nil {
					return fmt.Errorf("changes: marking %s opaque: %w", p, err)
				}
			}
			if err := k.copyDir(p); err != nil {
				return err
			}
			if err := k.dst.Chmod(p, m); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := k.up.Readlink(p)
			if err != nil {
				return err
			}
			if err := k.dst.Symlink(t, p); err != nil {
				return fmt.Errorf("changes: keeping %s: %w", p, err)
			}
		case fi.Mode().IsRegular():
			if err := k.copyFile(p, m); err != nil {
				return fmt.Errorf("changes: keeping %s: %w", p, err)
			}
		}
		// Fifos, sockets and devices the world made are not kept.
	}
	return nil
}

func (k *keeper) copyFile(p string, m fs.FileMode) error {
	src, err := k.up.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := k.dst.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	return k.dst.Chmod(p, m)
}

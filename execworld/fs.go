package execworld

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// resolveFlags confine every lookup to the workspace. The kernel checks
// each component as it walks, so "..", absolute symlinks, symlinks that
// lead out and a symlink swapped in mid-walk all fail with EXDEV, and
// magic links (/proc/self/root, /proc/*/fd/*) fail with ELOOP.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// FS is the workspace filesystem of a World. Every path is relative to
// the workspace root; an absolute path is accepted only when it names a
// place under the root, and is then made relative. Containment is
// enforced by the kernel (openat2 from a directory fd of the root), not
// by string checks.
type FS struct {
	root string // canonical absolute path of the workspace
	// readOnly, when set, says why writes are refused: the world's
	// workspace mode (ro, overlay) is not the real workspace's.
	readOnly string

	mu     sync.RWMutex // guards fd against Close while in use
	fd     int          // O_PATH directory fd of root; -1 when closed
	closed bool
}

// OpenFS opens the workspace directory root for confined access. root must
// be an absolute path of an existing directory; symlinks in it are
// resolved once, here.
func OpenFS(root string) (*FS, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("execworld: workspace %q is not an absolute path; pass an absolute directory", root)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("execworld: workspace %q: %w; create the directory or pass another --workspace", root, err)
	}
	fd, err := unix.Open(real, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("execworld: workspace %q is not an openable directory: %w", root, err)
	}
	return &FS{root: real, fd: fd}, nil
}

// Root is the canonical absolute host path of the workspace.
func (f *FS) Root() string { return f.root }

// Close releases the workspace directory fd. It is idempotent; the second
// call returns ErrClosed.
func (f *FS) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	f.closed = true
	err := unix.Close(f.fd)
	f.fd = -1
	return err
}

// rel turns a caller's path into a clean path relative to the root, or
// an error. "" and "." are the root itself.
func (f *FS) rel(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", errors.New("path contains a NUL byte")
	}
	if filepath.IsAbs(name) {
		clean := filepath.Clean(name)
		if clean == f.root {
			return ".", nil
		}
		if !strings.HasPrefix(clean, f.root+"/") {
			return "", &escapeError{errno: unix.EXDEV, why: "it is an absolute path outside the workspace " + f.root}
		}
		name = clean[len(f.root)+1:]
	}
	if name == "" {
		return ".", nil
	}
	// Not cleaned further: ".." must reach the kernel, which decides
	// whether it stays beneath the root.
	return name, nil
}

// Abs returns the absolute path of name inside the world (the workspace is
// mounted at the same path inside and out). It checks containment
// lexically only; use Stat to check that the path exists inside.
func (f *FS) Abs(name string) (string, error) {
	r, err := f.rel(name)
	if err != nil {
		return "", err
	}
	p := filepath.Join(f.root, r)
	if p != f.root && !strings.HasPrefix(p, f.root+"/") {
		return "", ErrEscape
	}
	return p, nil
}

// openat2 opens name beneath the root with flags. The returned fd must be
// closed by the caller.
func (f *FS) openat2(name string, flags uint64, mode uint64) (int, error) {
	r, err := f.rel(name)
	if err != nil {
		return -1, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return -1, ErrClosed
	}
	for {
		fd, err := unix.Openat2(f.fd, r, &unix.OpenHow{
			Flags:   flags | unix.O_CLOEXEC,
			Mode:    mode,
			Resolve: resolveFlags,
		})
		if err == unix.EINTR || err == unix.EAGAIN {
			// EAGAIN: a concurrent rename raced the walk; the kernel asks
			// to retry rather than risk a wrong answer.
			continue
		}
		if err != nil {
			return -1, mapErrno(err)
		}
		return fd, nil
	}
}

// openParent opens the directory that holds name (beneath the root) and
// returns its fd and name's final component. The final component is never
// "", "." or "..".
func (f *FS) openParent(name string) (int, string, error) {
	r, err := f.rel(name)
	if err != nil {
		return -1, "", err
	}
	dir, base := filepath.Split(r)
	if base == "" || base == "." || base == ".." {
		return -1, "", fmt.Errorf("%q does not name a file", name)
	}
	if dir == "" {
		dir = "."
	}
	fd, err := f.openat2(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", err
	}
	return fd, base, nil
}

// realRel returns the path of an open fd relative to the root, as the
// kernel reports it. It is used only to find where a symlink inside the
// workspace leads; the result is opened again beneath the root.
func (f *FS) realRel(fd int) (string, error) {
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return "", err
	}
	if p == f.root {
		return ".", nil
	}
	if !strings.HasPrefix(p, f.root+"/") {
		return "", ErrEscape
	}
	return p[len(f.root)+1:], nil
}

// mapErrno turns the errno values RESOLVE_BENEATH reports for escapes into
// errors that match ErrEscape and say what happened (EXDEV's own text,
// "invalid cross-device link", would only confuse).
func mapErrno(err error) error {
	switch err {
	case unix.EXDEV:
		return &escapeError{errno: unix.EXDEV, why: "it leads outside the workspace (through .., an absolute path or a symlink); use a path inside the workspace"}
	case unix.ELOOP:
		return &escapeError{errno: unix.ELOOP, why: "it goes through a magic link (/proc/*/root, /proc/*/fd/*) or too many symlinks; use a plain path inside the workspace"}
	}
	// Other errnos keep their identity: errors.Is(err, fs.ErrNotExist)
	// and friends work on syscall.Errno.
	return err
}

// escapeError is a path the kernel refused to resolve beneath the root.
type escapeError struct {
	errno unix.Errno
	why   string
}

func (e *escapeError) Error() string        { return e.why }
func (e *escapeError) Is(target error) bool { return target == ErrEscape }
func (e *escapeError) Unwrap() error        { return e.errno }

// Package changes computes what a world opened with an overlay workspace
// (sandbox.WorkspaceOverlay) changed, from its upper layer, and applies
// or keeps it. It is the one implementation of the change set: every
// driver only hands out the upper layer (sandbox.Overlay), and dsh run,
// the conformance suite and the serve surface read it here.
//
// The upper layer is an overlayfs upper directory: a file or symlink in
// it replaces the workspace's, a directory merges with the workspace's
// unless it is opaque (the overlay.opaque xattr, trusted. or user.), and
// a whiteout (a 0/0 character device, or a file with the
// overlay.whiteout xattr) deletes what the workspace has at its path.
// Drivers mount the overlay without redirect_dir and metacopy, so an
// upper layer holding their xattrs is refused rather than misread.
package changes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"
)

// Kind is what happened to a path.
type Kind string

// Kinds of change.
const (
	Added    Kind = "added"    // the workspace has nothing at the path
	Modified Kind = "modified" // content, target, mode or type differ
	Deleted  Kind = "deleted"  // the world removed what the workspace has
)

// Types of what a change leaves (or, deleted, removes).
const (
	TypeFile    = "file"
	TypeDir     = "dir"
	TypeSymlink = "symlink"
	TypeOther   = "other" // fifo, socket, device: never applied
)

// Change is one path the world changed.
type Change struct {
	// Path is slash-separated, relative to the workspace root.
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// Type is the type after the change (for a deletion: of what the
	// workspace has): file, dir, symlink or other.
	Type string `json:"type"`
	// Size is the file's size in bytes after the change (deleted: the
	// workspace's).
	Size int64 `json:"size"`
	// Mode is the permission bits after the change, octal (0644,
	// 04755); empty for deletions and symlinks.
	Mode string `json:"mode,omitempty"`
	// Target is a symlink's target.
	Target string `json:"target,omitempty"`

	perm fs.FileMode // the mode bits behind Mode (with setuid, setgid, sticky)
}

// Set is a world's change set, sorted by path.
type Set struct {
	Changes []Change `json:"changes"`
	// Added, Modified and Deleted count the changes of each kind.
	Added    int `json:"added"`
	Modified int `json:"modified"`
	Deleted  int `json:"deleted"`
	// Bytes is the size of every added and modified file.
	Bytes int64 `json:"bytes"`

	upper string // the upper layer it was computed from (Apply, Keep)
}

// Overlay xattrs, in the trusted. namespace (a mount by host root) and
// the user. one (a mount inside a user namespace, option userxattr).
var (
	opaqueXattrs    = []string{"trusted.overlay.opaque", "user.overlay.opaque"}
	whiteoutXattrs  = []string{"trusted.overlay.whiteout", "user.overlay.whiteout"}
	unsupportedAttr = []string{"trusted.overlay.redirect", "user.overlay.redirect", "trusted.overlay.metacopy", "user.overlay.metacopy"}
)

// Compute walks the upper layer once and returns what it changes in the
// workspace (the lower layer, the real workspace, which the walk only
// reads through an os.Root: no symlink in it leads the walk outside).
// Entries of the upper layer that change nothing (a file copied up and
// written back as it was, a chmod to the same mode) are left out, so the
// set is exact.
func Compute(upper, workspace string) (*Set, error) {
	up, err := os.OpenRoot(upper)
	if err != nil {
		return nil, fmt.Errorf("changes: opening the upper layer: %w", err)
	}
	defer up.Close()
	low, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, fmt.Errorf("changes: opening the workspace %s: %w", workspace, err)
	}
	defer low.Close()
	w := &walker{up: up, low: low, upper: upper}
	if err := w.dir(".", true, false); err != nil {
		return nil, err
	}
	s := &Set{Changes: w.out, upper: upper}
	sort.Slice(s.Changes, func(i, j int) bool { return s.Changes[i].Path < s.Changes[j].Path })
	if s.Changes == nil {
		s.Changes = []Change{}
	}
	for _, c := range s.Changes {
		switch c.Kind {
		case Added:
			s.Added++
		case Modified:
			s.Modified++
		case Deleted:
			s.Deleted++
		}
		if c.Kind != Deleted && c.Type == TypeFile {
			s.Bytes += c.Size
		}
	}
	return s, nil
}

type walker struct {
	up, low *os.Root
	upper   string
	out     []Change
}

// dir walks the upper directory rel. lowerDir reports whether the
// workspace has a directory at rel that the overlay merges with; hidden
// reports that it does not show through (rel or a parent is opaque), so
// what the workspace has below rel and the upper layer lacks is deleted.
func (w *walker) dir(rel string, lowerDir, hidden bool) error {
	entries, err := readDir(w.up, rel)
	if err != nil {
		return err
	}
	inUpper := map[string]bool{}
	for _, e := range entries {
		inUpper[e] = true
	}
	if lowerDir && hidden {
		names, err := readDir(w.low, rel)
		if err != nil {
			return err
		}
		for _, n := range names {
			if !inUpper[n] {
				p := join(rel, n)
				fi, err := w.low.Lstat(p)
				if err != nil {
					return fmt.Errorf("changes: %s in the workspace: %w", p, err)
				}
				w.out = append(w.out, deletion(p, fi))
			}
		}
	}
	for _, name := range entries {
		p := join(rel, name)
		ufi, err := w.up.Lstat(p)
		if err != nil {
			return fmt.Errorf("changes: %s in the upper layer: %w", p, err)
		}
		if err := w.checkXattrs(p); err != nil {
			return err
		}
		var lfi fs.FileInfo
		if lowerDir {
			if lfi, err = w.low.Lstat(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("changes: %s in the workspace: %w", p, err)
			}
		}
		white, err := w.isWhiteout(p, ufi)
		if err != nil {
			return err
		}
		switch {
		case white:
			if lfi != nil {
				w.out = append(w.out, deletion(p, lfi))
			}
		case ufi.IsDir():
			opaque, err := w.hasXattr(p, opaqueXattrs, "y")
			if err != nil {
				return err
			}
			switch {
			case lfi == nil:
				w.out = append(w.out, entry(p, Added, ufi, ""))
				if err := w.dir(p, false, false); err != nil {
					return err
				}
			case !lfi.IsDir():
				w.out = append(w.out, entry(p, Modified, ufi, ""))
				if err := w.dir(p, false, false); err != nil {
					return err
				}
			default:
				if perm(ufi) != perm(lfi) {
					w.out = append(w.out, entry(p, Modified, ufi, ""))
				}
				if err := w.dir(p, true, hidden || opaque); err != nil {
					return err
				}
			}
		default:
			c, changed, err := w.leaf(p, ufi, lfi)
			if err != nil {
				return err
			}
			if changed {
				w.out = append(w.out, c)
			}
		}
	}
	return nil
}

// leaf judges a file, symlink or special file of the upper layer against
// what the workspace has at its path (lfi, nil for nothing).
func (w *walker) leaf(p string, ufi, lfi fs.FileInfo) (Change, bool, error) {
	target := ""
	if ufi.Mode()&fs.ModeSymlink != 0 {
		t, err := w.up.Readlink(p)
		if err != nil {
			return Change{}, false, fmt.Errorf("changes: %s in the upper layer: %w", p, err)
		}
		target = t
	}
	if lfi == nil {
		return entry(p, Added, ufi, target), true, nil
	}
	c := entry(p, Modified, ufi, target)
	if typeOf(ufi) != typeOf(lfi) || c.Type == TypeOther {
		return c, true, nil
	}
	if c.Type == TypeSymlink {
		lt, err := w.low.Readlink(p)
		if err != nil {
			return Change{}, false, fmt.Errorf("changes: %s in the workspace: %w", p, err)
		}
		return c, lt != target, nil
	}
	if perm(ufi) != perm(lfi) || ufi.Size() != lfi.Size() {
		return c, true, nil
	}
	same, err := sameContent(w.up, w.low, p)
	if err != nil {
		return Change{}, false, err
	}
	return c, !same, nil
}

// isWhiteout reports whether the upper entry deletes its path: a 0/0
// character device, or (kernel 6.7 and newer) an empty file carrying
// the overlay.whiteout xattr.
func (w *walker) isWhiteout(p string, fi fs.FileInfo) (bool, error) {
	if fi.Mode()&fs.ModeCharDevice != 0 {
		st, ok := fi.Sys().(*syscall.Stat_t)
		return ok && st.Rdev == 0, nil
	}
	if fi.Mode().IsRegular() && fi.Size() == 0 {
		return w.hasXattr(p, whiteoutXattrs, "")
	}
	return false, nil
}

// checkXattrs refuses an entry the walk would misread: an overlay
// redirect (a renamed directory) or metacopy (data elsewhere).
func (w *walker) checkXattrs(p string) error {
	for _, x := range unsupportedAttr {
		ok, err := w.hasXattr(p, []string{x}, "")
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("changes: %s in the upper layer %s carries %s, which dsh's overlays never set (they are mounted without redirect_dir and metacopy); the upper layer was not made by dsh", p, w.upper, x)
		}
	}
	return nil
}

// hasXattr reports whether p (in the upper layer, not followed) has one
// of names, with value want unless want is "".
func (w *walker) hasXattr(p string, names []string, want string) (bool, error) {
	full := path.Join(w.upper, p)
	buf := make([]byte, 64)
	for _, n := range names {
		sz, err := unix.Lgetxattr(full, n, buf)
		switch {
		case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EPERM):
			continue
		case errors.Is(err, unix.ERANGE):
			if want == "" {
				return true, nil
			}
			continue
		case err != nil:
			return false, fmt.Errorf("changes: reading %s of %s: %w", n, p, err)
		}
		if want == "" || string(buf[:sz]) == want {
			return true, nil
		}
	}
	return false, nil
}

func deletion(p string, fi fs.FileInfo) Change {
	c := Change{Path: p, Kind: Deleted, Type: typeOf(fi)}
	if c.Type == TypeFile {
		c.Size = fi.Size()
	}
	return c
}

func entry(p string, k Kind, fi fs.FileInfo, target string) Change {
	c := Change{Path: p, Kind: k, Type: typeOf(fi), Target: target, perm: perm(fi)}
	if c.Type == TypeFile {
		c.Size = fi.Size()
	}
	if c.Type != TypeSymlink {
		c.Mode = fmt.Sprintf("%04o", octal(c.perm))
	}
	return c
}

func typeOf(fi fs.FileInfo) string {
	switch m := fi.Mode(); {
	case m.IsRegular():
		return TypeFile
	case m.IsDir():
		return TypeDir
	case m&fs.ModeSymlink != 0:
		return TypeSymlink
	}
	return TypeOther
}

// perm is the permission bits with setuid, setgid and sticky.
func perm(fi fs.FileInfo) fs.FileMode {
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// octal is m as the chmod(1) number.
func octal(m fs.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		o |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		o |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		o |= 0o1000
	}
	return o
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// readDir lists the names in dir of r, sorted.
func readDir(r *os.Root, dir string) ([]string, error) {
	f, err := r.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("changes: opening %s: %w", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("changes: listing %s: %w", dir, err)
	}
	slices.Sort(names)
	return names, nil
}

// sameContent compares the file p of two roots byte for byte.
func sameContent(a, b *os.Root, p string) (bool, error) {
	fa, err := a.Open(p)
	if err != nil {
		return false, fmt.Errorf("changes: %s: %w", p, err)
	}
	defer fa.Close()
	fb, err := b.Open(p)
	if err != nil {
		return false, fmt.Errorf("changes: %s: %w", p, err)
	}
	defer fb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea == io.EOF || ea == io.ErrUnexpectedEOF {
			return eb == io.EOF || eb == io.ErrUnexpectedEOF, nil
		}
		if ea != nil {
			return false, fmt.Errorf("changes: reading %s: %w", p, ea)
		}
		if eb != nil {
			return false, fmt.Errorf("changes: reading %s: %w", p, eb)
		}
	}
}

package execworld

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// WriteOptions tune WriteFile. The zero value writes unconditionally,
// keeps an existing file's permissions and creates new files 0644.
type WriteOptions struct {
	// Expect, if non-nil, is the Version the file must still have; a
	// zero Version means the file must not exist yet. Otherwise the write
	// fails with ErrVersionMismatch and nothing changes.
	Expect *Version
	// Perm is the permission of a new file. If zero, 0644 is used. An
	// existing file keeps its own permissions.
	Perm fs.FileMode
	// MkdirAll creates missing parent directories (0755).
	MkdirAll bool
}

// WriteFile replaces name with data atomically: the data goes to a
// temporary file in the same directory, is synced, and is renamed over
// name, so readers see the old or the new content, never a mix. A final
// symlink that stays inside the workspace is followed; the file it names
// is replaced. It returns the new Version.
func (f *FS) WriteFile(name string, data []byte, opts *WriteOptions) (Version, error) {
	if opts == nil {
		opts = &WriteOptions{}
	}
	v, err := f.writeFile(name, data, opts)
	if err != nil {
		return Version{}, &PathError{Op: "write", Path: name, Err: err}
	}
	return v, nil
}

func (f *FS) writeFile(name string, data []byte, opts *WriteOptions) (Version, error) {
	if f.readOnly != "" {
		return Version{}, fmt.Errorf("%w: %s", unix.EROFS, f.readOnly)
	}
	target, err := f.rel(name)
	if err != nil {
		return Version{}, err
	}
	if opts.MkdirAll {
		if err := f.mkdirAll(filepath.Dir(target)); err != nil {
			return Version{}, err
		}
	}
	// Follow a final symlink (beneath the root only) so that writing
	// through a link replaces the file it names, as a shell's > would.
	if fd, err := f.openat2(target, unix.O_PATH, 0); err == nil {
		real, rerr := f.realRel(fd)
		unix.Close(fd)
		if rerr != nil {
			return Version{}, rerr
		}
		target = real
	} else if errors.Is(err, ErrEscape) {
		return Version{}, err
	}

	dfd, base, err := f.openParent(target)
	if err != nil {
		return Version{}, err
	}
	defer unix.Close(dfd)

	perm := uint32(0o644)
	if opts.Perm != 0 {
		perm = uint32(opts.Perm.Perm())
	}
	var cur unix.Stat_t
	exists := false
	switch err := unix.Fstatat(dfd, base, &cur, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		exists = true
		switch typeOf(cur.Mode) {
		case TypeFile:
			perm = cur.Mode & 0o777
		case TypeSymlink:
			// Only a link that leads nowhere (or out) gets here.
			return Version{}, fmt.Errorf("%s is a symlink to a missing or outside target; remove it or write its target", base)
		default:
			return Version{}, fmt.Errorf("%w (%s)", ErrNotRegular, typeOf(cur.Mode))
		}
	case errors.Is(err, unix.ENOENT):
	default:
		return Version{}, err
	}
	if err := checkExpect(opts.Expect, exists, &cur); err != nil {
		return Version{}, err
	}

	tmp, tfd, err := createTemp(dfd, base, perm)
	if err != nil {
		return Version{}, err
	}
	committed := false
	defer func() {
		if !committed {
			unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	if err := giveTemp(dfd, tfd, exists, &cur); err != nil {
		unix.Close(tfd)
		return Version{}, err
	}
	file := os.NewFile(uintptr(tfd), tmp)
	_, werr := file.Write(data)
	if werr == nil {
		// The umask may have narrowed the mode given to openat.
		werr = file.Chmod(fs.FileMode(perm))
	}
	if werr == nil {
		werr = file.Sync()
	}
	if cerr := file.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return Version{}, werr
	}

	// Check the precondition again as close to the rename as possible:
	// a concurrent writer between the first check and here is caught.
	if opts.Expect != nil {
		exists = true
		if err := unix.Fstatat(dfd, base, &cur, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			exists = false
		} else if err != nil {
			return Version{}, err
		}
		if err := checkExpect(opts.Expect, exists, &cur); err != nil {
			return Version{}, err
		}
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		return Version{}, err
	}
	committed = true
	// Make the rename durable.
	_ = unix.Fsync(dfd)

	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Version{}, err
	}
	return versionOf(&st), nil
}

func checkExpect(want *Version, exists bool, cur *unix.Stat_t) error {
	if want == nil {
		return nil
	}
	if want.IsZero() {
		if exists {
			return fmt.Errorf("%w: it exists but was expected to be absent", ErrVersionMismatch)
		}
		return nil
	}
	if !exists {
		return fmt.Errorf("%w: it no longer exists", ErrVersionMismatch)
	}
	if got := versionOf(cur); got != *want {
		return fmt.Errorf("%w: version is %s, expected %s; read it again", ErrVersionMismatch, got, want)
	}
	return nil
}

// createTemp creates a new file beside base in the directory dfd. O_EXCL
// with O_CREAT never follows a symlink, so a planted link cannot redirect
// the write.
func createTemp(dfd int, base string, perm uint32) (string, int, error) {
	for range 10 {
		var b [6]byte
		rand.Read(b[:])
		name := "." + trimName(base) + ".dsh-" + hex.EncodeToString(b[:]) + ".tmp"
		fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", -1, err
		}
		return name, fd, nil
	}
	return "", -1, errors.New("could not create a temporary file")
}

// trimName keeps temp names under NAME_MAX.
func trimName(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

// mkdirAll creates dir and its missing parents beneath the root, one
// component at a time, each lookup confined by openat2.
func (f *FS) mkdirAll(dir string) error {
	if dir == "." || dir == "" {
		return nil
	}
	parts := strings.Split(filepath.Clean(dir), "/")
	cur := "."
	for _, p := range parts {
		if p == "" {
			continue
		}
		next := filepath.Join(cur, p)
		fd, err := f.openat2(next, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err == nil {
			unix.Close(fd)
			cur = next
			continue
		}
		if !errors.Is(err, unix.ENOENT) {
			return err
		}
		pfd, err := f.openat2(cur, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(pfd, p, 0o755)
		if err == nil {
			err = giveDir(pfd, p)
		}
		unix.Close(pfd)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		cur = next
	}
	return nil
}

// Edit replaces the one occurrence of old with new in the text file name.
// It fails with an *EditError unless old occurs exactly once, and with
// ErrVersionMismatch if the file changes between the read and the write
// (or differs from opts.Expect). maxBytes caps the read.
func (f *FS) Edit(name, old, new string, maxBytes int64, opts *WriteOptions) (Version, error) {
	if old == "" {
		return Version{}, &PathError{Op: "edit", Path: name, Err: errors.New("the old text is empty; give the exact text to replace")}
	}
	text, v, err := f.ReadText(name, maxBytes)
	if err != nil {
		return Version{}, err
	}
	if opts != nil && opts.Expect != nil && *opts.Expect != v {
		return Version{}, &PathError{Op: "edit", Path: name, Err: fmt.Errorf("%w: version is %s, expected %s; read it again", ErrVersionMismatch, v, opts.Expect)}
	}
	if n := countMatches(text, old); n != 1 {
		return Version{}, &EditError{Path: name, Matches: n}
	}
	w := WriteOptions{Expect: &v}
	return f.WriteFile(name, []byte(strings.Replace(text, old, new, 1)), &w)
}

// countMatches counts every place old starts in text, overlapping ones
// included: "aa" matches "aaa" twice, so an edit of it is ambiguous.
func countMatches(text, old string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(text[i:], old)
		if j < 0 {
			return n
		}
		n++
		i += j + 1
	}
}

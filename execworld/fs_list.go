package execworld

import (
	"fmt"
	"io"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// DefaultListLimit is ListDir's entry cap when the caller gives none.
const DefaultListLimit = 1000

// Entry is one directory entry. Symlinks are reported as symlinks, not
// followed.
type Entry struct {
	Name string
	Type FileType
	Size int64
}

// Listing is a directory's entries, sorted by name and capped.
type Listing struct {
	Entries []Entry
	// Total is the number of entries in the directory.
	Total int
	// Truncated reports whether entries were left out (Total > len(Entries)).
	Truncated bool
}

// ListDir lists the directory name, sorted by name, keeping the first
// limit entries (DefaultListLimit if limit <= 0). "." and ".." are not
// listed.
func (f *FS) ListDir(name string, limit int) (*Listing, error) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	fd, err := f.openat2(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &PathError{Op: "list", Path: name, Err: err}
	}
	dir := os.NewFile(uintptr(fd), name)
	defer dir.Close()
	// All names are read so that the kept prefix is the same every time;
	// only the kept entries are stat'ed.
	var names []string
	for {
		batch, err := dir.Readdirnames(4096)
		names = append(names, batch...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &PathError{Op: "list", Path: name, Err: err}
		}
	}
	slices.Sort(names)
	l := &Listing{Total: len(names)}
	if len(names) > limit {
		names = names[:limit]
		l.Truncated = true
	}
	l.Entries = make([]Entry, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			// Removed since it was listed: report it gone, not fail.
			continue
		}
		l.Entries = append(l.Entries, Entry{Name: n, Type: typeOf(st.Mode), Size: st.Size})
	}
	return l, nil
}

func (l *Listing) String() string {
	return fmt.Sprintf("%d of %d entries", len(l.Entries), l.Total)
}

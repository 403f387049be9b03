package execworld

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Version identifies one state of a file: any write, rename over or
// metadata change gives a different Version. A caller passes the Version
// it read back to WriteFile to detect a concurrent change.
type Version struct {
	Dev     uint64
	Ino     uint64
	Size    int64
	MtimeNs int64
	CtimeNs int64
}

// String encodes v as dev:ino:size:mtime:ctime, the form tools hand to
// agents and take back.
func (v Version) String() string {
	return fmt.Sprintf("%d:%d:%d:%d:%d", v.Dev, v.Ino, v.Size, v.MtimeNs, v.CtimeNs)
}

// IsZero reports whether v is the zero Version (no file).
func (v Version) IsZero() bool { return v == Version{} }

// ParseVersion parses the form String produces.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 5 {
		return Version{}, fmt.Errorf("execworld: version %q is not dev:ino:size:mtime:ctime; pass the version a read returned", s)
	}
	var v Version
	var err error
	var errs [5]error
	v.Dev, errs[0] = strconv.ParseUint(parts[0], 10, 64)
	v.Ino, errs[1] = strconv.ParseUint(parts[1], 10, 64)
	v.Size, errs[2] = strconv.ParseInt(parts[2], 10, 64)
	v.MtimeNs, errs[3] = strconv.ParseInt(parts[3], 10, 64)
	v.CtimeNs, errs[4] = strconv.ParseInt(parts[4], 10, 64)
	for _, e := range errs {
		if e != nil {
			err = e
		}
	}
	if err != nil {
		return Version{}, fmt.Errorf("execworld: version %q: %w", s, err)
	}
	return v, nil
}

func versionOf(st *unix.Stat_t) Version {
	return Version{
		Dev:     st.Dev,
		Ino:     st.Ino,
		Size:    st.Size,
		MtimeNs: st.Mtim.Nano(),
		CtimeNs: st.Ctim.Nano(),
	}
}

// FileType is the kind of a directory entry.
type FileType int

const (
	TypeOther FileType = iota // FIFO, socket, device
	TypeFile
	TypeDir
	TypeSymlink
)

func (t FileType) String() string {
	switch t {
	case TypeFile:
		return "file"
	case TypeDir:
		return "dir"
	case TypeSymlink:
		return "symlink"
	}
	return "other"
}

func typeOf(mode uint32) FileType {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return TypeFile
	case unix.S_IFDIR:
		return TypeDir
	case unix.S_IFLNK:
		return TypeSymlink
	}
	return TypeOther
}

// Info describes a file in the workspace.
type Info struct {
	Path    string // as the caller gave it
	Type    FileType
	Size    int64
	Mode    fs.FileMode // permission bits
	Version Version
}

// Stat describes name, following symlinks that stay inside the workspace.
func (f *FS) Stat(name string) (*Info, error) {
	fd, err := f.openat2(name, unix.O_PATH, 0)
	if err != nil {
		return nil, &PathError{Op: "stat", Path: name, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &PathError{Op: "stat", Path: name, Err: err}
	}
	return infoOf(name, &st), nil
}

// Lstat describes name without following a final symlink.
func (f *FS) Lstat(name string) (*Info, error) {
	dfd, base, err := f.openParent(name)
	if err != nil {
		if r, rerr := f.rel(name); rerr == nil && (r == "." || r == "/") {
			return f.Stat(name)
		}
		return nil, &PathError{Op: "stat", Path: name, Err: err}
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &PathError{Op: "stat", Path: name, Err: err}
	}
	return infoOf(name, &st), nil
}

func infoOf(name string, st *unix.Stat_t) *Info {
	return &Info{
		Path:    name,
		Type:    typeOf(st.Mode),
		Size:    st.Size,
		Mode:    fs.FileMode(st.Mode & 0o777),
		Version: versionOf(st),
	}
}

package skills

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dsh-dev/dsh/execworld"
)

// Entry is one directory entry of a skill root.
type Entry struct {
	Name string
	Dir  bool
	File bool
}

// FS reads skill roots. Project roots go through the world's FS (paths
// relative to the workspace), the others through HostFS (absolute paths).
// A missing directory or file is an error matching fs.ErrNotExist.
type FS interface {
	ReadDir(dir string) ([]Entry, error)
	// ReadFile reads name whole; a file over max bytes is an error, never
	// a truncated read.
	ReadFile(name string, max int64) ([]byte, error)
}

// MaxFileBytes caps a skill file; MaxRootEntries caps one root's listing.
const (
	MaxFileBytes   = 256 << 10
	MaxRootEntries = 1000
)

// WorldFS reads project roots through the world's workspace FS: openat2
// with RESOLVE_BENEATH, so no symlink in the workspace leads discovery
// out of it.
func WorldFS(f *execworld.FS) FS { return worldFS{f} }

type worldFS struct{ f *execworld.FS }

func (w worldFS) ReadDir(dir string) ([]Entry, error) {
	l, err := w.f.ListDir(dir, MaxRootEntries)
	if err != nil {
		return nil, err
	}
	if l.Truncated {
		return nil, fmt.Errorf("%s has %d entries, more than the %d a skill root may have", dir, l.Total, MaxRootEntries)
	}
	es := make([]Entry, 0, len(l.Entries))
	for _, e := range l.Entries {
		es = append(es, Entry{Name: e.Name, Dir: e.Type == execworld.TypeDir, File: e.Type == execworld.TypeFile})
	}
	return es, nil
}

func (w worldFS) ReadFile(name string, max int64) ([]byte, error) {
	f, err := w.f.ReadFile(name, max)
	if err != nil {
		return nil, err
	}
	return f.Data, nil
}

// HostFS reads roots of the host (user, custom and bundled roots).
// Symlinks are followed: these roots belong to the user.
func HostFS() FS { return hostFS{} }

type hostFS struct{}

func (hostFS) ReadDir(dir string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(des) > MaxRootEntries {
		return nil, fmt.Errorf("%s has %d entries, more than the %d a skill root may have", dir, len(des), MaxRootEntries)
	}
	es := make([]Entry, 0, len(des))
	for _, d := range des {
		st, err := os.Stat(filepath.Join(dir, d.Name()))
		if err != nil {
			continue // a dangling symlink is no skill
		}
		es = append(es, Entry{Name: d.Name(), Dir: st.IsDir(), File: st.Mode().IsRegular()})
	}
	return es, nil
}

func (hostFS) ReadFile(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, max)
	}
	return data, nil
}

package changes

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// Skip is a change Apply did not make, and why.
type Skip struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Result is what Apply did.
type Result struct {
	// Applied are the paths written, created or removed.
	Applied []string `json:"applied"`
	// Skipped are the changes left out: protected paths, special files,
	// paths below something that is no directory.
	Skipped []Skip `json:"skipped"`
	// Stripped are the paths whose setuid or setgid bit was dropped.
	Stripped []string `json:"stripped,omitempty"`
}

// Apply copies the change set into the real workspace: it writes what
// was added and modified and removes what was deleted, except
//   - a protected path (one of protected, relative to the workspace,
//     such as .git/hooks or dsh.yaml), anything below one, and the
//     removal or replacement of a directory that holds one;
//   - special files (fifos, sockets, devices);
//   - setuid and setgid bits, which are dropped, and extended attributes
//     (file capabilities among them), which are never copied.
//
// Every path is resolved in an os.Root of the workspace, and every
// parent of a path must be a directory, not a symlink: nothing the
// world wrote leads a write outside the workspace or around a
// protected path. Files are written beside their path and renamed over
// it. When dsh runs as root, a replaced entry keeps its owner and a new
// one gets its parent directory's (the world wrote as the workspace's
// owner, never as root).
func (s *Set) Apply(workspace string, protected []string) (*Result, error) {
	if s.upper == "" {
		return nil, errors.New("changes: Apply needs a set made by Compute")
	}
	ws, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, fmt.Errorf("changes: opening the workspace %s: %w", workspace, err)
	}
	defer ws.Close()
	up, err := os.OpenRoot(s.upper)
	if err != nil {
		return nil, fmt.Errorf("changes: opening the upper layer: %w", err)
	}
	defer up.Close()
	a := &applier{ws: ws, up: up, root: os.Geteuid() == 0, res: &Result{Applied: []string{}, Skipped: []Skip{}}}
	for _, c := range s.Changes {
		if why := refused(c, protected); why != "" {
			a.skip(c.Path, why)
			continue
		}
		if why, err := a.parentsAreDirs(c.Path); err != nil {
			return a.res, err
		} else if why != "" {
			a.skip(c.Path, why)
			continue
		}
		if err := a.apply(c); err != nil {
			return a.res, fmt.Errorf("changes: applying %s (%s): %w", c.Path, c.Kind, err)
		}
		a.res.Applied = append(a.res.Applied, c.Path)
	}
	return a.res, nil
}

// refused says why c must not be applied, "" when it may.
func refused(c Change, protected []string) string {
	for _, p := range protected {
		p = strings.Trim(path.Clean("/"+p), "/")
		if p == "" {
			continue
		}
		if c.Path == p || strings.HasPrefix(c.Path, p+"/") {
			return "protected path " + p
		}
		// Removing or replacing a directory would remove p with it.
		if strings.HasPrefix(p, c.Path+"/") && (c.Kind == Deleted || c.Type != TypeDir) {
			return "holds protected path " + p
		}
	}
	// A .git below the top is a repository the world made: git runs its
	// config and hooks (core.fsmonitor) at the user's next command in
	// the enclosing repository, once the index points at it.
	if c.Kind != Deleted && nestedGit(c.Path) {
		return "in a nested git repository (its config and hooks would run on the host)"
	}
	if c.Kind != Deleted && c.Type == TypeOther {
		return "not a regular file, directory or symlink"
	}
	return ""
}

type applier struct {
	ws, up *os.Root
	root   bool
	res    *Result
}

func (a *applier) skip(p, why string) { a.res.Skipped = append(a.res.Skipped, Skip{Path: p, Why: why}) }

// parentsAreDirs says why p's parents are not all directories of the
// workspace ("" when they are).
func (a *applier) parentsAreDirs(p string) (string, error) {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		parent := strings.Join(parts[:i], "/")
		fi, err := a.ws.Lstat(parent)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return parent + " does not exist in the workspace", nil
			}
			return "", fmt.Errorf("changes: %s in the workspace: %w", parent, err)
		}
		if !fi.IsDir() {
			return parent + " is not a directory in the workspace", nil
		}
	}
	return "", nil
}

// safePerm drops setuid and setgid, and says whether it did.
func (a *applier) safePerm(c Change) fs.FileMode {
	m := c.perm & (fs.ModePerm | fs.ModeSticky)
	if c.perm&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		a.res.Stripped = append(a.res.Stripped, c.Path)
	}
	return m
}

func (a *applier) apply(c Change) error {
	old, err := a.ws.Lstat(c.Path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if c.Kind == Deleted {
		if old == nil {
			return nil
		}
		return a.ws.RemoveAll(c.Path)
	}
	uid, gid, chown := a.owner(c.Path, old)
	switch c.Type {
	case TypeDir:
		m := a.safePerm(c)
		if old != nil && !old.IsDir() {
			if err := a.ws.Remove(c.Path); err != nil {
				return err
			}
			old = nil
		}
		if old == nil {
			if err := a.ws.Mkdir(c.Path, 0o700); err != nil {
				return err
			}
			if chown {
				if err := a.ws.Lchown(c.Path, uid, gid); err != nil {
					return err
				}
			}
		}
		return a.ws.Chmod(c.Path, m)
	case TypeSymlink:
		tmp := tmpName(c.Path)
		if err := a.ws.Symlink(c.Target, tmp); err != nil {
			return err
		}
		if chown {
			if err := a.ws.Lchown(tmp, uid, gid); err != nil {
				a.ws.Remove(tmp)
				return err
			}
		}
		return a.replace(tmp, c.Path, old)
	case TypeFile:
		tmp := tmpName(c.Path)
		if err := a.copyFile(c, tmp); err != nil {
			a.ws.Remove(tmp)
			return err
		}
		if chown {
			if err := a.ws.Lchown(tmp, uid, gid); err != nil {
				a.ws.Remove(tmp)
				return err
			}
		}
		// After chown, which clears setuid and setgid anyway.
		if err := a.ws.Chmod(tmp, a.safePerm(c)); err != nil {
			a.ws.Remove(tmp)
			return err
		}
		return a.replace(tmp, c.Path, old)
	}
	return fmt.Errorf("type %s is not applied", c.Type)
}

// replace renames tmp over p, removing a directory at p first.
func (a *applier) replace(tmp, p string, old fs.FileInfo) error {
	if old != nil && old.IsDir() {
		if err := a.ws.RemoveAll(p); err != nil {
			a.ws.Remove(tmp)
			return err
		}
	}
	if err := a.ws.Rename(tmp, p); err != nil {
		a.ws.Remove(tmp)
		return err
	}
	return nil
}

func (a *applier) copyFile(c Change, tmp string) error {
	src, err := a.up.Open(c.Path)
	if err != nil {
		return err
	}
	defer src.Close()
	if fi, err := src.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s in the upper layer is no longer a regular file", c.Path)
	}
	dst, err := a.ws.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// owner is who a root dsh makes own an entry it writes at p: the owner
// of what it replaces, else of its parent directory.
func (a *applier) owner(p string, old fs.FileInfo) (uid, gid int, chown bool) {
	if !a.root {
		return 0, 0, false
	}
	fi := old
	if fi == nil {
		var err error
		if fi, err = a.ws.Lstat(path.Dir(p)); err != nil {
			return 0, 0, false
		}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// tmpName is a fresh name beside p.
func tmpName(p string) string {
	var b [6]byte
	rand.Read(b[:])
	return path.Join(path.Dir(p), ".dsh-apply-"+hex.EncodeToString(b[:]))
}

// nestedGit reports whether p has a ".git" component below the top.
func nestedGit(p string) bool {
	parts := strings.Split(p, "/")
	return slices.Contains(parts[min(1, len(parts)):], ".git")
}

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultPath is searched when a process's environment has no PATH, as a
// shell would; it is also DefaultSpec's PATH.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// PathError is why LookPath found no program to run. It matches (errors.Is)
// its Kind: ErrNotFound or ErrNotExecutable.
type PathError struct {
	Kind error
	Msg  string
}

func (e *PathError) Error() string { return e.Msg }
func (e *PathError) Unwrap() error { return e.Kind }

// LookPath resolves file the way a shell does, but with the process's own
// PATH (pathEnv) and relative to its working directory dir: a name with a
// slash is used as is; otherwise the first executable regular file in
// PATH wins, an empty PATH element being the working directory. A match
// that exists but cannot be executed is ErrNotExecutable unless a later
// directory has an executable one. Every driver resolves argv[0] with it,
// in the world's view of the file system.
func LookPath(file, pathEnv, dir string) (string, error) {
	at := func(p string) string {
		if filepath.IsAbs(p) || dir == "" {
			return p
		}
		return filepath.Join(dir, p)
	}
	if strings.Contains(file, "/") {
		if err := checkExecutable(at(file)); err != nil {
			return "", &PathError{Kind: err, Msg: fmt.Sprintf("%s: %s", file, describe(err))}
		}
		return file, nil
	}
	var notExec string
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "." // POSIX: an empty PATH element is the working directory
		}
		p := filepath.Join(d, file)
		switch err := checkExecutable(at(p)); err {
		case nil:
			if !filepath.IsAbs(p) && !strings.Contains(p, "/") {
				p = "./" + p
			}
			return p, nil
		case ErrNotExecutable:
			if notExec == "" {
				notExec = p
			}
		}
	}
	if notExec != "" {
		return "", &PathError{Kind: ErrNotExecutable, Msg: fmt.Sprintf("%s: %s", notExec, describe(ErrNotExecutable))}
	}
	return "", &PathError{Kind: ErrNotFound, Msg: fmt.Sprintf("not found in PATH %q", pathEnv)}
}

// checkExecutable reports nil, ErrNotFound or ErrNotExecutable for p.
func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return ErrNotFound
		}
		return ErrNotExecutable // e.g. EACCES on a directory on the way
	}
	if !fi.Mode().IsRegular() {
		return ErrNotExecutable
	}
	// Effective IDs, as execve checks them; root passes only if some
	// execute bit is set.
	if err := unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS); err != nil {
		return ErrNotExecutable
	}
	return nil
}

func describe(kind error) string {
	if kind == ErrNotFound {
		return "no such file"
	}
	return "permission denied or not an executable regular file"
}

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// protect tries each OP:PATH[:PATH2] in the working directory and prints
// "ok OP PATH" or "refused OP PATH ERRNO" (ERRNO as EROFS, EBUSY, …):
// write creates PATH's missing parents and writes PATH; rename renames
// PATH to PATH2, then writes a file at PATH (a replacement); remove
// removes PATH, then writes a file there; chmod makes PATH 0777.
func protect(ops []string) {
	for _, op := range ops {
		parts := strings.Split(op, ":")
		name, path := parts[0], parts[1]
		var err error
		switch name {
		case "write":
			err = writeFile(path)
		case "rename":
			if err = os.Rename(path, parts[2]); err == nil {
				err = writeFile(filepath.Join(path, "config"))
			}
		case "remove":
			if err = os.Remove(path); err == nil {
				err = writeFile(path)
			}
		case "chmod":
			err = os.Chmod(path, 0o777)
		default:
			err = fmt.Errorf("unknown operation %q", name)
		}
		if err != nil {
			fmt.Printf("refused %s %s %s\n", name, path, errName(err))
		} else {
			fmt.Printf("ok %s %s\n", name, path)
		}
	}
}

func writeFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte("[core]\n\tfsmonitor = /bin/echo planted-by-a-world\n"), 0o755)
}

// gitwrites does what git commit writes in a repository's .git, under
// names git does not read: a loose object in a new fan-out directory, a
// file in .git itself, a ref and a HEAD-like file (each through a lock
// file renamed into place, as git writes the index, refs and HEAD), and a
// reflog. It prints "ok git WHAT" or "refused
// git WHAT ERR".
func gitwrites() {
	steps := []struct {
		what string
		do   func() error
	}{
		{"object", func() error { return writeFile(".git/objects/ab/cdef0123456789abcdef0123456789abcdef01") }},
		{"index", func() error { return lockRename(".git/dsh-probe-index") }},
		{"ref", func() error { return lockRename(".git/refs/dsh-probe/ref") }},
		{"HEAD", func() error { return lockRename(".git/DSH_PROBE_HEAD") }},
		{"reflog", func() error { return writeFile(".git/logs/dsh-probe") }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			fmt.Printf("refused git %s %s\n", s.what, errName(err))
		} else {
			fmt.Printf("ok git %s\n", s.what)
		}
	}
}

func lockRename(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path+".lock", []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".lock", path)
}

// errName is the errno inside err by its symbolic name ("EROFS"), or
// err on one line.
func errName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		return errnoName(e)
	}
	return oneLine(err)
}

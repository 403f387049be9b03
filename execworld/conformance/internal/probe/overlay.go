package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// wsEdit makes the suite's edits in the workspace dir: an added file, a
// modified one, a deleted one, and a directory renamed (as mv does it:
// rename, else a copy and a delete). One line per edit: "OP ok" or
// "OP ERRNO".
func wsEdit(dir string) {
	at := func(p string) string { return filepath.Join(dir, p) }
	report := func(op string, err error) {
		if err != nil {
			fmt.Printf("%s %s\n", op, errName(err))
			return
		}
		fmt.Printf("%s ok\n", op)
	}
	report("add", os.WriteFile(at("add.txt"), []byte("added\n"), 0o644))
	report("modify", os.WriteFile(at("edit.txt"), []byte("edited by the world\n"), 0o644))
	report("delete", os.Remove(at("gone.txt")))
	err := os.Rename(at("olddir"), at("newdir"))
	if errors.Is(err, unix.EXDEV) {
		if err = copyTree(at("olddir"), at("newdir")); err == nil {
			err = os.RemoveAll(at("olddir"))
		}
	}
	report("rename", err)
}

func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.Mkdir(to, fi.Mode().Perm())
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// wsWrite tries every kind of write in the workspace dir and prints
// "OP ok" or "OP ERRNO" for each.
func wsWrite(dir string) {
	at := func(p string) string { return filepath.Join(dir, p) }
	try := func(op string, err error) {
		if err != nil {
			fmt.Printf("%s %s\n", op, errName(err))
			return
		}
		fmt.Printf("%s ok\n", op)
	}
	try("create", os.WriteFile(at("ro-new.txt"), []byte("x"), 0o644))
	fd, err := unix.Open(at("edit.txt"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	try("open-write", err)
	try("mkdir", unix.Mkdir(at("ro-dir"), 0o755))
	try("unlink", unix.Unlink(at("gone.txt")))
	try("rename", unix.Rename(at("olddir"), at("ro-renamed")))
	try("chmod", unix.Chmod(at("edit.txt"), 0o600))
	try("symlink", unix.Symlink("edit.txt", at("ro-link")))
}

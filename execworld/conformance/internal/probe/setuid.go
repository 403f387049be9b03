package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setuid tries, in dir, every way a world could leave a file with a
// set-user-ID or set-group-ID bit or a file capability, and prints "ok
// NAME" when the call succeeded or "refused NAME ERRNO". Copies of this
// probe are made first (mode 0755) where the attempt changes an
// existing file, so the host can run what is left. The suite's
// setuidPlants names the files.
func setuid(dir string) {
	exe, err := os.Executable()
	if err != nil {
		fmt.Printf("failed finding this probe: %v\n", oneLine(err))
		return
	}
	self, err := os.ReadFile(exe)
	if err != nil {
		fmt.Printf("failed reading /proc/self/exe: %v\n", oneLine(err))
		return
	}
	at := func(n string) string { return filepath.Join(dir, n) }
	cp := func(n string) error { return os.WriteFile(at(n), self, 0o755) }
	chmod := func(n string, mode uint32) func() error {
		return func() error {
			if err := cp(n); err != nil {
				return err
			}
			return unix.Chmod(at(n), mode)
		}
	}
	attempts := []struct {
		name string
		do   func() error
	}{
		{"chmod-4755", chmod("chmod-4755", 0o4755)},
		{"chmod-2755", chmod("chmod-2755", 0o2755)},
		{"fchmod-6755", func() error {
			if err := cp("fchmod-6755"); err != nil {
				return err
			}
			f, err := os.Open(at("fchmod-6755"))
			if err != nil {
				return err
			}
			defer f.Close()
			return unix.Fchmod(int(f.Fd()), 0o6755)
		}},
		{"fchmodat2-4755", func() error {
			if err := cp("fchmodat2-4755"); err != nil {
				return err
			}
			p, err := unix.BytePtrFromString(at("fchmodat2-4755"))
			if err != nil {
				return err
			}
			_, _, e := unix.Syscall6(unix.SYS_FCHMODAT2, atFDCWD, uintptr(unsafe.Pointer(p)), 0o4755, 0, 0, 0)
			if e != 0 {
				return e
			}
			return nil
		}},
		{"open-4755", func() error {
			fd, err := unix.Open(at("open-4755"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755)
			if err != nil {
				return err
			}
			return unix.Close(fd)
		}},
		{"tmpfile-4755", func() error {
			fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, at("tmpfile-4755"), unix.AT_SYMLINK_FOLLOW)
		}},
		{"mknod-4755", func() error { return unix.Mknod(at("mknod-4755"), unix.S_IFREG|0o4755, 0) }},
		{"mknod-2755", func() error { return unix.Mknod(at("mknod-2755"), unix.S_IFREG|0o2755, 0) }},
		{"mkdir-2755", func() error { return unix.Mkdir(at("mkdir-2755"), 0o2755) }},
		{"setcap", func() error {
			if err := cp("setcap"); err != nil {
				return err
			}
			// vfs_cap_data revision 2: CAP_SETUID permitted and effective.
			data := make([]byte, 20)
			le32(data[0:], 0x02000000|1) // VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE
			le32(data[4:], 1<<unix.CAP_SETUID)
			return unix.Setxattr(at("setcap"), "security.capability", data, 0)
		}},
		{"install-4755", func() error { return run("install", "-m", "4755", exe, at("install-4755")) }},
		{"shell-chmod-4755", func() error {
			if err := cp("shell-chmod-4755"); err != nil {
				return err
			}
			return run("chmod", "4755", at("shell-chmod-4755"))
		}},
	}
	for _, a := range attempts {
		if err := a.do(); err != nil {
			fmt.Printf("refused %s %s\n", a.name, errName(err))
		} else {
			fmt.Printf("ok %s\n", a.name)
		}
	}
}

func le32(b []byte, v uint32) { b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24) }

// run runs a tool; a failure carries its output.
func run(argv ...string) error {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", argv[0], err, out)
	}
	return nil
}

// whoami prints the effective ids it runs with: "euid N egid N".
func whoami() {
	fmt.Printf("euid %d egid %d\n", os.Geteuid(), os.Getegid())
}

// atFDCWD is AT_FDCWD as a raw system call argument.
var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }()

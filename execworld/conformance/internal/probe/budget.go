package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// fill writes zeros until a write fails or max bytes are written, and
// prints one line per target: "fill PATH BYTES ERRNO" (ERRNO "none" when
// max was reached first). SIGXFSZ is ignored, so a file-size limit shows
// as EFBIG instead of killing the probe.
//
// A target "one:PATH" is a single file; "many:DIR" is files of 1 MiB in
// DIR until one fails (what a tmpfs holds in all); "gone:PATH" is a single
// file unlinked at once. Every file stays open until the last target is
// done, so the targets fill together; "sysv:NAME" is System V shared
// memory segments of 1 MiB until one fails (NAME only names the line); then the probe exits and unlinked
// files are freed.
func fill(max int64, targets []string) {
	signal.Ignore(syscall.SIGXFSZ)
	buf := make([]byte, 1<<20)
	var open []*os.File
	for _, t := range targets {
		kind, path, ok := cut(t)
		if !ok {
			fmt.Printf("fill %s 0 bad-target\n", t)
			continue
		}
		var total int64
		var werr error
		write := func(f *os.File, n int64) int64 {
			var done int64
			for done < n {
				k, err := f.Write(buf[:min(int64(len(buf)), n-done)])
				done += int64(k)
				if err != nil {
					werr = err
					break
				}
			}
			return done
		}
		switch kind {
		case "one", "gone":
			f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
			if err != nil {
				fmt.Printf("fill %s 0 open-%s\n", path, fillErr(err))
				continue
			}
			open = append(open, f)
			if kind == "gone" {
				os.Remove(path)
			}
			total = write(f, max)
		case "many":
			for i := 0; total < max && werr == nil; i++ {
				f, err := os.OpenFile(filepath.Join(path, "fill-"+strconv.Itoa(i)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
				if err != nil {
					werr = err
					break
				}
				open = append(open, f)
				total += write(f, min(int64(len(buf)), max-total))
			}
		case "sysv":
			// System V shared memory: segments of 1 MiB, attached and
			// touched, never removed (IPC_RMID), so they outlive the
			// probe unless the world's IPC namespace forces their
			// removal (kernel.shm_rmid_forced).
			for total < max && werr == nil {
				id, err := unix.SysvShmGet(unix.IPC_PRIVATE, len(buf), unix.IPC_CREAT|0o600)
				if err != nil {
					werr = err
					break
				}
				b, err := unix.SysvShmAttach(id, 0, 0)
				if err != nil {
					werr = err
					break
				}
				for i := 0; i < len(b); i += 4096 {
					b[i] = 1
				}
				total += int64(len(b))
			}
		default:
			fmt.Printf("fill %s 0 bad-target\n", t)
			continue
		}
		name := "none"
		if werr != nil {
			name = fillErr(werr)
		}
		fmt.Printf("fill %s %d %s\n", path, total, name)
	}
	for _, f := range open {
		f.Close()
	}
}

func cut(t string) (kind, path string, ok bool) {
	for i := range len(t) {
		if t[i] == ':' {
			return t[:i], t[i+1:], true
		}
	}
	return "", "", false
}

// fillErr names the errno under err (EFBIG, ENOSPC, …).
func fillErr(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		return errnoName(e)
	}
	return strconv.Quote(err.Error())
}

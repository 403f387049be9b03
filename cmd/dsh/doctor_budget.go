package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/sandbox"
)

// writeBudget reports which bounds on what a world writes hold here, for
// a world of this configuration in the current directory: the file size
// limit, the tmpfs sizes, the workspace's overlay and its project quota.
func writeBudget(cfg *config.Config) []check {
	ws, _ := os.Getwd()
	spec, err := worldSpec(cfg.Sandbox, worldOverrides{Workspace: ws})
	if err != nil {
		spec = sandbox.DefaultSpec(ws)
	}
	b := sandbox.Bounds(spec, 0)
	var out []check
	if spec.WriteLimit > 0 {
		out = append(out, check{Name: "file size", OK: true, Detail: fmt.Sprintf("no file a world writes grows past %s (RLIMIT_FSIZE, sandbox.limits.write): a write past it fails with EFBIG, on every driver and without cgroups", bytesText(spec.WriteLimit))})
	} else {
		out = append(out, check{Name: "file size", OK: false, Detail: "unlimited (sandbox.limits.write: unlimited): a world's files grow until the file system is full"})
	}
	var sizes []string
	for _, m := range append(b.Mounts, b.Shm) {
		if m.Type != "tmpfs" {
			continue
		}
		size := "unsized (half the host's memory)"
		for _, o := range m.Options {
			if v, ok := strings.CutPrefix(o, "size="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				size = bytesText(n)
			}
		}
		sizes = append(sizes, m.Destination+" "+size)
	}
	sizes = append(sizes, "System V shared memory "+bytesText(b.SysVShmBytes)+" (removed with its last process; refused in an unprivileged native world)")
	tmpfs := check{Name: "tmpfs", OK: b.TmpfsBytes > 0, Detail: strings.Join(sizes, ", ")}
	switch {
	case b.TmpfsBytes == 0:
		tmpfs.Detail += ": a tmpfs without a size has no bound"
	case b.Budget > 0:
		tmpfs.Detail += fmt.Sprintf(": %s together, within %s (%s)", bytesText(b.TmpfsBytes+b.SysVShmBytes), bytesText(b.Budget), b.By)
		if b.By == "the memory limit less its reserve" {
			tmpfs.Detail += ", so filling them fails with ENOSPC and never OOM-kills the world's init"
		}
	default:
		tmpfs.Detail += fmt.Sprintf(": %s together", bytesText(b.TmpfsBytes+b.SysVShmBytes))
	}
	out = append(out, tmpfs)
	out = append(out, check{Name: "overlay upper", OK: false, Detail: "the workspace is mounted read-write: a world's writes to it go to the host's file system, bounded per file only"})
	q := sandbox.ProbeProjectQuota(spec.Workspace)
	quota := check{Name: "workspace project quota", OK: false, Detail: "no: " + q.Why + "; the workspace's total is bounded by its file system's free space only"}
	if q.On {
		quota.Detail = "available (" + q.Why + "), but dsh sets no project quota yet: the workspace's total is bounded by its file system's free space only"
	}
	return append(out, quota)
}

// bytesText prints n in the largest binary unit that keeps it whole or
// one decimal (512 MiB, 4 GiB, 31.2 MiB).
func bytesText(n int64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB"}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f, u = f/1024, u+1
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d %s", int64(f), units[u])
	}
	return fmt.Sprintf("%.1f %s", f, units[u])
}

// printChecks prints a section of checks under title.
func printChecks(w io.Writer, title string, checks []check) {
	fmt.Fprintln(w, "\n"+title)
	for _, c := range checks {
		mark := "ok"
		if !c.OK {
			mark = "--"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, c.Name, c.Detail)
	}
}

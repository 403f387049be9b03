package main

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// meta tries to change the metadata of each path to the value it already
// has (so an unconfined run changes nothing): mode, owner and times. It
// prints "allowed OP PATH" when the kernel let it, "refused OP PATH ERR"
// otherwise, and finally whether a write to /dev/null still works.
func meta(paths []string) {
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			fmt.Printf("missing %s %v\n", p, oneLine(err))
			continue
		}
		report := func(op string, err error) {
			if err != nil {
				fmt.Printf("refused %s %s %v\n", op, p, oneLine(err))
			} else {
				fmt.Printf("allowed %s %s\n", op, p)
			}
		}
		report("chmod", unix.Chmod(p, st.Mode&0o7777))
		report("chown", unix.Chown(p, int(st.Uid), int(st.Gid)))
		report("utime", unix.UtimesNano(p, []unix.Timespec{st.Atim, st.Mtim}))
	}
	f, err := os.OpenFile("/dev/null", os.O_WRONLY|os.O_TRUNC|syscall.O_CLOEXEC, 0)
	if err == nil {
		_, err = f.Write([]byte("swallowed\n"))
		f.Close()
	}
	if err != nil {
		fmt.Printf("devnull-write-failed %v\n", oneLine(err))
	} else {
		fmt.Println("devnull-write-ok")
	}
	fmt.Println("done")
}

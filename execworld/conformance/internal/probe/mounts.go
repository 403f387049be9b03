package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// mountFlags prints the per-mount options of the mount at dest as
// /proc/self/mountinfo shows them ("options ro,nosuid,…", or "missing"),
// then tries to execute file (a copy of this probe, run as "status"):
// "exec ok" or "exec refused ERR", after "file missing ERR" when it is
// not there to try.
func mountFlags(dest, file string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		fmt.Printf("failed %v\n", oneLine(err))
		return
	}
	opts := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS …; the last mount at
		// a point is the one in view.
		if fl := strings.Fields(sc.Text()); len(fl) > 5 && fl[4] == dest {
			opts = fl[5]
		}
	}
	f.Close()
	if opts == "" {
		fmt.Printf("missing %s\n", dest)
	} else {
		fmt.Printf("options %s\n", opts)
	}
	if _, err := os.Stat(file); err != nil {
		fmt.Printf("file missing %v\n", oneLine(err))
	}
	if err := exec.Command(file, "status").Run(); err != nil {
		fmt.Printf("exec refused %v\n", oneLine(err))
	} else {
		fmt.Println("exec ok")
	}
}

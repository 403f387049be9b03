// Command dsh-init is the native sandbox's init on its own: the part of
// dsh a world's PID 1 runs, without the CLI, its configuration and
// clients. `make build` embeds it into dsh (build tag embedinit), which
// then executes it from a sealed memfd instead of re-executing its own,
// much larger binary: a world's start then costs one start of the full
// binary (the CLI) and one of this small one. Run on its own it does
// nothing but report that it is not meant to be.
package main

import (
	"fmt"
	"os"

	"github.com/dsh-dev/dsh/sandbox/native/nsinit"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == nsinit.Arg {
		os.Exit(nsinit.Main())
	}
	fmt.Fprintln(os.Stderr, "dsh-init: the native sandbox's init, started by dsh only; run dsh instead")
	os.Exit(2)
}

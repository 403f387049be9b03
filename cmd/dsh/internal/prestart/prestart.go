// Package prestart begins the init of a dsh run line's world while the
// CLI is still initialising its packages (initspawn.Begin): the init's
// clone, execve and runtime start then run beside the CLI's own start,
// not after it. It depends on nothing but initspawn, which imports only
// the standard library's earliest packages, so Go initialises it among
// the first packages of dsh (main imports it for that alone); the native
// driver takes the init once it is initialised (native.Prestart).
package prestart

import (
	"os"
	"strings"

	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
)

func init() {
	if RunLine(os.Args[1:]) {
		initspawn.Begin()
	}
}

// RunLine reports whether args (dsh's, after the program name) are dsh
// run's, read before the command tree exists: the first argument that
// is not --config and its value is "run", so cobra dispatches the line
// to run. Whatever ends such a line before a world takes the prestarted
// init, main drops it (native.DropPrestart).
func RunLine(args []string) bool {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--config":
			i++
		case strings.HasPrefix(a, "--config="):
		default:
			return a == "run"
		}
	}
	return false
}

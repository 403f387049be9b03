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
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/sandbox/native/initspawn"
)

func init() {
	if args := os.Args[1:]; RunLine(args) {
		initspawn.Begin(Limited(args, os.Getenv))
	}
}

// RunLine reports whether args (dsh's, after the program name) are dsh
// run's, read before the command tree exists: the first argument that
// is not --config and its value is "run", so cobra dispatches the line
// to run. Whatever ends such a line before a world takes the prestarted
// init, main drops it (native.DropPrestart).
func RunLine(args []string) bool {
	_, ok := runFlags(args)
	return ok
}

// runFlags returns what follows "run" in a run line.
func runFlags(args []string) ([]string, bool) {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--config":
			i++
		case strings.HasPrefix(a, "--config="):
		default:
			return args[i+1:], a == "run"
		}
	}
	return nil, false
}

// Limited guesses whether a run line's world will have limits, which
// decides whether its init is prestarted in a cgroup: not when the line
// turns them off (--no-limits) or, without that flag, the environment
// does (DSH_SANDBOX_LIMITS_OFF, read by getenv). sandbox.limits.off in
// a configuration file is not read this early. A wrong guess costs only
// time: the driver kills an init prestarted for the other kind of world
// and spawns the world's own.
func Limited(args []string, getenv func(string) string) bool {
	flags, _ := runFlags(args)
	// run's flags end at "--" or at the command, its first argument
	// that is neither a flag nor the value of the flag before it.
	valueNext := false
	for _, a := range flags {
		switch {
		case a == "--":
			return limitedByEnv(getenv)
		case a == "--no-limits":
			return false
		case strings.HasPrefix(a, "--no-limits="):
			off, err := strconv.ParseBool(strings.TrimPrefix(a, "--no-limits="))
			return err != nil || !off
		case strings.HasPrefix(a, "-"):
			valueNext = !strings.Contains(a, "=")
		case valueNext:
			valueNext = false
		default:
			return limitedByEnv(getenv)
		}
	}
	return limitedByEnv(getenv)
}

func limitedByEnv(getenv func(string) string) bool {
	off, err := strconv.ParseBool(getenv("DSH_SANDBOX_LIMITS_OFF"))
	return err != nil || !off
}

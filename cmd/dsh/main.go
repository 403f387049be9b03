// Command dsh is a confined execution runtime for AI agents' tools: a CLI,
// an MCP server (dsh serve), an egress proxy (dsh proxy) and the init of
// every sandbox, in one static binary.
package main

import (
	"fmt"
	"os"

	"github.com/dsh-dev/dsh/cmd/dsh/internal/prestart"
	"github.com/dsh-dev/dsh/sandbox/native"
	"github.com/dsh-dev/dsh/sandbox/pid1"
)

func main() {
	// The sandbox init is the same binary; it must not build the CLI
	// (flags, config) before serving.
	if len(os.Args) > 1 && os.Args[1] == pid1.Arg {
		os.Exit(pid1.Main())
	}
	if len(os.Args) > 1 && os.Args[1] == native.InitArg {
		os.Exit(native.InitMain())
	}
	os.Exit(run(os.Args[1:]))
}

// run executes the command line and returns the process exit status.
func run(args []string) int {
	runLine := prestart.RunLine(args)
	if runLine {
		// The init of dsh run's world spawned during the package
		// initialisation (package prestart), which the native driver
		// takes now; whatever ends the command before a world takes it
		// (another driver, a bad flag or configuration), it is killed
		// and its cgroup removed.
		native.Prestart(prestart.Limited(args, os.Getenv))
		defer native.DropPrestart()
	}
	root := newRoot(runLine)
	cliTrace.mark("command tree")
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	cliTrace.mark("close, exit")
	cliTrace.flush()
	if err == nil {
		return statusOK
	}
	if cmd == nil {
		cmd = root
	}
	ee := asExit(cmd, err)
	if !ee.written && argsWantJSON(args) {
		// cobra failed before any command saw the line (an unknown
		// command): --json still gets its envelope.
		if _, ok := err.(*exitError); !ok {
			ee.cause = &usageError{err}
		}
		writeErrorJSON(os.Stdout, ee)
	}
	if ee.msg != "" {
		fmt.Fprintln(os.Stderr, "dsh:", ee.msg)
	}
	return ee.code
}

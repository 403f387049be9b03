package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the dsh command tree. Every subcommand is registered
// here, in the order --help lists them.
// newRootCmd builds dsh's whole command tree.
func newRootCmd() *cobra.Command { return newRoot(false) }

// newRoot builds the root command with every subcommand, or with run's
// alone: a dsh run line (prestart.RunLine) dispatches to run whatever else the
// tree holds, and building the rest is a cold start's cost (0.4 ms here)
// that one-shot runs pay every time.
func newRoot(runOnly bool) *cobra.Command {
	root := &cobra.Command{
		Use:   "dsh",
		Short: "dsh runs AI agents' tools in one confined execution world",
		Long: `dsh is a confined execution runtime for AI agents' tools.

Shell commands, language servers, MCP servers and web fetches all run inside
one execution world - a sandbox with its own filesystem view, process limits
and an egress policy that blocks private networks - so nothing an agent
causes can escape it.`,
		Example: `  dsh doctor
  dsh run -- make test
  dsh policy check https://example.com
  dsh help exit-codes`,
		Version:                    version,
		SilenceUsage:               true,
		SilenceErrors:              true,
		SuggestionsMinimumDistance: 3,
	}
	root.SetVersionTemplate(versionLine() + "\n")
	addGlobalFlags(root)
	if runOnly {
		root.AddCommand(newRunCmd())
		contractCommands(root)
		return root
	}
	root.AddCommand(
		newVersionCmd(),
		newConfigCmd(),
		newTrustCmd(),
		newDoctorCmd(), newHealthCmd(),
		newPolicyCmd(),
		newProxyCmd(),
		newFetchCmd(), newSearchCmd(),
		newRunCmd(), newServeCmd(),
		newLSPCmd(),
		newMCPCmd(),
		newSkillsCmd(),
		newWorldCmd(),
		newExitCodesTopic(),
	)
	contractCommands(root)
	return root
}

// newExitCodesTopic is the help topic "dsh help exit-codes".
func newExitCodesTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "The exit statuses of every dsh command",
		Long: `Every dsh command exits with:

  0    success
  1    the thing checked failed: a target denied (dsh policy check), a
       fetch or search error (dsh fetch, dsh search), not ready (dsh doctor),
       the proxy failing while serving
  2    usage or configuration error: an unknown command, flag or argument
       (with a suggestion where one is close), an invalid config file, an
       untrusted project config file that widens confinement (dsh trust)

dsh run passes the command's own status through, so dsh's failures use
statuses a command rarely does, as docker run's:

  N      the command's exit code
  124    the command timed out (--timeout)
  125    dsh itself failed, usage and configuration errors included
  126    the command was found but could not be executed
  127    the command was not found
  128+N  the command was killed by signal N (130 also when dsh was
         interrupted while opening the world)

With --json, every error is one JSON object on stdout, beside the message
on stderr:

  {"error":{"code":"CONFIG_INVALID","message":"...",
            "problems":[{"key":"sandbox.limts","message":"..."}]}}

code is USAGE, CONFIG_INVALID, CONFIG_UNTRUSTED, DSH_FAILED, NOT_FOUND, NOT_EXECUTABLE,
INTERRUPTED, FAILED, or a typed code such as NET_DENIED (dsh fetch);
problems lists every problem found, with its configuration key when it
has one (empty otherwise), and is [] when there is no list.`,
	}
}

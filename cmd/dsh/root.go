package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the dsh command tree. Every subcommand is registered
// here, in the order --help lists them.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "dsh",
		Short: "dsh runs AI agents' tools in one confined execution world",
		Long: `dsh is a confined execution runtime for AI agents' tools.

Shell commands, language servers, MCP servers and web fetches all run inside
one execution world - a sandbox with its own filesystem view, process limits
and an egress policy that blocks private networks - so nothing an agent
causes can escape it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	addGlobalFlags(root)
	root.AddCommand(
		newVersionCmd(),
		newConfigCmd(),
		newDoctorCmd(),
		newPolicyCmd(),
		newProxyCmd(),
		newFetchCmd(), newSearchCmd(),
		newRunCmd(),
	)
	return root
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/sandbox/docker"
)

// newEgressForwardCmd is the docker driver's in-world egress forwarder
// (hidden: the driver starts it inside every world with egress).
func newEgressForwardCmd() *cobra.Command {
	return &cobra.Command{
		Use:                docker.ForwardArg + " LISTEN-ADDR UNIX-SOCKET",
		Short:              "Forward a world's loopback proxy port to its egress socket (internal)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := docker.ForwardMain(args); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
}

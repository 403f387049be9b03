package main

import "github.com/spf13/cobra"

// addGlobalFlags adds the flags every subcommand shares.
func addGlobalFlags(root *cobra.Command) {
	root.PersistentFlags().String("config", "", "config file, read alone (default $XDG_CONFIG_HOME/dsh/config.yaml, then the project file ./dsh.yaml over it)")
}

package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show and check dsh's configuration",
		Long: `dsh reads its configuration from, in increasing precedence:

  1. built-in defaults
  2. a YAML file: --config FILE, else $DSH_CONFIG, else ./dsh.yaml,
     else $XDG_CONFIG_HOME/dsh/config.yaml (~/.config/dsh/config.yaml)
  3. environment variables DSH_<KEY>, dots as underscores
     (sandbox.limits.memory -> DSH_SANDBOX_LIMITS_MEMORY)
  4. command-line flags (dsh run --memory, ...)`,
		Example: `  dsh config show
  dsh config show --json --config ./dsh.yaml`,
		RunE: groupRunE,
	}
	cmd.AddCommand(newConfigShowCmd())
	return cmd
}

func newConfigShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration and where each value came from",
		Example: `  dsh config show
  DSH_SANDBOX_DRIVER=docker dsh config show --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := load(cmd)
			if err != nil {
				return err
			}
			values := l.cfg.Map()
			type entry struct {
				Key    string `json:"key"`
				Value  any    `json:"value"`
				Source string `json:"source"`
			}
			var entries []entry
			for _, k := range config.Keys() {
				entries = append(entries, entry{k, lookupStruct(values, k), l.sources[k]})
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(map[string]any{"file": l.file, "settings": entries})
			}
			if l.file != "" {
				fmt.Fprintf(out, "# config file: %s\n", l.file)
			} else {
				fmt.Fprintln(out, "# no config file")
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
			for _, e := range entries {
				b, _ := json.Marshal(e.Value)
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, b, e.Source)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: {file, settings:[{key,value,source}]}")
	return cmd
}

// lookupStruct finds a dotted key in the nested maps of toMap.
func lookupStruct(m map[string]any, key string) any { return lookup(m, key) }

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
  2. YAML files: --config FILE, else $DSH_CONFIG, else the user's
     $XDG_CONFIG_HOME/dsh/config.yaml (~/.config/dsh/config.yaml) and
     over it the project file ./dsh.yaml
  3. environment variables DSH_<KEY>, dots as underscores
     (sandbox.limits.memory -> DSH_SANDBOX_LIMITS_MEMORY); a variable
     named after a section (DSH_WEB_FETCH) is refused
  4. command-line flags (dsh run --memory, ...)

A project file is one a world can write (the current directory is the
default workspace): dsh takes only settings from it that narrow
confinement, relative to what they would be without it, until you trust
it with dsh trust (see dsh trust --help). dsh names on stderr each config
file it read.`,
		Example: `  dsh config show
  dsh config show --json --config ./dsh.yaml`,
		RunE: groupRunE,
	}
	cmd.AddCommand(newConfigShowCmd(), newConfigValidateCmd(), newConfigInitCmd())
	return cmd
}

// problem is one entry of the JSON error envelope's problems.
type problem struct {
	Key     string `json:"key"`
	Message string `json:"message"`
}

// problemsOf lists the problems in err: each configuration problem with
// its key path, anything else as one problem without a key.
func problemsOf(err error) []problem {
	var es config.Errors
	if !errors.As(err, &es) {
		return []problem{{Message: err.Error()}}
	}
	var out []problem
	for _, e := range es {
		var ke *config.KeyError
		if errors.As(e, &ke) {
			out = append(out, problem{Key: ke.Key, Message: ke.Msg})
		} else {
			out = append(out, problem{Message: e.Error()})
		}
	}
	return out
}

// writeJSONError writes dsh's JSON error envelope to w.
func writeJSONError(w io.Writer, code, msg string, problems []problem) error {
	type body struct {
		Code     string    `json:"code"`
		Message  string    `json:"message"`
		Problems []problem `json:"problems,omitempty"`
	}
	return json.NewEncoder(w).Encode(map[string]body{"error": {code, msg, problems}})
}

func newConfigValidateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check the configuration: every problem with its key, exit 1 if any",
		Long: `dsh config validate loads the configuration as every command does (FILE,
else --config, $DSH_CONFIG, $XDG_CONFIG_HOME/dsh/config.yaml and ./dsh.yaml;
then DSH_* variables) and reports every problem at once, each with its key
path. It exits 0 when the configuration is valid and 1 when it is not.
With --json it prints {"valid":true,"file":PATH} or the error envelope
{"error":{"code":"CONFIG_INVALID","message":...,"problems":[{"key":...,"message":...}]}}.`,
		Example: `  dsh config validate
  dsh config validate ./dsh.yaml --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if err := cmd.Flags().Set("config", args[0]); err != nil {
					return exitf(2, "%v", err)
				}
			}
			out := cmd.OutOrStdout()
			l, err := load(cmd)
			if err != nil {
				if asJSON {
					code := "CONFIG_INVALID"
					if errors.As(err, new(*untrustedError)) {
						code = "CONFIG_UNTRUSTED"
					}
					if err := writeJSONError(out, code, "the configuration is invalid", problemsOf(err)); err != nil {
						return err
					}
					return exitCode(1)
				}
				return exitf(1, "%v", err)
			}
			if asJSON {
				res := map[string]any{"valid": true}
				if l.file != "" {
					res["file"] = l.file
				}
				return json.NewEncoder(out).Encode(res)
			}
			if l.file == "" {
				fmt.Fprintln(out, "no config file; the configuration (defaults and DSH_* variables) is valid")
			}
			for _, f := range l.files {
				fmt.Fprintf(out, "%s: valid (%s)\n", f.Path, f.describe())
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"valid":true} or the error envelope with every problem`)
	return cmd
}

func newConfigInitCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write an example configuration: every key, its default and what it does",
		Long: `dsh config init writes a configuration file that sets every key to its
default, each with a comment (FILE, default ./dsh.yaml; - for stdout). Keys
whose default depends on the host are left commented out. It never
overwrites a file unless --force is given. docs/config.example.yaml is
this file.`,
		Example: `  dsh config init
  dsh config init ~/.config/dsh/config.yaml
  dsh config init - | less`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "dsh.yaml"
			if len(args) == 1 {
				path = args[0]
			}
			ex := config.Example()
			if path == "-" {
				_, err := io.WriteString(cmd.OutOrStdout(), ex)
				return err
			}
			flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(path, flag, 0o644)
			if errors.Is(err, os.ErrExist) {
				return exitf(1, "%s exists; pass --force to overwrite it", path)
			}
			if err != nil {
				return exitf(1, "%v", err)
			}
			if _, err := io.WriteString(f, ex); err != nil {
				f.Close()
				return exitf(1, "writing %s: %v", path, err)
			}
			if err := f.Close(); err != nil {
				return exitf(1, "writing %s: %v", path, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "dsh: wrote %s; check it with: dsh config validate %s\n", path, path)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "overwrite FILE if it exists")
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
				files := l.files
				if files == nil {
					files = []*configFile{}
				}
				return json.NewEncoder(out).Encode(map[string]any{"file": l.file, "files": files, "settings": entries})
			}
			for _, f := range l.files {
				fmt.Fprintf(out, "# config file: %s (%s)\n", f.Path, f.describe())
			}
			if len(l.files) == 0 {
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: {file, files:[{path,kind,trust}], settings:[{key,value,source}]}")
	return cmd
}

// lookupStruct finds a dotted key in the nested maps of toMap.
func lookupStruct(m map[string]any, key string) any { return lookup(m, key) }

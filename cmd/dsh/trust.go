package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/trust"
)

func newTrustCmd() *cobra.Command {
	var list, asJSON bool
	var revoke string
	cmd := &cobra.Command{
		Use:   "trust [FILE]",
		Short: "Let a project config file widen confinement, as long as it does not change",
		Long: `A project config file (./dsh.yaml, read from the current directory, the default
workspace) is a file a world can write. dsh takes from it only settings that
narrow confinement - lower limits, more masks, fewer allowed destinations, a
deny default, limits.off and unix_sockets false - and refuses to run with
one that widens it (exit 2, or 125 for dsh run; --json code CONFIG_UNTRUSTED)
until you trust it.

dsh trust FILE (default ./dsh.yaml) first prints what FILE widens, then
records its absolute path and the SHA-256 of its content in
$XDG_CONFIG_HOME/dsh/trusted.json (~/.config/dsh/trusted.json), a file no
world can see. Any change to FILE makes it untrusted again ("changed since
trusted"): read it, then trust it again. Your own config
($XDG_CONFIG_HOME/dsh/config.yaml) and a file named by --config or
$DSH_CONFIG are always trusted.

--list shows every trusted file and whether it still matches; --revoke FILE
forgets one.`,
		Example: `  dsh trust                    # trust ./dsh.yaml as it is now
  dsh trust ../proj/dsh.yaml --json
  dsh trust --list
  dsh trust --revoke ./dsh.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case list && len(args) > 0:
				return &usageError{errors.New("--list takes no FILE")}
			case revoke != "" && len(args) > 0:
				return &usageError{errors.New("--revoke FILE takes no other FILE")}
			case list:
				return trustList(cmd, asJSON)
			case revoke != "":
				return trustRevoke(cmd, revoke, asJSON)
			}
			file := projectFileName
			if len(args) == 1 {
				file = args[0]
			}
			return trustFile(cmd, file, asJSON)
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted files and whether each still matches")
	cmd.Flags().StringVar(&revoke, "revoke", "", "forget the trust of `FILE`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.MarkFlagsMutuallyExclusive("list", "revoke")
	return cmd
}

func openTrustStore() (*trust.Store, error) {
	path, err := trust.DefaultPath()
	if err != nil {
		return nil, exitf(1, "%v", err)
	}
	s, err := trust.Load(path)
	if err != nil {
		return nil, exitf(1, "%v", err)
	}
	return s, nil
}

// trustFile prints what file widens relative to the user's own
// configuration, then records it as trusted.
func trustFile(cmd *cobra.Command, file string, asJSON bool) error {
	f := &configFile{Path: absPath(file), Kind: kindProject}
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return exitf(2, "%v; name an existing config file (default ./%s)", err, projectFileName)
	}
	f.data = data
	widens, err := wideningsOf(f)
	if err != nil {
		return &configError{fmt.Errorf("%s is not a valid configuration, so it is not trusted; see dsh config validate %s: %w", f.Path, shellQuote(f.Path), err)}
	}
	store, err := openTrustStore()
	if err != nil {
		return err
	}
	was := store.State(f.Path, data)
	e := store.Add(f.Path, data, time.Now())
	if err := store.Save(); err != nil {
		return exitf(1, "%v", err)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		if widens == nil {
			widens = []config.WideningKey{}
		}
		return writeJSON(out, map[string]any{"trusted": e, "was": was.String(), "store": store.Path, "widens": widens})
	}
	if len(widens) == 0 {
		fmt.Fprintf(out, "%s widens nothing: dsh applies it without trust too.\n", f.Path)
	} else {
		fmt.Fprintf(out, "%s widens confinement:\n", f.Path)
		for _, w := range widens {
			fmt.Fprintf(out, "  %s: %s, was %s\n", w.Key, jsonValue(w.Value), jsonValue(w.Before))
		}
	}
	fmt.Fprintf(out, "trusted %s (sha256 %s) in %s; any change to it makes it untrusted again\n", f.Path, e.SHA256[:12], store.Path)
	return nil
}

// wideningsOf reads project file f over the defaults and the user's
// own config, as a command would, and returns what it widens.
func wideningsOf(f *configFile) ([]config.WideningKey, error) {
	v := newViper()
	files, err := userConfigFile()
	if err != nil {
		return nil, err
	}
	if err := readFiles(files); err != nil {
		return nil, err
	}
	files = append(files, f)
	problems := mergeFiles(v, files)
	if len(problems) == 0 {
		if err := f.after.Validate(driverNames()); err != nil {
			var es config.Errors
			if errors.As(err, &es) {
				problems = es
			} else {
				problems = config.Errors{err}
			}
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return config.Widenings(f.keys, f.before, f.after), nil
}

// jsonValue is v as JSON text, as dsh config show prints values.
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// trustedFile is one entry of dsh trust --list.
type trustedFile struct {
	trust.Entry
	State string `json:"state"` // trusted, changed since trusted, missing
}

func trustList(cmd *cobra.Command, asJSON bool) error {
	store, err := openTrustStore()
	if err != nil {
		return err
	}
	files := []trustedFile{}
	for _, e := range store.Entries {
		state := "missing"
		if data, err := os.ReadFile(e.Path); err == nil {
			state = store.State(e.Path, data).String()
		}
		files = append(files, trustedFile{e, state})
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return writeJSON(out, map[string]any{"store": store.Path, "files": files})
	}
	if len(files) == 0 {
		fmt.Fprintf(out, "no trusted files (%s)\n", store.Path)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSTATE\tSHA256\tTRUSTED")
	for _, f := range files {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Path, f.State, f.SHA256[:12], f.Trusted.Format(time.RFC3339))
	}
	return tw.Flush()
}

func trustRevoke(cmd *cobra.Command, file string, asJSON bool) error {
	store, err := openTrustStore()
	if err != nil {
		return err
	}
	path := absPath(file)
	if !store.Revoke(path) {
		return exitf(1, "%s is not trusted; dsh trust --list shows the trusted files", path)
	}
	if err := store.Save(); err != nil {
		return exitf(1, "%v", err)
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"revoked": path})
	}
	fmt.Fprintf(cmd.OutOrStdout(), "revoked %s: dsh takes only narrowing settings from it again\n", path)
	return nil
}

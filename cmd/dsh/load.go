package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/trust"
	"github.com/dsh-dev/dsh/sandbox"
)

// configKeyAnnotation marks a flag that overrides a configuration key.
const configKeyAnnotation = "dsh-config-key"

// bindConfigFlag declares that flag name of cmd overrides configuration key.
func bindConfigFlag(cmd *cobra.Command, name, key string) {
	f := cmd.Flags().Lookup(name)
	if f == nil {
		panic("bindConfigFlag: no flag " + name)
	}
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[configKeyAnnotation] = []string{key}
}

// loaded is a configuration together with where each value came from.
type loaded struct {
	cfg *config.Config
	// file is the config file of highest precedence read, or "".
	file string
	// files are every config file read, in precedence order.
	files   []*configFile
	sources map[string]string // key -> default | file PATH | env NAME | flag --NAME
}

// envName is the environment variable that overrides key.
func envName(key string) string { return config.EnvName(key) }

// warnedRoots are the command trees that have warned about unknown DSH_*
// variables: once per command line, however often it loads.
var warnedRoots sync.Map

// warnUnknownEnv prints a warning on stderr for every DSH_* variable that
// is neither a setting nor one dsh uses itself (config.InternalEnv).
func warnUnknownEnv(cmd *cobra.Command) {
	if _, done := warnedRoots.LoadOrStore(cmd.Root(), true); done {
		return
	}
	for _, w := range config.UnknownEnv(os.Environ()) {
		fmt.Fprintln(cmd.ErrOrStderr(), "dsh: warning:", w)
	}
}

// loadConfig reads the effective configuration for cmd: defaults, then the
// config files, then DSH_* environment variables, then flags bound with
// bindConfigFlag. Every problem is reported at once.
func loadConfig(cmd *cobra.Command) (*config.Config, error) {
	l, err := load(cmd)
	if err != nil {
		return nil, err
	}
	return l.cfg, nil
}

func load(cmd *cobra.Command) (*loaded, error) {
	l, err := loadRaw(cmd)
	if err != nil {
		return nil, &configError{err}
	}
	announceFiles(cmd, l.files)
	return l, nil
}

// announcedRoots are the command trees that have said which config files
// they read: once per command line.
var announcedRoots sync.Map

// announceFiles says on stderr which config files cmd found and read,
// one line each, with their kind: nothing when there are none, and
// nothing for a file the command line names (--config), which says it.
func announceFiles(cmd *cobra.Command, files []*configFile) {
	if len(files) == 0 || files[0].Kind == kindFlag {
		return
	}
	if _, done := announcedRoots.LoadOrStore(cmd.Root(), true); done {
		return
	}
	for _, f := range files {
		fmt.Fprintf(cmd.ErrOrStderr(), "dsh: config: %s (%s)\n", f.Path, f.describe())
	}
}

// newViper returns a viper holding every key's default: the values of
// config.Default() as they are, which decode to the same configuration
// as a file setting them would (no YAML round trip, which cost a cold
// dsh run most of a millisecond).
func newViper() *viper.Viper {
	v := viper.New()
	v.SetConfigType("yaml")
	defMap := config.Default().Map()
	for _, k := range config.Keys() {
		v.SetDefault(k, lookup(defMap, k))
	}
	return v
}

func loadRaw(cmd *cobra.Command) (*loaded, error) {
	keys := config.Keys()

	warnUnknownEnv(cmd)
	files, err := configFiles(cmd)
	if err != nil {
		return nil, err
	}
	if err := readFiles(files); err != nil {
		return nil, err
	}
	flagKeys := map[string]*pflag.Flag{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if k, ok := f.Annotations[configKeyAnnotation]; ok && len(k) == 1 {
			flagKeys[k[0]] = f
		}
	})

	var cfg config.Config
	// A variable named after a section would hide its keys from viper.
	problems := config.SectionEnv(os.Environ())
	if onlyDefaults(files, keys, flagKeys) {
		// Nothing sets a key: the configuration is the defaults as they
		// are, which is what viper would decode them to
		// (TestNewViperDefaultsDecodeAsTheirYAML), without the 2–3 ms
		// the decode costs a cold dsh run.
		cfg = config.Default()
	} else {
		v := newViper()
		problems = append(problems, mergeFiles(v, files)...)
		v.SetEnvPrefix("DSH")
		v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
		v.AutomaticEnv()
		for k, f := range flagKeys {
			_ = v.BindPFlag(k, f)
		}
		if err := v.Unmarshal(&cfg); err != nil {
			problems = append(problems, fmt.Errorf("decoding configuration: %w", err))
		}
	}
	if err := cfg.Validate(driverNames()); err != nil {
		var es config.Errors
		if errors.As(err, &es) {
			problems = append(problems, es...)
		} else {
			problems = append(problems, err)
		}
	}
	if len(problems) > 0 {
		if len(files) > 0 {
			paths := make([]string, len(files))
			for i, f := range files {
				paths[i] = f.Path
			}
			return nil, fmt.Errorf("%s: %w", strings.Join(paths, ", "), problems)
		}
		return nil, problems
	}
	if err := checkTrust(files); err != nil {
		return nil, err
	}

	sources := make(map[string]string, len(keys))
	for _, k := range keys {
		switch {
		case flagKeys[k] != nil && flagKeys[k].Changed:
			sources[k] = "flag --" + flagKeys[k].Name
		case os.Getenv(envName(k)) != "":
			sources[k] = "env " + envName(k)
		default:
			sources[k] = "default"
			for _, f := range files {
				if slices.Contains(f.keys, k) {
					sources[k] = "file " + f.Path
				}
			}
		}
	}
	l := &loaded{cfg: &cfg, files: files, sources: sources}
	if len(files) > 0 {
		l.file = files[len(files)-1].Path
	}
	return l, nil
}

// onlyDefaults says that no file, environment variable or flag sets any
// of keys. viper ignores an empty variable, as AllowEmptyEnv is unset.
func onlyDefaults(files []*configFile, keys []string, flags map[string]*pflag.Flag) bool {
	if len(files) > 0 {
		return false
	}
	for _, f := range flags {
		if f.Changed {
			return false
		}
	}
	for _, k := range keys {
		if os.Getenv(envName(k)) != "" {
			return false
		}
	}
	return true
}

// configFiles finds the configuration files cmd reads, in precedence
// order: --config FILE alone, else $DSH_CONFIG alone, else the user's
// $XDG_CONFIG_HOME/dsh/config.yaml (~/.config/dsh/config.yaml) and then
// the project file ./dsh.yaml, each if it exists. The user's file and
// the one named by --config or $DSH_CONFIG are trusted; the project file
// is one a world could have written (the current directory is the
// default workspace), so it may only narrow unless the user trusts it
// (checkTrust).
func configFiles(cmd *cobra.Command) ([]*configFile, error) {
	if f := cmd.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		p := f.Value.String()
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("--config %s: %w", p, err)
		}
		return []*configFile{{Path: absPath(p), Kind: kindFlag}}, nil
	}
	if p := os.Getenv("DSH_CONFIG"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("DSH_CONFIG=%s: %w", p, err)
		}
		return []*configFile{{Path: absPath(p), Kind: kindEnv}}, nil
	}
	files, err := userConfigFile()
	if err != nil {
		return nil, err
	}
	// Not the empty placeholder a world on this workspace has there while
	// the user has none (sandbox.PrepareProtected): it is no one's
	// configuration.
	if _, err := os.Stat(projectFileName); err == nil && !sandbox.IsPlaceholder(projectFileName) {
		files = append(files, &configFile{Path: absPath(projectFileName), Kind: kindProject})
	}
	return files, nil
}

// userConfigFile is the user's own config file, if it exists.
func userConfigFile() ([]*configFile, error) {
	dir, err := trust.Dir()
	if err != nil {
		return nil, nil
	}
	p := filepath.Join(dir, "config.yaml")
	if _, err := os.Stat(p); err != nil {
		return nil, nil
	}
	return []*configFile{{Path: p, Kind: kindUser}}, nil
}

// lookup finds a dotted key in nested maps.
func lookup(m map[string]any, key string) any {
	parts := strings.Split(key, ".")
	var cur any = m
	for _, p := range parts {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-dev/dsh/internal/config"
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
	cfg     *config.Config
	file    string            // the config file read, or ""
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
// config file, then DSH_* environment variables, then flags bound with
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
	return l, nil
}

func loadRaw(cmd *cobra.Command) (*loaded, error) {
	v := viper.New()
	def := config.Default()
	keys := config.Keys()
	defMap := map[string]any{}
	if err := decodeToMap(def, &defMap); err != nil {
		return nil, err
	}
	for _, k := range keys {
		v.SetDefault(k, lookup(defMap, k))
	}

	warnUnknownEnv(cmd)
	file, err := configFile(cmd)
	if err != nil {
		return nil, err
	}
	if file != "" {
		if abs, err := filepath.Abs(file); err == nil {
			file = abs
		}
	}
	var problems config.Errors
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading config file: %w", err)
		}
		var raw map[string]any
		if err := yaml.Unmarshal(data, &raw); err != nil {
			return nil, fmt.Errorf("config file %s is not valid YAML: %w", file, err)
		}
		problems = append(problems, config.CheckKeys(raw)...)
		v.SetConfigType("yaml")
		if err := v.ReadConfig(strings.NewReader(string(data))); err != nil {
			return nil, fmt.Errorf("config file %s: %w", file, err)
		}
	}

	v.SetEnvPrefix("DSH")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()

	flagKeys := map[string]*pflag.Flag{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if k, ok := f.Annotations[configKeyAnnotation]; ok && len(k) == 1 {
			flagKeys[k[0]] = f
			_ = v.BindPFlag(k[0], f)
		}
	})

	var cfg config.Config
	if err := v.Unmarshal(&cfg); err != nil {
		problems = append(problems, fmt.Errorf("decoding configuration: %w", err))
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
		if file != "" {
			return nil, fmt.Errorf("%s: %w", file, problems)
		}
		return nil, problems
	}

	sources := make(map[string]string, len(keys))
	for _, k := range keys {
		switch {
		case flagKeys[k] != nil && flagKeys[k].Changed:
			sources[k] = "flag --" + flagKeys[k].Name
		case os.Getenv(envName(k)) != "":
			sources[k] = "env " + envName(k)
		case file != "" && v.InConfig(k):
			sources[k] = "file " + file
		default:
			sources[k] = "default"
		}
	}
	return &loaded{cfg: &cfg, file: file, sources: sources}, nil
}

// configFile picks the configuration file: --config, else ./dsh.yaml, else
// $XDG_CONFIG_HOME/dsh/config.yaml (default ~/.config). "" means none.
func configFile(cmd *cobra.Command) (string, error) {
	if f := cmd.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		p := f.Value.String()
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("--config %s: %w", p, err)
		}
		return p, nil
	}
	if p := os.Getenv("DSH_CONFIG"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("DSH_CONFIG=%s: %w", p, err)
		}
		return p, nil
	}
	if _, err := os.Stat("dsh.yaml"); err == nil {
		return "dsh.yaml", nil
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", nil
		}
		dir = filepath.Join(home, ".config")
	}
	p := filepath.Join(dir, "dsh", "config.yaml")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", nil
}

// decodeToMap turns a config struct into nested maps keyed like the file.
func decodeToMap(c config.Config, out *map[string]any) error {
	b, err := yaml.Marshal(c.Map())
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, out)
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

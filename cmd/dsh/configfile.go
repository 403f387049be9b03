package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/trust"
)

// projectFileName is the project config file dsh reads in the current
// directory, the default workspace.
const projectFileName = "dsh.yaml"

// The kinds of config file, by who could have written it.
const (
	kindUser    = "user"       // the user's config directory: trusted
	kindFlag    = "--config"   // named on the command line: trusted
	kindEnv     = "DSH_CONFIG" // named by the user's environment: trusted
	kindProject = "project"    // the current directory: a world may have written it
)

// configFile is one configuration file dsh reads.
type configFile struct {
	Path string `json:"path"` // absolute
	Kind string `json:"kind"` // kindUser, kindFlag, kindEnv, kindProject
	// Trust is the trust store's state of a project file's content
	// (trusted, untrusted, changed since trusted); "" for other kinds.
	Trust string `json:"trust,omitempty"`

	data []byte
	keys []string // the keys the file sets
	// before and after are the configuration of the files read so far
	// (and the defaults) without and with this one, for a project file.
	before, after config.Config
}

// trusted reports whether the file's settings may widen confinement.
func (f *configFile) trusted() bool {
	return f.Kind != kindProject || f.Trust == trust.Trusted.String()
}

// describe is how announceFiles names the file's kind.
func (f *configFile) describe() string {
	switch {
	case f.Kind == kindProject && f.trusted():
		return "project, trusted"
	case f.Kind == kindProject:
		return "project, " + f.Trust + ": narrowing only"
	case f.Kind == kindUser:
		return "user"
	}
	return f.Kind
}

// readFiles reads every file's content once: what is hashed for trust is
// what is parsed.
func readFiles(files []*configFile) error {
	for _, f := range files {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			return fmt.Errorf("reading config file: %w", err)
		}
		f.data = data
	}
	return nil
}

// mergeFiles merges the files, in order, into v, which holds the
// defaults, and returns every problem of their keys. For a project file
// it decodes the configuration without and with it.
func mergeFiles(v *viper.Viper, files []*configFile) config.Errors {
	var problems config.Errors
	for _, f := range files {
		var raw map[string]any
		if err := yaml.Unmarshal(f.data, &raw); err != nil {
			problems = append(problems, fmt.Errorf("config file %s is not valid YAML: %w", f.Path, err))
			continue
		}
		problems = append(problems, config.CheckKeys(raw)...)
		f.keys = config.FileKeys(raw)
		if f.Kind == kindProject {
			if err := v.Unmarshal(&f.before); err != nil {
				problems = append(problems, fmt.Errorf("decoding configuration: %w", err))
			}
		}
		if err := v.MergeConfig(bytes.NewReader(f.data)); err != nil {
			problems = append(problems, fmt.Errorf("config file %s: %w", f.Path, err))
			continue
		}
		if f.Kind == kindProject {
			if err := v.Unmarshal(&f.after); err != nil {
				problems = append(problems, fmt.Errorf("decoding %s: %w", f.Path, err))
			}
		}
	}
	return problems
}

// checkTrust looks up every project file in the trust store and refuses
// one the user has not trusted (or that changed since) if it widens
// confinement: an untrustedError naming the file, each widening key and
// the fix. The store is read only when there is a project file.
func checkTrust(files []*configFile) error {
	var store *trust.Store
	for _, f := range files {
		if f.Kind != kindProject {
			continue
		}
		if store == nil {
			path, err := trust.DefaultPath()
			if err != nil {
				return err
			}
			if store, err = trust.Load(path); err != nil {
				return err
			}
		}
		state := store.State(f.Path, f.data)
		f.Trust = state.String()
		if state == trust.Trusted {
			continue
		}
		if w := config.Widenings(f.keys, f.before, f.after); len(w) > 0 {
			return &untrustedError{file: f.Path, state: state, widens: w}
		}
	}
	return nil
}

// untrustedError is a project file that widens confinement and that the
// user has not trusted, or that changed since.
type untrustedError struct {
	file   string
	state  trust.State
	widens []config.WideningKey
}

func (e *untrustedError) Error() string {
	var b strings.Builder
	what := "is a project config file you have not trusted"
	if e.state == trust.Changed {
		what = "changed since trusted"
	}
	fmt.Fprintf(&b, "%s %s, and it widens confinement:", e.file, what)
	for _, w := range e.widens {
		b.WriteString("\n  ")
		b.WriteString(w.Error())
	}
	fmt.Fprintf(&b, "\nA world can write the files of its workspace, so dsh takes only narrowing settings from them.\nIf you wrote this file and want it applied, trust it: dsh trust %s", shellQuote(e.file))
	return b.String()
}

// Unwrap gives the widening keys as configuration problems (the --json
// envelope's problems).
func (e *untrustedError) Unwrap() error {
	es := make(config.Errors, len(e.widens))
	for i, w := range e.widens {
		es[i] = &config.KeyError{Key: w.Key, Msg: w.Msg() + "; trust the file: dsh trust " + shellQuote(e.file)}
	}
	return es
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

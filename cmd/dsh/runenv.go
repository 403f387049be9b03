package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
)

// defaultTERM is the TERM of a --tty command when dsh's own has none.
const defaultTERM = "xterm-256color"

// runEnv is the command's explicit environment: the --env-file entries,
// then the -e entries (a later entry wins). NAME=VALUE sets NAME; a bare
// NAME copies this shell's value and is left out when NAME is unset, as
// docker run does.
func runEnv(cmd *cobra.Command) ([]string, error) {
	var env []string
	files, _ := cmd.Flags().GetStringArray("env-file")
	for _, file := range files {
		entries, err := readEnvFile(file)
		if err != nil {
			return nil, err
		}
		env = append(env, entries...)
	}
	flags, _ := cmd.Flags().GetStringArray("env")
	for _, e := range flags {
		kv, err := envEntry(e, os.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("--env %w", err)
		}
		if kv != "" {
			env = append(env, kv)
		}
	}
	return env, nil
}

// envEntry turns NAME=VALUE or NAME into an entry; "" when NAME is unset
// on the host.
func envEntry(e string, lookup func(string) (string, bool)) (string, error) {
	k, _, hasValue := strings.Cut(e, "=")
	switch {
	case k == "":
		return "", fmt.Errorf("%q has no name; give NAME=VALUE, or NAME to copy this shell's value", e)
	case strings.ContainsAny(k, " \t\x00"):
		return "", fmt.Errorf("%q: the name %q has a space or NUL in it", e, k)
	case hasValue:
		return e, nil
	}
	v, ok := lookup(k)
	if !ok {
		return "", nil
	}
	return k + "=" + v, nil
}

// readEnvFile reads an --env-file: one NAME=VALUE or NAME a line, the
// value taken as it is (no quotes removed, as docker does); blank lines
// and lines starting with # are ignored.
func readEnvFile(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("--env-file: %w", err)
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimLeft(sc.Text(), " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kv, err := envEntry(line, os.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("--env-file %s:%d: %w", file, n, err)
		}
		if kv != "" {
			env = append(env, kv)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--env-file %s: %w", file, err)
	}
	return env, nil
}

// withTERM gives a --tty command the user's TERM (defaultTERM when
// unset), unless env sets TERM itself: the entry goes first, and a later
// one wins.
func withTERM(env []string, host string) []string {
	if host == "" {
		host = defaultTERM
	}
	return append([]string{"TERM=" + host}, env...)
}

// openRunAudit opens where dsh run copies the egress proxy's audit lines
// (--audit, proxy.audit): nothing for "", stderr for - (stdout is the
// command's), else FILE, appended. The returned func closes it.
func openRunAudit(path string, stderr io.Writer) (io.Writer, func(), error) {
	switch path {
	case "":
		return nil, func() {}, nil
	case "-":
		return stderr, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the audit log: %v (pass --audit with a writable file, or - for stderr)", err)
	}
	return f, func() { f.Close() }, nil
}

// memoryLimit is the world's memory limit as configured, for messages.
func memoryLimit(cfg *config.Config) string {
	if cfg.Sandbox.Limits.Off || cfg.Sandbox.Limits.Memory == "" {
		return "not set by dsh"
	}
	return cfg.Sandbox.Limits.Memory
}

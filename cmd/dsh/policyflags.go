package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/idn"
	"github.com/dsh-dev/dsh/netpolicy"
)

// addPolicyFlags registers --policy FILE and repeatable --allow ENTRY,
// shared by every command that connects somewhere (fetch, proxy, run,
// policy check).
func addPolicyFlags(cmd *cobra.Command) {
	cmd.Flags().String("policy", "", "egress policy file (YAML with keys default, ports, allow, deny); replaces the configured policy")
	cmd.Flags().StringArray("allow", nil, "extra allow entry: host, *.host, host:port, IP, IP:port, [IPv6]:port or CIDR (repeatable)")
}

// policyFile is the standalone policy file --policy reads.
type policyFile struct {
	Default string   `yaml:"default"`
	Ports   []int    `yaml:"ports"`
	Allow   []string `yaml:"allow"`
	Deny    []string `yaml:"deny"`
}

// policyFromFlags returns the policy a command runs under: the --policy
// file if given, else base; --allow entries are appended to its allow
// list. Every problem of the result is reported at once.
func policyFromFlags(cmd *cobra.Command, base config.Policy) (*netpolicy.Policy, error) {
	c := netpolicy.Config{Default: base.Default, Ports: base.Ports, Allow: base.Allow, Deny: base.Deny}
	src := "the configured policy"
	if f := cmd.Flags().Lookup("policy"); f != nil && f.Value.String() != "" {
		path := f.Value.String()
		pf, err := readPolicyFile(path)
		if err != nil {
			return nil, err
		}
		c = netpolicy.Config{Default: pf.Default, Ports: pf.Ports, Allow: pf.Allow, Deny: pf.Deny}
		src = "policy file " + path
	}
	if extra, err := cmd.Flags().GetStringArray("allow"); err == nil && len(extra) > 0 {
		c.Allow = append(append([]string(nil), c.Allow...), extra...)
	}
	var err error
	// Internationalised names as net/http dials them (xn--), which is
	// how netpolicy takes them.
	if c.Allow, err = idn.Entries(c.Allow); err == nil {
		c.Deny, err = idn.Entries(c.Deny)
	}
	if err != nil {
		return nil, fmt.Errorf("%s (with --allow entries): %w", src, err)
	}
	p, err := netpolicy.New(c)
	if err != nil {
		return nil, fmt.Errorf("%s (with --allow entries): %w", src, err)
	}
	return p, nil
}

// readPolicyFile reads a standalone policy file strictly: unknown keys,
// a missing default and extra documents are errors.
func readPolicyFile(path string) (policyFile, error) {
	var pf policyFile
	data, err := os.ReadFile(path)
	if err != nil {
		return pf, fmt.Errorf("reading policy file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&pf); err != nil {
		if errors.Is(err, io.EOF) {
			return pf, fmt.Errorf("policy file %s is empty; it needs at least \"default: deny\" or \"default: public\"", path)
		}
		return pf, fmt.Errorf("policy file %s: %s (allowed keys: default, ports, allow, deny)", path, yamlProblems(err))
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return pf, fmt.Errorf("policy file %s: holds more than one YAML document; keep one", path)
	}
	if pf.Default == "" {
		return pf, fmt.Errorf("policy file %s: missing \"default\" (deny or public)", path)
	}
	return pf, nil
}

// yamlProblems words the decoder's errors for a user: yaml.v3 names Go
// types ("field x not found in type main.policyFile"), which mean nothing
// to someone editing the file.
func yamlProblems(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	var out []string
	for _, e := range te.Errors {
		if i := strings.Index(e, ": field "); i >= 0 && strings.Contains(e, " not found in type ") {
			field := e[i+len(": field "):]
			field = field[:strings.Index(field, " not found in type ")]
			e = e[:i] + ": unknown key " + strconv.Quote(field)
		}
		e = strings.ReplaceAll(e, "main.policyFile", "a policy")
		out = append(out, e)
	}
	return strings.Join(out, "; ")
}

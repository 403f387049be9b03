package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

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

// policyOverrides are the policy flags of one command line.
type policyOverrides struct {
	File  string   // --policy: replaces the configured policy
	Allow []string // --allow: appended to the allow list
}

// policyFlags reads the policy flags of cmd.
func policyFlags(cmd *cobra.Command) policyOverrides {
	var o policyOverrides
	if f := cmd.Flags().Lookup("policy"); f != nil {
		o.File = f.Value.String()
	}
	o.Allow, _ = cmd.Flags().GetStringArray("allow")
	return o
}

// policyFromFlags returns the policy cmd runs under: base, as the policy
// flags change it (resolvePolicy).
func policyFromFlags(cmd *cobra.Command, base netpolicy.Config) (*netpolicy.Policy, error) {
	return resolvePolicy(base, policyFlags(cmd))
}

// resolvePolicy returns the policy of base under the overrides: the
// policy file if given, else base; --allow entries are appended to its
// allow list. Every problem of the result is reported at once.
func resolvePolicy(base netpolicy.Config, o policyOverrides) (*netpolicy.Policy, error) {
	c := base
	src := "the configured policy"
	if o.File != "" {
		pf, err := readPolicyFile(o.File)
		if err != nil {
			return nil, err
		}
		c, src = pf, "policy file "+o.File
	}
	if len(o.Allow) > 0 {
		c.Allow = append(slices.Clone(c.Allow), o.Allow...)
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
// a missing default and extra documents are errors. Its keys are those of
// a policy section of the configuration: netpolicy.Config's fields,
// lower-cased (yaml's reading of untagged fields).
func readPolicyFile(path string) (netpolicy.Config, error) {
	var pf netpolicy.Config
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
// types ("field x not found in type netpolicy.Config"), which mean nothing
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
		e = strings.ReplaceAll(e, "netpolicy.Config", "a policy")
		out = append(out, e)
	}
	return strings.Join(out, "; ")
}

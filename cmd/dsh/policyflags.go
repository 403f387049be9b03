package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/dsh-dev/dsh/internal/config"
	"github.com/dsh-dev/dsh/internal/idn"
	"github.com/dsh-dev/dsh/netpolicy"
	"github.com/spf13/cobra"
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
	p, _, _, err := resolvePolicySummary(base, o)
	return p, err
}

// resolvePolicySummary is resolvePolicy that also returns the policy's
// configuration and where it came from, for a summary.
func resolvePolicySummary(base netpolicy.Config, o policyOverrides) (*netpolicy.Policy, netpolicy.Config, string, error) {
	c := base
	src := "the configured policy"
	if o.File != "" {
		pf, err := readPolicyFile(o.File)
		if err != nil {
			return nil, c, "", err
		}
		abs, _ := filepath.Abs(o.File)
		c, src = pf, "policy file "+abs
	}
	if len(o.Allow) > 0 {
		c.Allow = append(slices.Clone(c.Allow), o.Allow...)
	}
	errSrc := src + " (with --allow entries)"
	if len(o.Allow) > 0 {
		src += " with --allow entries"
	}
	var err error
	// Internationalised names as net/http dials them (xn--), which is
	// how netpolicy takes them.
	if c.Allow, err = idn.Entries(c.Allow); err == nil {
		c.Deny, err = idn.Entries(c.Deny)
	}
	if err != nil {
		return nil, c, "", fmt.Errorf("%s: %w", errSrc, err)
	}
	p, err := netpolicy.New(c)
	if err != nil {
		return nil, c, "", fmt.Errorf("%s: %w", errSrc, err)
	}
	return p, c, src, nil
}

// readPolicyFile reads a standalone policy file with the validator of
// the configuration's policy sections (config.ParsePolicy): every problem
// at once, each with its key path and, for an unknown key, the nearest
// known one. docs/policy.md documents the format.
func readPolicyFile(path string) (netpolicy.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return netpolicy.Config{}, fmt.Errorf("reading policy file: %w", err)
	}
	pf, err := config.ParsePolicy(data)
	if err != nil {
		return pf, fmt.Errorf("policy file %s: %w", path, err)
	}
	return pf, nil
}

